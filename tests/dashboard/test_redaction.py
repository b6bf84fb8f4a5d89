"""Masked payload values: a viewer never receives one, through any page, fragment, push, answer, search or CLI read;
an operator does, unless the queue masks them for everyone; setting the paths is confirmed, audited, operators'."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import AuditEntry, QueueGrant
from dashboard.orders.tokens import api_token_create
from dashboard.saved_views.services import view_save
from queues import EchoMQ, QueueKeys, moves
from queues.console_api import ConsoleAPI
from queues.redaction import MASK, config, config_set
from tests.support.confirm import confirmation_token, confirmed_post
from tests.support.htmx import htmx_get
from tests.support.jobs import failed_job
from tests.support.keyspace import keyspace_dump
from tests.support.sockets import connect, messages_until, receive_until, ws_path

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "s3cr3t-PLANTED-42"
CARD = "4111-PLANTED-0099"
# What would give either away: each whole, and the start a preview cut inside it would show.
PLANTED = (SECRET, CARD, SECRET[:8], CARD[:8])


def _payload(**extra: object) -> str:
    return json.dumps({"to": "ann@example.com", "password": SECRET, "card": {"number": CARD, "exp": "12/29"},
                       **extra})


def _hidden(body: bytes | str, where: str) -> None:
    text = body if isinstance(body, str) else body.decode(errors="replace")
    for planted in PLANTED:
        assert planted not in text, f"{planted!r} reached the viewer through {where}"


@pytest.fixture
def planted(console_mq: EchoMQ) -> Iterator[EchoMQ]:
    """mail masks card.number (and the default names): a failed job edited once (its old payload kept as a version),
    a pending one, one whose preview is cut inside the secret, one too long to be read whole (its preview field)."""
    mq = console_mq
    mq.run(config_set("mail", "card.number", mask_all=False, actor="op"))
    failed_job(mq, "mail", "f1", _payload(), error="boom")
    mq.run(moves.operator_move("edit", "mail", "f1", expect_state="failed", expect_attempts=1, actor="op",
                               arguments={"payload": _payload(note="edited"), "max_attempts": "", "retry": False}))
    mq.enqueue("mail", _payload(), job_id="p1")
    mq.enqueue("mail", json.dumps({"pad": "x" * 96, "token": SECRET, "more": "y" * 300}), job_id="p2")
    mq.enqueue("mail", json.dumps({"password": SECRET, "card": {"number": CARD}, "blob": "z" * 70_000}), job_id="p3")
    yield mq


def _viewer_token(viewer: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_token_create(user=viewer, name='viewer-read', scope='read')}"}


PAGES = ("/queue/?q=mail&state=pending", "/queue/?q=mail&state=failed", "/job/?q=mail&id=f1", "/job/?q=mail&id=f1&v=1",
         "/job/?q=mail&id=p1&full=1", "/job/?q=mail&id=p2", "/job/?q=mail&id=p3", "/job/?q=mail&id=p3&full=1",
         "/job/payload/?q=mail&id=p1", "/job/payload/?q=mail&id=p3", "/job/version/?q=mail&id=f1&v=1",
         "/failures/?q=mail", "/search/?q=mail&state=failed&payload=ann", "/schema/?q=mail")
FRAGMENTS = (("/queue/?q=mail&state=pending", "queue-jobs"), ("/job/?q=mail&id=f1", "job-core"))
API = ("/api/queue/jobs?q=mail&state=pending", "/api/queue/jobs?q=mail&state=failed", "/api/job?q=mail&id=f1",
       "/api/job?q=mail&id=p2", "/api/job?q=mail&id=p3", "/api/failures?q=mail", "/api/queues/mail/redaction")


def test_a_viewer_receives_no_masked_value_from_any_page_fragment_download_or_api_answer(
        planted: EchoMQ, viewer_client: Client, viewer: User) -> None:
    for url in PAGES:
        response = viewer_client.get(url)
        assert response.status_code == 200, url
        _hidden(response.content, url)
    for url, target in FRAGMENTS:
        fragment = htmx_get(viewer_client, url, target)
        assert fragment.status_code == 200
        _hidden(fragment.content, f"the fragment {target}")
    headers = _viewer_token(viewer)
    for url in API:
        answer = Client().get(url, headers=headers)
        assert answer.status_code == 200, url
        _hidden(answer.content, url)
    job_page = viewer_client.get("/job/?q=mail&id=p1").content.decode()
    assert MASK in job_page and 'id="payload-masked"' in job_page
    assert json.loads(viewer_client.get("/job/payload/?q=mail&id=p1").content)["card"] == {"number": MASK,
                                                                                        "exp": "12/29"}


def test_failure_groups_name_no_masked_field_value_to_a_viewer(console_mq: EchoMQ, viewer_client: Client,
                                                               operator_client: Client, viewer: User) -> None:
    for n in range(4):
        failed_job(console_mq, "billing", f"f{n}", json.dumps({"tenant": "acme", "password": SECRET}), error="boom")
    console_mq.enqueue_many("billing", [json.dumps({"tenant": "other", "password": "other"})] * 4)

    shown = viewer_client.get("/failures/?q=billing").content.decode()
    answer = Client().get("/api/failures?q=billing", headers=_viewer_token(viewer)).content.decode()

    assert "tenant" in shown and "acme" in shown
    _hidden(shown, "the failures page")
    _hidden(answer, "the failures API")
    assert SECRET in operator_client.get("/failures/?q=billing").content.decode()


def test_an_operator_sees_masked_values_unless_the_queue_masks_them_for_everyone(
        planted: EchoMQ, operator_client: Client, operator: User) -> None:
    token = {"Authorization": f"Bearer {api_token_create(user=operator, name='ops', scope='act')}"}
    job_page = operator_client.get("/job/?q=mail&id=p1").content.decode()
    assert SECRET in job_page and 'id="payload-masked"' not in job_page
    assert CARD.encode() in operator_client.get("/job/payload/?q=mail&id=p1").content
    assert SECRET in Client().get("/api/job?q=mail&id=p1", headers=token).content.decode()

    planted.run(config_set("mail", "card.number", mask_all=True, actor="op"))

    for url in PAGES:
        _hidden(operator_client.get(url).content, f"{url} (masked for everyone)")
    _hidden(Client().get("/api/job?q=mail&id=p1", headers=token).content, "the API (masked for everyone)")


def test_an_operator_whose_grants_leave_the_queue_out_sees_its_values_masked(planted: EchoMQ, operator: User,
                                                                              operator_client: Client) -> None:
    QueueGrant.objects.create(user=operator, pattern="billing-*")

    _hidden(operator_client.get("/job/?q=mail&id=p1").content, "the job page of an operator without a grant")


def test_a_read_only_token_of_an_operator_reads_masked_values_as_a_viewer_does(planted: EchoMQ,
                                                                                operator: User) -> None:
    token = {"Authorization": f"Bearer {api_token_create(user=operator, name='dash', scope='read')}"}

    _hidden(Client().get("/api/job?q=mail&id=p1", headers=token).content, "an operator's read-only token")


def test_an_edit_or_clone_form_never_holds_masked_marks(planted: EchoMQ, operator_client: Client) -> None:
    planted.run(config_set("mail", "card.number", mask_all=True, actor="op"))

    page = operator_client.get("/job/?q=mail&id=f1").content.decode()

    assert "masked values are not shown to you, so it is not edited here" in page
    # Nor is a clone made from the masked text: only from the source's bytes.
    assert 'id="clone-why-not"' in page and 'id="clone-payload"' not in page
    assert not [text for text in re.findall(r"<textarea[^>]*>([^<]*)</textarea>", page) if MASK in text]


async def test_live_pushes_of_the_job_and_queue_pages_hold_no_masked_value(planted: EchoMQ, viewer_cookie: bytes,
                                                                          stop_followers: None) -> None:
    for path, marker in (("/ws/queue/?q=mail&state=pending", 'id="queue-jobs"'),
                         ("/ws/queue/?q=mail&state=failed", 'id="queue-jobs"'),
                         ("/ws/job/?q=mail&id=p2", 'id="job-core"'), ("/ws/job/?q=mail&id=p3", 'id="job-core"'),
                         ("/ws/job/?q=mail&id=f1", 'id="job-core"')):
        communicator = await connect(path, viewer_cookie)
        message = await receive_until(communicator, lambda m, marker=marker: marker in m)  # type: ignore[misc]
        _hidden(message, path)
        if path.startswith("/ws/job/?q=mail&id=f1"):
            # A push after a change too.
            await sync_to_async(planted.run)(moves.operator_move("retry", "mail", "f1", expect_state="failed",
                                                                 expect_attempts=1, actor="op"))
            pushed = await receive_until(communicator, lambda m: "badge big pending" in m)
            _hidden(pushed, "the job page's push after a retry")
        await communicator.disconnect()


async def test_search_results_show_masked_payloads_and_refuse_a_masked_field(planted: EchoMQ, viewer_client: Client,
                                                                            viewer_cookie: bytes) -> None:
    path = await sync_to_async(ws_path)(viewer_client, "/search/?q=mail&state=pending&payload=ann")
    communicator = await connect(path, viewer_cookie)
    seen = "".join(await messages_until(communicator, lambda m: "Finished:" in m))
    assert 'id=p1"' in seen and MASK in seen
    _hidden(seen, "a search's results")
    await communicator.disconnect()

    path = await sync_to_async(ws_path)(viewer_client, "/search/?q=mail&state=pending&field=card.number%3D1")
    communicator = await connect(path, viewer_cookie)
    refused = "".join(await messages_until(communicator, lambda m: "masked for you" in m))
    assert "card.number=1 is masked for you" in refused
    await communicator.disconnect()


async def _found(client: Client, cookie: bytes, url: str) -> list[str]:
    path = await sync_to_async(ws_path)(client, url)
    communicator = await connect(path, cookie)
    seen = "".join(await messages_until(communicator, lambda m: "Finished:" in m))
    await communicator.disconnect()
    return sorted(re.findall(r'href="/job/\?q=mail&amp;id=(\w+)"', seen))


async def test_a_text_found_only_inside_masked_values_finds_nothing_for_a_viewer(
        planted: EchoMQ, viewer_client: Client, viewer_cookie: bytes, operator_client: Client,
        operator_cookie: bytes) -> None:
    # Found outside the masked values, but past the head a match comes with: read whole to tell.
    await sync_to_async(planted.enqueue)("mail", json.dumps({"password": SECRET, "pad": "q" * 500,
                                                             "note": "PLANTED-in-the-open"}), job_id="p4")

    assert await _found(viewer_client, viewer_cookie, "/search/?q=mail&state=pending&payload=PLANTED") == ["p4"]
    assert await _found(viewer_client, viewer_cookie, "/search/?q=mail&state=pending&payload=ann%40example") == ["p1"]
    assert await _found(operator_client, operator_cookie,
                        "/search/?q=mail&state=pending&payload=PLANTED") == ["p1", "p2", "p3", "p4"]


def test_a_saved_search_finds_no_job_by_a_masked_value_for_a_viewer(planted: EchoMQ, viewer: User,
                                                                      operator: User) -> None:
    by_text = view_save(user=viewer, name="by text", kind="search", data={"q": "mail", "state": "pending",
                                                                         "payload": "PLANTED"})
    by_field = view_save(user=viewer, name="by field", kind="search", data={"q": "mail", "state": "pending",
                                                                           "field": f'password="{SECRET}"'})
    theirs = view_save(user=operator, name="by text", kind="search", data={"q": "mail", "state": "pending",
                                                                           "payload": "PLANTED"})
    act = {"Authorization": f"Bearer {api_token_create(user=operator, name='ops', scope='act')}"}

    texts = Client().get(f"/api/views/{by_text.pk}/jobs", headers=_viewer_token(viewer)).json()
    fields = Client().get(f"/api/views/{by_field.pk}/jobs", headers=_viewer_token(viewer)).json()
    found = Client().get(f"/api/views/{theirs.pk}/jobs", headers=act).json()

    assert texts["ids"] == [] and fields["ids"] == [] and "masked for you" in fields["summary"]
    assert sorted(job["id"] for job in found["ids"]) == ["p1", "p2", "p3"]


def test_the_cli_reads_masked_values_with_a_viewers_token(planted: EchoMQ, live_server: object,
                                                         viewer: User) -> None:
    api = ConsoleAPI(str(live_server.url), api_token_create(user=viewer, name="cli", scope="read"))  # type: ignore[attr-defined]

    for answer in (api.job("mail", "f1"), api.job("mail", "p2"), api.jobs("mail", "pending"), api.jobs("mail", "failed")):
        _hidden(json.dumps(answer, ensure_ascii=False), "emq through the console API")


def test_setting_the_paths_is_confirmed_then_audited_and_a_viewer_may_not(planted: EchoMQ, viewer_client: Client,
                                                                         operator_client: Client) -> None:
    form = {"q": "mail", "paths": "card.number\n$..ssn", "mask_all": "1"}
    before = keyspace_dump(planted.redis)

    refused = viewer_client.post("/actions/redaction/", form, headers={"HX-Request": "true"})
    asked = operator_client.post("/actions/redaction/", form, headers={"HX-Request": "true"})

    assert refused.status_code == 403
    assert "Mask payload values of" in asked.content.decode() and confirmation_token(asked.content.decode())
    assert keyspace_dump(planted.redis) == before

    done = confirmed_post(operator_client, "/actions/redaction/", form)

    assert done.status_code == 200
    found = planted.run(config("mail"))
    assert [p.text for p in found.paths] == ["card.number", "$..ssn"] and found.mask_all and found.set_by == "console:otto"
    entry = AuditEntry.objects.get(action=AuditEntry.Action.REDACTION_SET)
    assert entry.username == "otto" and entry.outcome == AuditEntry.Outcome.MOVED
    assert entry.parameters == {"paths": ["card.number", "$..ssn"], "mask_all": True}


def test_the_api_asks_first_then_sets_the_paths_and_refuses_a_viewer(planted: EchoMQ, viewer: User,
                                                                      operator: User) -> None:
    body = {"paths": ["user.ssn"], "mask_all": False}
    act = {"Authorization": f"Bearer {api_token_create(user=operator, name='ops', scope='act')}"}

    refused = Client().put("/api/queues/mail/redaction", body, content_type="application/json",
                           headers=_viewer_token(viewer))
    asked = Client().put("/api/queues/mail/redaction", body, content_type="application/json", headers=act)
    done = Client().put("/api/queues/mail/redaction", {**body, "confirmation": asked.json()["confirmation"]},
                        content_type="application/json", headers=act)

    assert refused.status_code == 403 and asked.status_code == 428 and done.status_code == 200
    assert Client().get("/api/queues/mail/redaction", headers=act).json()["paths"] == ["user.ssn"]
    assert planted.redis.hget(QueueKeys("mail").redaction, "set_by") is not None
