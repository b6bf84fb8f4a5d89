"""The queue page's latency panel as a person sees it: two charts drawn, the numbers, a range switch, and
the overview's latency table sorted on a click."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from queues.slo import slo_set
from tests.support.browser import Console
from tests.support.jobs import done_jobs

pytestmark = pytest.mark.browser


def test_the_wait_and_run_charts_are_drawn_with_their_numbers_and_switch_range(page: Page, console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    done_jobs(mq, "latency-mail", 5)
    mq.run(slo_set("latency-mail", metric="wait", under_ms=30_000, target=95))
    mq.close()

    page.goto(console.url + "queue/?q=latency-mail")

    charts = page.locator("#queue-latency svg.latency-chart")
    expect(charts).to_have_count(2)
    for n in range(2):
        box = charts.nth(n).bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 50
    expect(page.locator("#queue-latency h3").first).to_contain_text("(5 jobs)")
    expect(page.locator("#time-to-drain")).to_have_text("nothing due")
    expect(page.locator("#latency-objective")).to_contain_text("95 % of jobs wait under 30,000 ms over 30 d")
    page.locator("#queue-latency .ranges a", has_text="30d").click()
    expect(page.locator("#queue-latency h2")).to_contain_text("30 days, per day")
    expect(page.locator("#queue-latency rect.l-hover")).to_have_count(60)


def test_the_overview_latency_table_sorts_on_a_click(page: Page, console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    done_jobs(mq, "latency-a", 2)
    mq.enqueue_many("latency-b", ["x"] * 3)  # due, nothing claimed: not draining
    mq.close()

    page.goto(console.url)
    page.locator("#overview-latency .ranges a", has_text="drain").click()

    expect(page.locator("#overview-latency h2")).to_contain_text("time to drain")
    first = page.locator("#overview-latency tbody tr").first
    expect(first.locator("td.drain")).to_have_text("not draining")
