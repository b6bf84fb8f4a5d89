"""Clone from the job page and the API: asked first with what is made in words, then one script, audited."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import AuditEntry
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ
from queues.payload_versions import schema_set
from tests.support.confirm import confirmation_token
from tests.support.jobs import failed_job
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HX-Request": "true"}


def _form(new_id: str, **more: str) -> dict[str, str]:
    return {"q": "mail", "id": "j1", "state": "failed", "attempts": "1", "new_id": new_id, "payload_from": "source",
            "delay_s": "0", "max_attempts": "1", "shown_max_attempts": "1", "cr": "0", **more}


def test_the_job_page_offers_a_clone_form_with_a_fresh_id(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", '{"to": "a@example.com"}')

    page = operator_client.get("/job/?q=mail&id=j1").content.decode()

    assert 'id="job-clone"' in page and 'action="/actions/clone/"' in page
    assert 'name="new_id" value="' in page and "{&quot;to&quot;: &quot;a@example.com&quot;}</textarea>" in page


def test_a_clone_is_asked_first_then_made_once_and_audited(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", b'{"to": "a"}\x00')
    form = _form("j1-again", delay_s="90")
    before = keyspace_dump(console_mq.redis)

    asked = operator_client.post("/actions/clone/", form, headers=HTMX)

    text = asked.content.decode()
    assert "Clone job j1 (failed, attempts 1) of" in text and "Yes, clone it" in text
    assert "New job j1-again is enqueued, due in 1m 30s, with the same payload bytes as job j1" in text
    assert keyspace_dump(console_mq.redis) == before
    # A confirmation is bound to what it showed: another id is asked about again, not made.
    other = operator_client.post("/actions/clone/", {**form, "new_id": "other",
                                                     "confirmation": confirmation_token(text)}, headers=HTMX)
    assert other.status_code == 409 and keyspace_dump(console_mq.redis) == before

    asked = operator_client.post("/actions/clone/", form, headers=HTMX)
    done = operator_client.post("/actions/clone/", {**form, "confirmation": confirmation_token(asked.content.decode())},
                                headers=HTMX)

    assert done.status_code == 200
    answer = done.content.decode()
    assert "cloned: job j1 (failed, attempts 1) as new job j1-again, pending" in answer
    assert 'href="/job/?q=mail&amp;id=j1-again"' in answer
    assert console_mq.payload("mail", "j1-again") == b'{"to": "a"}\x00'
    assert console_mq.job("mail", "j1").state == "failed"
    entry = AuditEntry.objects.get(action="clone", outcome="moved")
    assert entry.parameters == {"new_id": "j1-again", "delay_ms": 90_000, "payload": "the source's"}
    assert "clone a job" in operator_client.get("/audit/").content.decode()


def test_an_edited_payload_the_schema_refuses_is_refused_in_words_with_nothing_written(operator_client: Client,
                                                                                      console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", '{"to": "a"}')
    console_mq.run(schema_set("mail", '{"type": "object", "required": ["to"]}'))
    form = _form("j2", payload_from="edited", payload='{"too": 1}')
    before = keyspace_dump(console_mq.redis)

    asked = operator_client.post("/actions/clone/", form, headers=HTMX)
    assert "with the payload you edited (10 bytes)" in asked.content.decode()
    done = operator_client.post("/actions/clone/", {**form, "confirmation": confirmation_token(asked.content.decode())},
                                headers=HTMX)

    assert "does not match the JSON Schema of mail" in done.content.decode()
    assert "&#x27;to&#x27; is a required property" in done.content.decode()
    assert keyspace_dump(console_mq.redis) == before
    assert AuditEntry.objects.get(action="clone").outcome == "refused"


def test_a_taken_id_is_refused_with_nothing_written(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", "x")
    console_mq.enqueue("mail", "y", job_id="taken", delay_ms=60_000)
    form = _form("taken")
    asked = operator_client.post("/actions/clone/", form, headers=HTMX)
    before = keyspace_dump(console_mq.redis)

    done = operator_client.post("/actions/clone/", {**form, "confirmation": confirmation_token(asked.content.decode())},
                                headers=HTMX)

    assert "the new job id is taken" in done.content.decode()
    assert console_mq.payload("mail", "taken") == b"y"
    assert {k: v for k, v in keyspace_dump(console_mq.redis).items()} == before


def test_viewers_may_not_clone(viewer_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", "x")
    before = keyspace_dump(console_mq.redis)

    answer = viewer_client.post("/actions/clone/", _form("j2"), headers=HTMX)

    assert answer.status_code == 403 and keyspace_dump(console_mq.redis) == before


def test_the_api_clones_with_an_edited_payload_once_confirmed(operator: User, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", "x")
    token = api_token_create(user=operator, name="api")
    client = Client(headers={"Authorization": f"Bearer {token}"})
    body = {"queue": "mail", "id": "j1", "expect_state": "failed", "expect_attempts": 1, "new_id": "j2",
            "payload": '{"fixed": true}', "delay_ms": 0, "max_attempts": 5}

    asked = client.post("/api/job/clone", json.dumps(body), content_type="application/json")

    assert asked.status_code == 428, asked.content
    assert "with the payload you edited (15 bytes) and max attempts 5" in asked.json()["warning"]
    done = client.post("/api/job/clone", json.dumps({**body, "confirmation": asked.json()["confirmation"]}),
                       content_type="application/json")
    assert done.status_code == 200, done.content
    assert done.json()["new_id"] == "j2"
    job = console_mq.job("mail", "j2")
    assert (job.text("max_attempts"), console_mq.payload("mail", "j2")) == ("5", b'{"fixed": true}')
    again = client.post("/api/job/clone", json.dumps(body), content_type="application/json")
    again = client.post("/api/job/clone", json.dumps({**body, "confirmation": again.json()["confirmation"]}),
                        content_type="application/json")
    assert again.status_code == 409 and "the new job id is taken" in again.json()["text"]
