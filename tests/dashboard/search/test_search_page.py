"""The search page checks the query and hands the search to its socket, which streams the matches and can be stopped."""

from __future__ import annotations

import json
import re
import time
from html import unescape
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.search import consumers
from queues import EchoMQ, moves
from tests.support.htmx import htmx_get
from tests.support.inline_code import inline_code
from tests.support.jobs import failed_job
from tests.support.sockets import connect, messages_until, ws_path

pytestmark = pytest.mark.django_db(transaction=True)



def test_the_page_offers_the_form_and_searches_nothing_until_asked(viewer_client: Client, console_mq: EchoMQ) -> None:
    response = viewer_client.get("/search/")

    assert response.status_code == 200
    assert b'name="payload"' in response.content and b"ws-connect" not in response.content


def test_a_bad_filter_answers_400_with_the_reason_and_opens_no_socket(viewer_client: Client,
                                                                      console_mq: EchoMQ) -> None:
    page = viewer_client.get("/search/?q=mail&state=failed&field=user..id%3D1")
    fragment = htmx_get(viewer_client, "/search/?q=mail&state=failed&payload=/a.*b/", "search-results")

    assert page.status_code == 400 and b"cannot read field path" in page.content
    assert fragment.status_code == 400 and b"regular expression" in fragment.content  # type: ignore[attr-defined]
    assert b"ws-connect" not in page.content + fragment.content  # type: ignore[attr-defined]


def test_an_htmx_search_answers_the_results_region_only(viewer_client: Client, console_mq: EchoMQ) -> None:
    response = htmx_get(viewer_client, "/search/?q=mail&state=failed&error=timeout", "search-results")

    html = response.content.decode()  # type: ignore[attr-defined]
    assert html.lstrip().startswith('<div id="search-results"') and "<html" not in html
    assert "ws-connect=\"/ws/search/?" in html and "error contains &#x27;timeout&#x27;" in html


def test_an_age_is_resolved_into_a_server_time_before_the_socket_sees_it(viewer_client: Client,
                                                                         console_mq: EchoMQ) -> None:
    now = console_mq.server_time_ms("mail")

    path = ws_path(viewer_client, "/search/?q=mail&state=failed&finished_after=1h")

    finished_after = int(re.search(r"finished_after=(\d+)", path).group(1))  # type: ignore[union-attr]
    assert abs(finished_after - (now - 3_600_000)) < 60_000


