"""Editing a payload from the job page: the form, the schema's refusal in words, versions, diff and restore."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client

from dashboard.actions.models import AuditEntry
from queues import EchoMQ
from queues.payload_versions import schema_set, versions
from tests.support.jobs import failed_job
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HX-Request": "true"}


def _edit(client: Client, job_id: str, payload: str, *, state: str = "failed", attempts: str = "1",
          retry: str = "0", max_attempts: str = "1", shown_max: str = "1") -> object:
    return client.post("/actions/edit/", {"q": "mail", "id": job_id, "state": state, "attempts": attempts,
                                          "payload": payload, "max_attempts": max_attempts,
                                          "shown_max_attempts": shown_max, "retry": retry}, headers=HTMX)


def test_the_job_page_offers_a_failed_jobs_payload_for_editing(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", '{"to": "a@exmaple.com"}')

    page = operator_client.get("/job/?q=mail&id=j1").content.decode()

    assert 'id="edit-payload"' in page and "{&quot;to&quot;: &quot;a@exmaple.com&quot;}</textarea>" in page
    assert "Save and retry" in page
    assert "No earlier payload is kept" in page


def test_an_active_job_is_not_offered_for_editing(operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a1")
    console_mq.claim("mail")
    page = operator_client.get("/job/?q=mail&id=a1").content.decode()
    assert 'id="edit-payload"' not in page
    assert "its worker may be running it" in page


def test_save_and_retry_edits_moves_audits_and_shows_the_version_and_its_diff(operator_client: Client,
                                                                           console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", '{"to": "a@exmaple.com", "n": 1}')

    answer = _edit(operator_client, "j1", '{"to": "a@example.com", "n": 1}', retry="1")

    assert answer.status_code == 204  # type: ignore[attr-defined]
    target = answer["HX-Redirect"]  # type: ignore[index]
    assert console_mq.job("mail", "j1").state == "pending"
    entry = AuditEntry.objects.get(action="edit")
    assert entry.outcome == "moved" and entry.parameters["kept_version"] == 1
    assert "payload" not in entry.parameters and entry.parameters["payload_bytes"] == 31
    assert parse_qs(urlparse(target).query)["done"] == [str(entry.pk)]
    page = operator_client.get(target).content.decode()
    assert "edited: job j1 is now pending (attempts 1); the payload it replaced is kept as version 1" in page
    assert 'id="version-1"' in page
    assert 'class="diff-line del"><span class="diff-mark" aria-hidden="true">−</span>  &quot;to&quot;: ' \
           '&quot;a@exmaple.com&quot;,' in page
    assert 'class="diff-line add"><span class="diff-mark" aria-hidden="true">+</span>  &quot;to&quot;: ' \
           '&quot;a@example.com&quot;,' in page


def test_a_payload_that_breaks_the_queues_schema_is_refused_in_words_with_nothing_written(
        operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", '{"to": "a@example.com"}')
    console_mq.run(schema_set("mail", '{"type": "object", "required": ["to"], "properties": {"to": {"type": "string"}}}'))
    before = keyspace_dump(console_mq.redis)

    answer = _edit(operator_client, "j1", '{"to": 5}')

    assert answer.status_code == 200  # type: ignore[attr-defined]
    text = answer.content.decode()  # type: ignore[attr-defined]
    assert "does not match the JSON Schema of mail" in text and "to: 5 is not of type &#x27;string&#x27;" in text
    assert keyspace_dump(console_mq.redis) == before
    assert AuditEntry.objects.get(action="edit").outcome == "refused"


def test_an_edit_of_a_job_that_moved_on_is_refused(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", "x")
    console_mq.retry("mail", "j1")
    before = keyspace_dump(console_mq.redis)
    answer = _edit(operator_client, "j1", "y")
    assert "refused: it has moved on" in answer.content.decode() or "refused" in answer.content.decode()  # type: ignore[attr-defined]
    assert keyspace_dump(console_mq.redis) == before


def test_restore_from_the_page_returns_the_exact_bytes(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", "line one\r\nline two")
    _edit(operator_client, "j1", "replaced")

    answer = operator_client.post("/actions/restore/", {"q": "mail", "id": "j1", "state": "failed", "attempts": "1",
                                                        "version": "1"}, headers=HTMX)

    assert answer.status_code == 204
    assert console_mq.payload("mail", "j1") == b"line one\r\nline two"
    assert [v.seq for v in console_mq.run(versions("mail", "j1")).versions] == [1, 2]
    assert AuditEntry.objects.get(action="restore").result.startswith("restored version 1: job j1")
    download = operator_client.get("/job/version/?q=mail&id=j1&v=2")
    assert download.content == b"replaced" and download["Content-Type"] == "application/octet-stream"


def test_a_textarea_sends_crlf_and_a_payload_without_cr_keeps_its_lf(operator_client: Client,
                                                                     console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", "a\nb")
    operator_client.post("/actions/edit/", {"q": "mail", "id": "j1", "state": "failed", "attempts": "1",
                                            "payload": "a\r\nc", "cr": "0", "retry": "0"}, headers=HTMX)
    assert console_mq.payload("mail", "j1") == b"a\nc"


def test_viewers_may_not_edit_restore_or_set_a_schema(viewer_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "j1", "x")
    before = keyspace_dump(console_mq.redis)
    assert _edit(viewer_client, "j1", "y").status_code == 403  # type: ignore[attr-defined]
    assert viewer_client.post("/actions/restore/", {"q": "mail", "id": "j1", "state": "failed", "attempts": "1",
                                                    "version": "1"}).status_code == 403
    assert viewer_client.post("/actions/schema/", {"q": "mail", "schema": "{}"}).status_code == 403
    assert keyspace_dump(console_mq.redis) == before


def test_an_operator_sets_a_schema_audited_and_a_bad_one_is_refused_in_words(operator_client: Client,
                                                                              console_mq: EchoMQ) -> None:
    bad = operator_client.post("/actions/schema/", {"q": "mail", "schema": '{"type": 12}'}, headers=HTMX)
    assert bad.status_code == 400 and "not a valid JSON Schema" in bad.content.decode()

    good = operator_client.post("/actions/schema/", {"q": "mail", "schema": '{"type": "object"}'}, headers=HTMX)

    assert good.status_code == 200 and "set the JSON Schema of mail" in good.content.decode()
    entry = AuditEntry.objects.get(action="schema_set")
    assert entry.outcome == "moved" and entry.parameters["schema_bytes"] == 18
    page = operator_client.get("/schema/?q=mail").content.decode()
    assert "Set by <span class=\"mono\">console:otto</span>" in page
    assert "set a payload schema" in operator_client.get("/audit/").content.decode()
