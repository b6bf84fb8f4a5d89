"""The queue page's history chart as a person sees it: drawn, switchable, with hover text, on a phone too."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from queues import EchoMQ
from queues.deploys import deploy_mark
from tests.support.browser import Console
from tests.support.jobs import done_jobs, failed_jobs

pytestmark = pytest.mark.browser


def test_the_chart_is_drawn_and_a_range_link_switches_it(page: Page, console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    done_jobs(mq, "chart-mail", 4)
    failed_jobs(mq, "chart-mail", 1)
    mq.close()

    page.goto(console.url + "queue/?q=chart-mail")

    chart = page.locator("#queue-history svg.history-chart")
    expect(chart).to_be_visible()
    box = chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 60
    expect(page.locator("#queue-history .legend")).to_contain_text("completed 4")
    # The hover text of the current minute names what happened in it.
    expect(page.locator("#queue-history rect.hover title").last).to_contain_text("completed")
    page.locator("#queue-history .ranges a", has_text="24h").click()
    expect(page.locator("#queue-history h2")).to_contain_text("24 hours, per hour")
    expect(page.locator("#queue-history rect.hover")).to_have_count(24)


def test_a_deploy_mark_is_a_line_on_the_history_and_latency_charts_and_on_the_overviews_moves_chart(
        page: Page, console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    done_jobs(mq, "chart-deploys", 2)
    mq.run(deploy_mark("v7-charted"))
    mq.close()

    page.goto(console.url + "queue/?q=chart-deploys")

    # Marks are the whole Redis's: other tests' marks may be drawn too, so this one is found by its hover text.
    for panel, charts in (("#queue-history", 1), ("#queue-latency", 2)):
        lines = page.locator(f"{panel} line.deploy").filter(has_text="deploy v7-charted at")
        expect(lines).to_have_count(charts)
        box = lines.first.bounding_box()
        assert box is not None and box["height"] > 40
    page.goto(console.url)
    expect(page.locator("#overview-summary line.deploy").filter(has_text="deploy v7-charted at")).to_have_count(
        1, timeout=15_000)


def test_the_chart_needs_no_sideways_scroll_on_a_phone(browser: Browser, console: Console) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    phone = context.new_page()
    phone.goto(console.url + "login/")
    phone.fill("#id_username", "vera")
    phone.fill("#id_password", "vera-password")
    phone.click("button[type=submit]")
    phone.wait_for_url(console.url)

    phone.goto(console.url + "queue/?q=chart-mail")

    expect(phone.locator("#queue-history svg")).to_be_visible()
    # The chart's own width, whatever the other panels of the page need: the grid's one column is as wide
    # as its widest panel, so the chart is measured with the others set aside.
    right = phone.evaluate("""(() => {
        const kids = [...document.querySelectorAll('main > *')];
        kids.forEach(k => { if (k.id !== 'queue-history') k.hidden = true; });
        const chart = document.querySelector('#queue-history');
        return Math.max(...[chart, ...chart.querySelectorAll('*')].map(e => e.getBoundingClientRect().right));
    })()""")
    assert right <= 390
    context.close()