def test_the_queue_page_and_the_search_page_hold_no_inline_code(viewer_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a", "{}", error="boom")
    for url in ("/queue/?q=mail&state=failed", "/search/", "/search/?q=mail&state=failed&error=boom",
                "/search/?state=failed&payload=x&in=ma"):
        response = viewer_client.get(url)
        assert response.status_code == 200, url
        assert inline_code(response.content.decode()) == [], url
    assert b'class="panel queue-search"' in viewer_client.get("/queue/?q=mail&state=failed").content


async def test_the_socket_streams_the_matches_then_says_it_finished(viewer_client: Client, console_mq: EchoMQ,
                                                                    viewer_cookie: bytes) -> None:
    failed_job(console_mq, "mail", "t1", '{"user": {"id": 42}}', error="Timeout after 3012 ms")
    failed_job(console_mq, "mail", "t2", '{"user": {"id": 7}}', error="timeout after 2999 ms")
    failed_job(console_mq, "mail", "c1", '{"user": {"id": 42}}', error="card declined")
    path = await sync_to_async(ws_path)(viewer_client, "/search/?q=mail&state=failed&error=timeout&field=user.id%3D42")
    communicator = await connect(path, viewer_cookie)

    seen = await messages_until(communicator, lambda m: "Finished:" in m)

    streamed = "".join(seen)
    assert re.findall(r'href="/job/\?q=mail&amp;id=(\w+)"', streamed) == ["t1"]
    assert "1 matched of 3 failed jobs of mail looked at" in streamed
    assert all(len(m.encode()) < 64 * 1024 for m in seen)
    act = await communicator.receive_from(timeout=5)
    assert "search-act-" in act and "<form" not in act  # a viewer is offered no action
    assert (await communicator.receive_output(timeout=5))["type"] == "websocket.close"



async def test_an_operator_is_offered_the_moves_of_the_state_with_the_count(operator_client: Client,
                                                                            console_mq: EchoMQ,
                                                                            operator_cookie: bytes) -> None:
    failed_job(console_mq, "mail", "t1", "{}", error="timeout")
    failed_job(console_mq, "mail", "t2", "{}", error="timeout")
    path = await sync_to_async(ws_path)(operator_client, "/search/?q=mail&state=failed&error=timeout")
    communicator = await connect(path, operator_cookie)
    await messages_until(communicator, lambda m: "Finished:" in m)

    act = await communicator.receive_from(timeout=5)

    assert re.findall(r'name="move" value="(\w+)"', act) == ["retry", "delete"]
    assert ">Retry 2</button>" in act and 'name="counted"' in act


async def test_hostile_data_is_streamed_escaped(viewer_client: Client, console_mq: EchoMQ,
                                                viewer_cookie: bytes) -> None:
    failed_job(console_mq, "mail", "x<b>", '<script>alert(1)</script> hit', error="<img src=x onerror=alert(2)>")
    console_mq.enqueue("mail", b"\xff\xfe hit \x00", job_id="binary")
    path = await sync_to_async(ws_path)(viewer_client, "/search/?q=mail&state=failed&payload=hit")
    communicator = await connect(path, viewer_cookie)

    streamed = "".join(await messages_until(communicator, lambda m: "Finished:" in m))

    assert "<script>" not in streamed and "<img" not in streamed and "x<b>" not in streamed
    assert "&lt;script&gt;" in streamed and "x&lt;b&gt;" in streamed
    await communicator.disconnect()


async def test_many_matches_arrive_in_messages_under_64_kib(viewer_client: Client, console_mq: EchoMQ,
                                                           viewer_cookie: bytes) -> None:
    console_mq.enqueue_many("mail", [json.dumps({"note": "hit " + "<&>" * 40})] * 600)
    path = await sync_to_async(ws_path)(viewer_client, "/search/?q=mail&state=pending&payload=hit")
    communicator = await connect(path, viewer_cookie)

    seen = await messages_until(communicator, lambda m: "Finished:" in m)

    items = sum(m.count('<li class="search-match') for m in seen)
    assert items == consumers.SHOWN and "600 matched" in seen[-1] and "the first 500 are listed" in seen[-1]
    assert max(len(m.encode()) for m in seen) < 64 * 1024
    await communicator.disconnect()


async def test_stop_ends_the_search_between_two_steps(viewer_client: Client, console_mq: EchoMQ,
                                                      viewer_cookie: bytes, settings: SettingsWrapper) -> None:
    console_mq.enqueue_many("mail", ["{}"] * 3000)
    # One entry per step, so the search is still running when the stop arrives.
    settings.EMQ_SEARCH_STEP_ENTRIES = 1
    communicator = await connect(await sync_to_async(ws_path)(viewer_client, "/search/?q=mail&state=pending&payload=nothing"),
                                 viewer_cookie)
    await messages_until(communicator, lambda m: "Searching…" in m)

    await communicator.send_to(text_data=json.dumps({"action": "cancel"}))

    seen = await messages_until(communicator, lambda m: "Stopped:" in m)
    assert "stopped by you" in seen[-1]
    looked = int(re.search(r"0 matched of (\d+) pending", seen[-1]).group(1))  # type: ignore[union-attr]
    assert looked < 3000


async def test_a_search_of_every_queue_names_the_queue_of_each_match(viewer_client: Client, console_mq: EchoMQ,
                                                                     viewer_cookie: bytes) -> None:
    failed_job(console_mq, "mail", "m1", "{}", error="quota exceeded")
    failed_job(console_mq, "sms", "s1", "{}", error="quota exceeded")
    failed_job(console_mq, "other", "x1", "{}", error="quota exceeded")
    path = await sync_to_async(ws_path)(viewer_client, "/search/?state=failed&error=quota&in=m")
    communicator = await connect(path, viewer_cookie)

    streamed = "".join(await messages_until(communicator, lambda m: "Finished:" in m))

    assert sorted(re.findall(r'href="/job/\?q=(\w+)&amp;id=(\w+)"', streamed)) == [("mail", "m1"), ("sms", "s1")]
    assert '<span class="mono queue">sms</span>' in streamed
    await communicator.disconnect()


async def test_an_anonymous_or_malformed_search_socket_is_closed(console_mq: EchoMQ, viewer_cookie: bytes) -> None:
    anonymous = await connect("/ws/search/?q=mail&state=failed&error=x&run=0123456789ab", None)
    malformed = await connect("/ws/search/?q=mail&state=failed&field=a..b%3D1&run=0123456789ab", viewer_cookie)
    no_token = await connect("/ws/search/?q=mail&state=failed&error=x", viewer_cookie)

    assert await anonymous.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}
    assert await malformed.receive_output(timeout=5) == {"type": "websocket.close", "code": 4400}
    assert await no_token.receive_output(timeout=5) == {"type": "websocket.close", "code": 4400}


