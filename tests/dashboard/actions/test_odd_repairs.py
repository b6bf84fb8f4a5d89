"""Odd data stays repairable from the console: a job without a state, a job key or a state set of another type,
and a job whose id is not UTF-8 are each acted on from their page, confirmed where it deletes, and audited.

Every refusal is proved to change nothing by comparing the DUMP of every key before and after.
"""

from __future__ import annotations

import re

from django.test import Client

from dashboard.actions.models import AuditEntry
from queues import EchoMQ, QueueKeys
from queues.cli import main
from tests.support.confirm import confirmation_token, confirmed_post
from tests.support.htmx import htmx_post
from tests.support.keyspace import keyspace_dump

KEYS = QueueKeys("mail")
BAD_ID = b"bad\xffid"
BAD_TOKEN = "{" + BAD_ID.hex() + "}"


def _no_state_job(mq: EchoMQ, job_id: str = "stateless") -> None:
    mq.redis.hset(KEYS.job(job_id), mapping={"attempts": "2", "payload": "x"})
    mq.redis.zadd(KEYS.pending, {job_id: 1})
    mq.redis.sadd("emq:queues", "mail")


def _button_form(html: str) -> dict[str, str]:
    """The hidden fields of the job page's buttons form (what a press posts)."""
    form = html[html.index('class="job-actions'):]
    form = form[:form.index("</form>")]
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))


def test_a_job_without_a_state_is_deleted_from_its_page_after_a_confirmation(operator_client: Client,
                                                                           console_mq: EchoMQ) -> None:
    _no_state_job(console_mq)

    page = operator_client.get("/job/?q=mail&id=stateless").content.decode()
    fields = _button_form(page)
    asked = htmx_post(operator_client, "/actions/job/", {**fields, "move": "delete"})
    kept = console_mq.redis.exists(KEYS.job("stateless"))
    done = htmx_post(operator_client, "/actions/job/", {**fields, "move": "delete",
                                                        "confirmation": confirmation_token(asked.content.decode())})

    assert fields["state"] == "~absent"
    assert "Delete job stateless (no state, attempts 2)" in asked.content.decode() and kept
    assert "deleted: job stateless is now deleted" in done.content.decode()
    assert not console_mq.redis.exists(KEYS.job("stateless")) and console_mq.redis.zcard(KEYS.pending) == 0
    entry = AuditEntry.objects.get(action="delete")
    assert (entry.outcome, entry.jobs) == ("moved", [{"id": "stateless", "state": "~absent", "attempts": "2"}])


def test_a_delete_against_no_state_is_refused_once_the_job_has_a_state_and_changes_nothing(
        operator_client: Client, console_mq: EchoMQ) -> None:
    _no_state_job(console_mq)
    fields = _button_form(operator_client.get("/job/?q=mail&id=stateless").content.decode())
    asked = htmx_post(operator_client, "/actions/job/", {**fields, "move": "delete"})
    console_mq.redis.hset(KEYS.job("stateless"), "state", "pending")  # another writer repaired it meanwhile
    before = keyspace_dump(console_mq.redis)

    refused = htmx_post(operator_client, "/actions/job/", {**fields, "move": "delete",
                                                           "confirmation": confirmation_token(asked.content.decode())})

    assert "refused" in refused.content.decode() and "pending" in refused.content.decode()
    assert keyspace_dump(console_mq.redis) == before
    assert AuditEntry.objects.get(action="delete").outcome == "refused"


