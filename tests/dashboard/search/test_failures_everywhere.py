"""/failures/ without a queue: the largest failure groups of every queue, a bounded number of queues a page."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.pages import failures
from queues import EchoMQ, moves
from tests.support.inline_code import inline_code

pytestmark = pytest.mark.django_db


def fail_for_good(mq: EchoMQ, queue: str, job_id: str, error: str) -> None:
    mq.enqueue(queue, "{}", job_id=job_id, max_attempts=1)
    [job] = [j for j in mq.claim(queue, count=100) if j.id == job_id]
    mq.run(moves.fail(queue, job.id, job.token, error=error, backoff_ms=0))


def test_it_lists_the_groups_of_every_queue_largest_first_with_their_queue(viewer_client: Client,
                                                                         console_mq: EchoMQ) -> None:
    for n in range(3):
        fail_for_good(console_mq, "mail", f"t{n}", f"timeout after {3000 + n} ms")
    for n in range(5):
        fail_for_good(console_mq, "thumbs", f"d{n}", f"disk full on /dev/sd{n}")
    fail_for_good(console_mq, "mail", "c1", "card declined")
    console_mq.enqueue("idle", "x")

    response = viewer_client.get("/failures/")
    html = response.content.decode()

    assert response.status_code == 200 and inline_code(html) == []
    rows = re.findall(r'<td class="mono"><a href="/failures/\?q=(\w+)">\w+</a></td>\s*<td class="num">(\d+)</td>', html)
    assert rows == [("thumbs", "5"), ("mail", "3"), ("mail", "1")]
    assert "9 failed jobs in 2 of the 3 queues read" in html
    assert 'href="/search/?q=thumbs&amp;state=failed&amp;group=' in html
    assert 'id="failures-stopped"' not in html


def test_it_reads_a_bounded_number_of_queues_and_says_where_it_stopped(viewer_client: Client, console_mq: EchoMQ,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failures, "QUEUES_PER_PAGE", 2)
    for queue in ("a1", "b2", "c3"):
        fail_for_good(console_mq, queue, "x", f"boom in {queue}")

    first = viewer_client.get("/failures/").content.decode()
    rest = viewer_client.get("/failures/?after=b2").content.decode()

    assert "Stopped after 2 of 3 registered queues" in first and 'href="/failures/?after=b2"' in first
    assert "?q=a1" in first and "?q=b2" in first and "?q=c3" not in first
    assert "?q=c3" in rest and "?q=a1" not in rest and 'id="failures-stopped"' not in rest


def test_a_queue_whose_groups_cannot_be_read_is_named_and_the_others_shown(viewer_client: Client,
                                                                         console_mq: EchoMQ) -> None:
    fail_for_good(console_mq, "mail", "x", "boom")
    console_mq.enqueue("odd", "x")
    console_mq.redis.set("emq:{odd}:failures", "junk")

    html = viewer_client.get("/failures/").content.decode()

    assert "odd: the key emq:{odd}:failures is a string" in html and "?q=mail" in html