async def test_a_search_of_many_queues_offers_each_queue_its_own_moves_with_its_count(operator_client: Client,
                                                                                    console_mq: EchoMQ,
                                                                                    operator_cookie: bytes) -> None:
    for n in range(3):
        failed_job(console_mq, "mail", f"m{n}", "{}", error="quota exceeded")
    failed_job(console_mq, "sms", "s0", "{}", error="quota exceeded")
    failed_job(console_mq, "other", "x0", "{}", error="card declined")
    path = await sync_to_async(ws_path)(operator_client, "/search/?state=failed&error=quota")
    communicator = await connect(path, operator_cookie)
    await messages_until(communicator, lambda m: "Finished:" in m)

    act = await communicator.receive_from(timeout=5)

    forms = re.findall(r'<form class="search-act-form".*?</form>', act, flags=re.S)
    assert [re.search(r'name="q" value="(\w+)"', f).group(1) for f in forms] == ["mail", "sms"]  # type: ignore[union-attr]
    assert ">Retry 3</button>" in forms[0] and ">Retry 1</button>" in forms[1]
    assert all('name="in"' not in f for f in forms)
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', forms[0]))
    asked = await sync_to_async(operator_client.post)("/actions/search/", {**fields, "move": "retry"},
                                                      headers={"HX-Request": "true"})
    assert "Retry the 3 jobs the search found: failed jobs whose error contains" in asked.content.decode()


async def test_a_search_of_many_queues_offers_every_match_at_once_with_each_queues_count(
        operator_client: Client, console_mq: EchoMQ, operator_cookie: bytes) -> None:
    for n in range(3):
        failed_job(console_mq, "mail", f"m{n}", "{}", error="quota exceeded")
    failed_job(console_mq, "sms", "s0", "{}", error="quota exceeded")
    failed_job(console_mq, "other", "x0", "{}", error="card declined")
    communicator = await connect(await sync_to_async(ws_path)(operator_client, "/search/?state=failed&error=quota"),
                                 operator_cookie)
    await messages_until(communicator, lambda m: "Finished:" in m)

    act = await communicator.receive_from(timeout=5)

    [form] = re.findall(r'<form class="search-act-form search-act-all".*?</form>', act, flags=re.S)
    assert "All 4 matches in 2 queues:" in form and ">Retry 4</button>" in form and ">Delete 4</button>" in form
    fields = {name: unescape(value) for name, value in
              re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form)}
    assert "q" not in fields and json.loads(fields["counts"]) == {"mail": 3, "sms": 1}
    asked = await sync_to_async(operator_client.post)("/actions/search/", {**fields, "move": "retry"},
                                                      headers={"HX-Request": "true"})
    html = asked.content.decode()
    assert "Retry the 4 jobs the search found: failed jobs whose error contains &#x27;quota&#x27;, in" in html
    assert "2 queues (mail 3, sms 1)?" in html


async def test_a_search_of_many_offers_no_all_at_once_form_to_an_operator_kept_from_one_of_its_queues(
        operator_client: Client, operator: User, console_mq: EchoMQ, operator_cookie: bytes) -> None:
    from dashboard.actions.models import QueueGrant

    await sync_to_async(QueueGrant.objects.create)(user=operator, pattern="mail")
    failed_job(console_mq, "mail", "m0", "{}", error="quota exceeded")
    failed_job(console_mq, "sms", "s0", "{}", error="quota exceeded")
    communicator = await connect(await sync_to_async(ws_path)(operator_client, "/search/?state=failed&error=quota"),
                                 operator_cookie)
    await messages_until(communicator, lambda m: "Finished:" in m)

    act = await communicator.receive_from(timeout=5)

    assert "search-act-all" not in act
    assert re.findall(r'name="q" value="(\w+)"', act) == ["mail"]


