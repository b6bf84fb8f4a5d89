from __future__ import annotations

import pytest
from django.test import Client

from dashboard.presenters import dom_id
from queues import EchoMQ, QueueKeys
from queues.foreign import write_foreign_job
from tests.support.htmx import htmx_get


def test_it_shows_a_tab_per_state_with_its_count(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue_many("mail", ["a", "b", "c"])
    console_mq.claim("mail", lease_ms=60_000)

    response = viewer_client.get("/queue/?q=mail")

    assert response.status_code == 200
    assert response.context["tabs"] == {"pending": 2, "active": 1, "done": 0, "failed": 0}
    assert len(response.context["lines"]) == 2


def test_due_and_delayed_pending_jobs_are_told_apart(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "now", job_id="due-job")
    console_mq.enqueue("mail", "later", job_id="delayed-job", delay_ms=3_600_000)

    response = viewer_client.get("/queue/?q=mail&state=pending")

    lines = {line.row.id: line for line in response.context["lines"]}
    assert not lines["due-job"].is_delayed
    assert lines["delayed-job"].is_delayed
    assert b"delayed: not due yet" in response.content
    assert b'<span class="badge delayed">delayed</span>' in response.content


def test_active_jobs_carry_their_lease_deadline_and_lapsed_ones_are_flagged(viewer_client: Client,
                                                                           console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a", job_id="fresh")
    console_mq.enqueue("mail", "b", job_id="stale")
    console_mq.claim("mail", lease_ms=60_000, count=2)
    console_mq.redis.zadd(QueueKeys("mail").active, {"stale": 1000})

    response = viewer_client.get("/queue/?q=mail&state=active")

    lines = {line.row.id: line for line in response.context["lines"]}
    assert lines["stale"].is_lapsed and not lines["fresh"].is_lapsed
    assert f'data-deadline="{lines["fresh"].row.score}"'.encode() in response.content
    assert b'<span class="badge lapsed">lapsed</span>' in response.content


def test_cursor_pages_follow_each_other_without_gaps_or_repeats(viewer_client: Client, console_mq: EchoMQ) -> None:
    ids = console_mq.enqueue_many("mail", [str(i) for i in range(45)])

    seen: list[str] = []
    url = "/queue/?q=mail&limit=20"
    while url:
        response = viewer_client.get(url)
        seen += [line.row.id for line in response.context["lines"]]
        older = response.context["pager"].older_query
        url = f"/queue/?{older}" if older else ""

    assert sorted(seen) == sorted(ids)
    assert len(seen) == len(set(seen))


def test_a_cursor_page_does_not_shift_when_earlier_jobs_leave(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue_many("mail", [str(i) for i in range(60)])
    first = viewer_client.get("/queue/?q=mail&limit=20")
    older = first.context["pager"].older_query
    second_before = [line.row.id for line in viewer_client.get(f"/queue/?{older}").context["lines"]]

    console_mq.claim("mail", count=10)
    second_after = [line.row.id for line in viewer_client.get(f"/queue/?{older}").context["lines"]]

    assert second_after == second_before


def test_the_previous_link_goes_back_to_the_page_before(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue_many("mail", [str(i) for i in range(30)])
    first_ids = [line.row.id for line in viewer_client.get("/queue/?q=mail&limit=20").context["lines"]]
    second = viewer_client.get("/queue/?" + viewer_client.get("/queue/?q=mail&limit=20").context["pager"].older_query)

    back = viewer_client.get("/queue/?" + second.context["pager"].newer_query)

    assert [line.row.id for line in back.context["lines"]] == first_ids


def test_the_jobs_table_is_an_htmx_fragment_on_request(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")

    response = htmx_get(viewer_client, "/queue/?q=mail", "queue-jobs")

    html = response.content.decode()  # type: ignore[attr-defined]
    assert html.startswith('<section id="queue-jobs"')
    assert f'id="{dom_id("j", "j1")}"' in html
    assert "<html" not in html


def test_odd_rows_are_shown_with_a_warning(viewer_client: Client, console_mq: EchoMQ) -> None:
    write_foreign_job(console_mq, "mail", "three", state="pending", attempts="many", payload=b"\xff\xfe\x00")
    write_foreign_job(console_mq, "mail", "confused", state="sleeping", attempts="0", payload="x")
    console_mq.redis.zadd(QueueKeys("mail").pending, {"ghost": 2})  # listed, with no hash at all

    response = viewer_client.get("/queue/?q=mail")

    assert response.status_code == 200
    html = response.content.decode()
    assert "attempts is not a number: &#x27;many&#x27;" in html
    assert "its hash does not exist" in html
    assert "its hash says state &#x27;sleeping&#x27;" in html
    assert "ff fe 00" in html


def test_payloads_and_errors_are_escaped(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "<script>alert(1)</script>")
    console_mq.enqueue("mail", '<img src=x onerror="alert(2)">')

    html = viewer_client.get("/queue/?q=mail").content.decode()

    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize("query", ["q=a%20b", "q=mail&after=nonsense", "q="])
def test_bad_input_is_a_readable_400(viewer_client: Client, console_mq: EchoMQ, query: str) -> None:
    response = viewer_client.get(f"/queue/?{query}")

    assert response.status_code == 400
    assert response.context["message"]
