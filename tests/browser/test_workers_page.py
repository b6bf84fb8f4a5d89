"""In real Chromium: the Workers page is one table whose columns line up across queues, filtered by ?q=."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ, moves
from tests.support.browser import Console

pytestmark = pytest.mark.browser

FACTS: dict[str, Any] = dict(ttl_ms=600_000, host="box-1", pid=4242, runtime="python 3.11", concurrency=8, started_ms=1)


def test_the_columns_line_up_across_queues_and_the_filter_keeps_one_queue(page: Page, console: Console,
                                                                         mq: EchoMQ) -> None:
    for queue, worker in (("workers-a", "box-1:1"), ("workers-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "a-much-longer-worker-id:2")):
        mq.enqueue(queue, "x")
        mq.run(moves.register_worker(queue, worker, held=[], **FACTS))

    page.goto(console.url + "workers/?q=workers-")
    groups = page.locator("#workers-table tbody.worker-group")
    expect(groups).to_have_count(2)
    header = page.locator("#workers-table thead th").nth(2).bounding_box()
    firsts = [groups.nth(i).locator("tr").first.locator("td").nth(2).bounding_box() for i in range(2)]
    assert header is not None and all(box is not None for box in firsts)
    assert {round(box["x"]) for box in firsts if box} == {round(header["x"])}

    page.fill("input[name=q]", "workers-a")
    page.locator("form.inline[role=search] button").click()
    expect(groups).to_have_count(1)
    expect(page.locator("#workers-total")).to_contain_text("1 alive matching “workers-a”")