def varied_jobs(mq: EchoMQ) -> dict[str, str]:
    """Three failed jobs of mail with other ids, payloads, errors and workers, a millisecond mark between each two."""
    marks: dict[str, str] = {}
    jobs = [("acme-1", b'{"user": {"id": 42}, "note": "ACME"}', "host-7", "Timeout after 3012 ms"),
            ("bin-1", b"\xff\x00 binary ACME", "host-8", "card declined"),
            ("acme-2", b'{"user": {"id": "42", "deep": {"list": [{"k": "v"}]}}}', "host-7", "a timeout, again")]
    for n, (job_id, payload, worker, error) in enumerate(jobs):
        mq.enqueue("mail", payload, job_id=job_id, max_attempts=1)
        [job] = EchoMQ(mq.redis, actor=worker).claim("mail")
        mq.run(moves.fail("mail", job.id, job.token, error=error, backoff_ms=0))
        time.sleep(0.002)
        marks[f"t{n + 1}"] = str(mq.server_time_ms("mail"))
        time.sleep(0.002)
    return marks


@pytest.mark.parametrize(("form", "ids"), [
    ({"id_prefix": "acme-"}, {"acme-1", "acme-2"}),
    ({"payload": "ACME"}, {"acme-1", "bin-1"}),
    ({"field": "user.id=42"}, {"acme-1", "acme-2"}),
    ({"field": 'user.id="42"'}, {"acme-2"}),
    ({"field": "user.deep.list[0].k=v"}, {"acme-2"}),
    ({"error": "TIMEOUT"}, {"acme-1", "acme-2"}),
    ({"worker": "host-8"}, {"bin-1"}),
    ({"enqueued_after": "{t1}"}, {"bin-1", "acme-2"}),
    ({"enqueued_before": "{t1}"}, {"acme-1"}),
    ({"finished_after": "{t2}"}, {"acme-2"}),
    ({"finished_after": "{t1}", "finished_before": "{t2}"}, {"bin-1"}),
])
async def test_the_page_finds_by_every_filter_of_its_form_and_nothing_else(viewer_client: Client, console_mq: EchoMQ,
                                                                           viewer_cookie: bytes, form: dict[str, str],
                                                                           ids: set[str]) -> None:
    marks = varied_jobs(console_mq)
    query = urlencode({"q": "mail", "state": "failed", **{k: v.format(**marks) for k, v in form.items()}})
    communicator = await connect(await sync_to_async(ws_path)(viewer_client, f"/search/?{query}"), viewer_cookie)

    streamed = "".join(await messages_until(communicator, lambda m: "Finished:" in m))

    assert set(re.findall(r'href="/job/\?q=mail&amp;id=([\w-]+)"', streamed)) == ids
    await communicator.disconnect()


def test_the_form_sent_without_a_filter_is_refused_in_words(viewer_client: Client, console_mq: EchoMQ) -> None:
    sent = viewer_client.get("/search/?q=mail&state=failed&payload=&field=&error=&id_prefix=")
    linked = viewer_client.get("/search/?q=mail&state=failed")

    assert sent.status_code == 400 and b"give at least one filter" in sent.content
    assert b"ws-connect" not in sent.content
    assert linked.status_code == 200 and b"give at least one filter" not in linked.content


async def test_a_search_that_fails_in_the_console_says_so_and_closes_normally(
        viewer_client: Client, console_mq: EchoMQ, viewer_cookie: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    # Closed with 1011, the socket was opened again by the page, and the failing search started over and over.
    failed_job(console_mq, "mail", "t1", "{}", error="timeout")

    def broken(self: object) -> None:
        raise RuntimeError("a bug")

    # Inside the step, which gives the process's search turn back however it ends: a failure outside it would
    # hold every later search of this process for the turn's 30 s.
    monkeypatch.setattr(consumers.Search, "next_call", broken)
    communicator = await connect(await sync_to_async(ws_path)(viewer_client, "/search/?q=mail&state=failed&error=x"),
                                 viewer_cookie)

    seen = await messages_until(communicator, lambda m: "Not searched:" in m)

    assert "the search failed in the console" in seen[-1]
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 1000}
    # The next search of the process is not held up by the failed one (20 s is under the turn's 30 s).
    monkeypatch.undo()
    again = await connect(await sync_to_async(ws_path)(viewer_client, "/search/?q=mail&state=failed&error=time"),
                          viewer_cookie)
    assert "1 matched" in (await messages_until(again, lambda m: "Finished:" in m))[-1]
    await again.disconnect()