def test_a_job_key_of_another_type_is_deleted_from_its_page_after_a_confirmation(operator_client: Client,
                                                                               console_mq: EchoMQ) -> None:
    console_mq.redis.set(KEYS.job("text"), "not a hash")
    console_mq.redis.zadd(KEYS.failed, {"text": 1})
    console_mq.redis.sadd("emq:queues", "mail")

    fields = _button_form(operator_client.get("/job/?q=mail&id=text").content.decode())
    plain = htmx_post(operator_client, "/actions/job/", {**fields, "move": "delete"})
    done = confirmed_post(operator_client, "/actions/job/", {**fields, "move": "delete"})

    assert fields["state"] == "wrongtype:string"
    assert 'name="confirmation"' in plain.content.decode()  # an odd state asks first, as every delete does
    assert "deleted" in done.content.decode()
    assert not console_mq.redis.exists(KEYS.job("text")) and console_mq.redis.zcard(KEYS.failed) == 0
    assert AuditEntry.objects.filter(action="delete", outcome="moved").count() == 1


def test_a_state_set_of_another_type_is_removed_from_the_queue_page_confirmed_and_audited(
        operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    console_mq.redis.set(KEYS.done, "junk")

    broken = operator_client.get("/queue/?q=mail").content.decode()
    data = {"q": "mail", "set": "done", "type": "string"}
    asked = htmx_post(operator_client, "/actions/remove-key/", data)
    still = console_mq.redis.type(KEYS.done)
    done = htmx_post(operator_client, "/actions/remove-key/",
                     {**data, "confirmation": confirmation_token(asked.content.decode())})

    assert 'id="remove-key"' in broken and "holds a string" in broken
    assert "Remove the done set (it holds a string, not a sorted set)" in asked.content.decode()
    assert still == b"string"
    assert "removed: the done set of mail held a string" in done.content.decode()
    assert not console_mq.redis.exists(KEYS.done)
    assert console_mq.job("mail", "a").state == "pending"
    assert operator_client.get("/queue/?q=mail").context["stats"].counts["pending"] == 1
    entry = AuditEntry.objects.get(action="remove_key")
    assert (entry.queue, entry.outcome, entry.parameters) == ("mail", "moved", {"set": "done", "type": "string"})
    assert "remove a key of another type" in operator_client.get("/audit/").content.decode()
    entries: list[tuple[bytes, dict[bytes, bytes]]] = console_mq.redis.xrange(KEYS.events)  # type: ignore[assignment]
    [event] = [fields for _, fields in entries if fields[b"move"] == b"remove_key"]
    assert (event[b"id"], event[b"from"], event[b"actor"]) == (b"done", b"wrongtype:string", b"console:otto")


def test_removing_a_set_whose_type_changed_since_the_page_is_refused_and_changes_nothing(
        operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.redis.set(KEYS.pending, "junk")
    console_mq.redis.sadd("emq:queues", "mail")
    data = {"q": "mail", "set": "pending", "type": "string"}
    asked = htmx_post(operator_client, "/actions/remove-key/", data)
    console_mq.redis.delete(KEYS.pending)
    console_mq.redis.zadd(KEYS.pending, {"repaired": 1})  # another operator put a sorted set back meanwhile
    before = keyspace_dump(console_mq.redis)

    refused = htmx_post(operator_client, "/actions/remove-key/",
                        {**data, "confirmation": confirmation_token(asked.content.decode())})

    assert "refused: the pending set holds a sorted set again now" in refused.content.decode()
    assert keyspace_dump(console_mq.redis) == before
    assert AuditEntry.objects.get(action="remove_key").outcome == "refused"


def test_a_removal_without_its_confirmation_or_by_a_viewer_changes_nothing(operator_client: Client, viewer_client: Client,
                                                                           console_mq: EchoMQ) -> None:
    console_mq.redis.set(KEYS.active, "junk")
    console_mq.redis.sadd("emq:queues", "mail")
    before = keyspace_dump(console_mq.redis)
    data = {"q": "mail", "set": "active", "type": "string"}

    forged = htmx_post(operator_client, "/actions/remove-key/", {**data, "confirmation": "forged"})
    viewer = htmx_post(viewer_client, "/actions/remove-key/", data)
    unknown = htmx_post(operator_client, "/actions/remove-key/", {**data, "set": "events"})

    assert forged.status_code == 409 and viewer.status_code == 403 and unknown.status_code == 400
    assert keyspace_dump(console_mq.redis) == before


def test_a_job_whose_id_is_not_utf8_is_shown_escaped_and_can_be_retried_and_deleted(operator_client: Client,
                                                                                   console_mq: EchoMQ) -> None:
    prefix = KEYS.prefix.encode()
    console_mq.redis.hset(prefix + b"job:" + BAD_ID, mapping={"state": "failed", "attempts": "3", "payload": "x"})
    console_mq.redis.zadd(KEYS.failed, {BAD_ID: 1})
    console_mq.redis.sadd("emq:queues", "mail")

    rows = operator_client.get("/queue/?q=mail&state=failed").content.decode()
    page = operator_client.get(f"/job/?q=mail&id={BAD_TOKEN}")
    fields = _button_form(page.content.decode())
    retried = htmx_post(operator_client, "/actions/job/", {**fields, "move": "retry"})

    assert "bad\\xffid" in rows and "%7B" + BAD_ID.hex() + "%7D" in rows and "\\\\xff" not in rows
    assert page.status_code == 200 and "bad\\xffid" in page.content.decode()
    assert fields["id"] == BAD_TOKEN
    assert "retried: job bad\\xffid is now pending" in retried.content.decode()
    assert console_mq.redis.hget(prefix + b"job:" + BAD_ID, "state") == b"pending"
    assert AuditEntry.objects.get(action="retry").jobs[0]["id"] == BAD_TOKEN
    assert "bad\\xffid" in operator_client.get("/audit/").content.decode()

    view = console_mq.job("mail", BAD_ID.decode(errors="surrogateescape"))
    deleted = confirmed_post(operator_client, "/actions/job/", {"q": "mail", "id": BAD_TOKEN, "move": "delete",
                                                                "state": view.state, "attempts": view.attempts})

    assert "deleted: job bad\\xffid" in deleted.content.decode()
    assert not console_mq.redis.exists(prefix + b"job:" + BAD_ID) and console_mq.redis.zcard(KEYS.pending) == 0


def test_a_ticked_job_whose_id_is_not_utf8_is_moved_by_the_selection(operator_client: Client,
                                                                    console_mq: EchoMQ) -> None:
    prefix = KEYS.prefix.encode()
    console_mq.redis.hset(prefix + b"job:" + BAD_ID, mapping={"state": "failed", "attempts": "3", "payload": "x"})
    console_mq.redis.zadd(KEYS.failed, {BAD_ID: 1})
    console_mq.redis.sadd("emq:queues", "mail")

    rows = operator_client.get("/queue/?q=mail&state=failed").content.decode()
    [ticked] = re.findall(r'name="job" form="selection-form" id="[^"]+"\s+value="([^"]+)"', rows)

    assert ticked == f"failed:3:{BAD_TOKEN}"


def test_emq_jobs_prints_an_id_that_is_not_utf8_with_one_backslash(console_mq: EchoMQ, redis_url: str,
                                                                  capsys: object) -> None:
    console_mq.redis.hset(KEYS.prefix.encode() + b"job:" + BAD_ID, mapping={"state": "pending", "attempts": "0",
                                                                          "payload": "x"})
    console_mq.redis.zadd(KEYS.pending, {BAD_ID: 1})

    assert main(["--url", redis_url, "jobs", "mail", "pending"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]

    assert out.startswith("bad\\xffid\t"), out


def test_a_payload_with_bidi_characters_is_escaped_and_flagged_in_the_queue_rows(viewer_client: Client,
                                                                                console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", '{"to": "evil\u202egpj.exe"}', job_id="bidi")

    html = viewer_client.get("/queue/?q=mail").content.decode()

    assert "\u202e" not in html
    assert re.search(r'<span class="escaped" title="[^"]+">\{&quot;to&quot;: &quot;evil\\u202egpj.exe', html)
