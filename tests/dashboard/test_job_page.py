from __future__ import annotations

import json

from django.test import Client

from queues import EchoMQ, QueueKeys
from queues.foreign import write_foreign_job
from tests.support.htmx import htmx_get


def test_it_shows_core_and_optional_fields_and_the_fencing_token(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", '{"to": "a@example.com"}', job_id="j1")
    claimed = console_mq.claim("mail", lease_ms=60_000)[0]

    response = viewer_client.get("/job/?q=mail&id=j1")

    assert response.status_code == 200
    detail = response.context["detail"]
    assert [(f.name, f.text) for f in detail.core] == [("state", "active"), ("attempts", "1")]
    assert {"max_attempts", "created_at", "claimed_at", "claim_id", "worker"} <= {f.name for f in detail.optional}
    assert f'data-deadline="{claimed.lease_deadline_ms}"'.encode() in response.content
    assert b"Attempts (fencing token)" in response.content


def test_a_json_payload_is_pretty_printed(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", '{"to":"a@example.com","n":[1,2]}', job_id="j1")

    response = viewer_client.get("/job/?q=mail&id=j1")

    assert response.context["detail"].payload[0] == "json"
    assert json.dumps({"to": "a@example.com", "n": [1, 2]}, indent=2).replace('"', "&quot;").encode() in response.content


def test_a_large_payload_is_cut_with_a_way_to_see_all(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x" * 40_000, job_id="big")

    cut = viewer_client.get("/job/?q=mail&id=big")
    whole = viewer_client.get("/job/?q=mail&id=big&full=1")
    download = viewer_client.get("/job/payload/?q=mail&id=big")

    assert cut.context["detail"].payload[2] is True and b"Show all" in cut.content
    assert whole.context["detail"].payload[2] is False
    assert download["Content-Type"] == "application/octet-stream"
    assert download.content == b"x" * 40_000


def test_the_history_lists_each_move_with_actor_and_attempts(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    claimed = console_mq.claim("mail")[0]
    console_mq.complete("mail", "j1", claimed.token)

    history = viewer_client.get("/job/?q=mail&id=j1").context["detail"].history

    assert [(e.move, e.source, e.target, e.attempts) for e in history] == [
        ("enqueue", "", "pending", "0"), ("claim", "pending", "active", "1"), ("complete", "active", "done", "1")]
    assert all(e.actor == "test" for e in history)


def test_a_three_field_job_with_odd_values_is_shown_with_warnings(viewer_client: Client, console_mq: EchoMQ) -> None:
    write_foreign_job(console_mq, "legacy", "odd", state="limbo", attempts="two", payload=b"\x00\x01\xff")

    response = viewer_client.get("/job/?q=legacy&id=odd")

    assert response.status_code == 200
    html = response.content.decode()
    assert "unknown state &#x27;limbo&#x27;" in html
    assert "attempts is not a number" in html
    assert "00 01 ff" in html


def test_a_missing_job_is_a_404_page_not_an_error(viewer_client: Client, console_mq: EchoMQ) -> None:
    response = viewer_client.get("/job/?q=mail&id=nope")

    assert response.status_code == 404
    assert b"not found" in response.content


def test_the_core_is_an_htmx_fragment_on_request(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")

    response = htmx_get(viewer_client, "/job/?q=mail&id=j1", "job-core")

    assert response.content.decode().startswith('<section id="job-core"')  # type: ignore[attr-defined]


def test_a_script_payload_is_inert(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "<script>alert(1)</script>", job_id="<b>x</b>")

    html = viewer_client.get("/job/?q=mail&id=%3Cb%3Ex%3C/b%3E").content.decode()

    assert "<script>alert(1)" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_payload_too_large_to_inline_shows_its_preview_and_downloads_whole(viewer_client: Client,
                                                                             console_mq: EchoMQ) -> None:
    payload = b"y" * (2 * 1024 * 1024)  # another runtime's writer, over the console's 1 MiB "show all"
    keys = QueueKeys("mail")
    console_mq.redis.hset(keys.job("huge"), mapping={"state": "pending", "attempts": "0", "payload": payload,
                                                     "preview": "y" * 256})
    console_mq.redis.zadd(keys.pending, {"huge": 0})

    page = viewer_client.get("/job/?q=mail&id=huge&full=1")
    download = viewer_client.get("/job/payload/?q=mail&id=huge")

    detail = page.context["detail"]
    assert (detail.payload_length, detail.payload[1], detail.payload[2]) == (len(payload), "y" * 256, True)
    assert b"Showing its first 256 bytes (its preview)" in page.content
    assert download.content == payload


def test_the_history_shows_why_each_attempt_failed(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a", job_id="j1", max_attempts=2)
    for error in ("smtp timeout", "mailbox full"):
        claimed = console_mq.claim("mail")[0]
        console_mq.fail("mail", "j1", claimed.token, error=error, backoff_ms=0)

    response = viewer_client.get("/job/?q=mail&id=j1")

    assert [e.error for e in response.context["detail"].history if e.move == "fail"] == ["smtp timeout", "mailbox full"]
    assert b"mailbox full" in response.content


def test_a_payload_with_bidi_or_invisible_characters_shows_them_escaped_and_flagged(viewer_client: Client,
                                                                                   console_mq: EchoMQ) -> None:
    job_id = console_mq.enqueue("mail", '{"to": "evil\u202egpj.exe", "zw": "a\u200bb"}')

    html = viewer_client.get(f"/job/?q=mail&id={job_id}").content.decode()

    assert "\u202e" not in html and "\u200b" not in html
    assert r"evil\u202egpj.exe" in html and r"a\u200bb" in html
    assert 'id="payload-escaped"' in html
    assert '{\n  &quot;to&quot;' in html  # its own line breaks stay its layout
