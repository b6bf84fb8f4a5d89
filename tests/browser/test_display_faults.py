"""In real Chromium: no stray marks. No dot between a row's tick box and its id, no lone "done" after a
finished search, no row note cut short, no total coloured otherwise than its column, no live-looking « First."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.jobs import done_jobs, failed_job, failed_jobs

pytestmark = pytest.mark.browser


def test_no_dot_shows_between_a_rows_tick_box_and_its_id(operator_page: Page, console: Console,
                                                          mq: EchoMQ) -> None:
    failed_job(mq, "no-dot", "dotless")
    operator_page.goto(console.url + "queue/?q=no-dot&state=failed")

    cell = operator_page.locator(f"#{dom_id('j', 'dotless')} td.pick")
    expect(cell.locator("input")).to_be_visible()
    # An overflowing cell with text-overflow: ellipsis draws a clipped "…": a dot beside the box.
    assert cell.evaluate("(td) => getComputedStyle(td).textOverflow") == "clip"


def test_a_finished_search_says_finished_and_nothing_after_it(page: Page, console: Console, mq: EchoMQ) -> None:
    failed_job(mq, "search-end", "found-1", payload="needle")
    page.goto(console.url + "search/?q=search-end&state=failed&payload=needle")

    expect(page.locator(".search-progress")).to_contain_text("Finished:", timeout=10_000)
    expect(page.locator(".search-status")).not_to_contain_text("done")
    expect(page.locator(".search-stop")).to_be_hidden()


def test_a_rows_note_shows_whole_and_the_row_keeps_its_height(operator_page: Page, console: Console,
                                                               mq: EchoMQ) -> None:
    page = operator_page
    ids = failed_jobs(mq, "noted", 4)
    page.goto(console.url + "queue/?q=noted&state=failed")
    wait_until_live(page)
    rows = [page.locator(f"#{dom_id('j', job_id)}") for job_id in ids]
    heights = [row.evaluate("(tr) => tr.getBoundingClientRect().height") for row in rows]
    rows[0].hover()

    mq.delete("noted", ids[1], expect_state="failed")
    mq.retry("noted", ids[2])

    expect(rows[1].locator(".row-note")).to_have_text("now gone (deleted or purged)", timeout=10_000)
    expect(rows[2].locator(".row-note")).to_have_text("now pending, attempts 1")
    for row in rows[1:3]:
        # Nothing of the note lies outside its own box, nor its box outside the cell (which clips it).
        assert row.locator(".row-note").evaluate(
            "(n) => { const a = n.getBoundingClientRect(), c = n.closest('td').getBoundingClientRect();"
            " return n.scrollWidth <= n.clientWidth && n.scrollHeight <= n.clientHeight"
            " && a.left >= c.left && a.right <= c.right && a.top >= c.top && a.bottom <= c.bottom; }"), row.inner_text()
    assert [row.evaluate("(tr) => tr.getBoundingClientRect().height") for row in rows] == heights


def test_the_overviews_totals_are_coloured_as_their_columns(page: Page, console: Console, mq: EchoMQ) -> None:
    failed_job(mq, "tints", "failed-one")
    done_jobs(mq, "tints", 1)
    mq.enqueue("tints", "x")
    mq.claim("tints", lease_ms=3_600_000)
    mq.enqueue("tints", "x")
    mq.enqueue("tints", "x", delay_ms=3_600_000)
    page.goto(console.url + "?filter=tints")
    wait_until_live(page)
    # The totals are the census's: once it has read the queue, the failed total is warm as its cell.
    expect(page.locator("#overview-summary .stat.failed")).to_have_class("stat failed warm", timeout=20_000)

    colour = "(e) => getComputedStyle(e).color"
    for column in ("pending", "delayed", "active", "done", "failed"):
        total = page.locator(f"#overview-summary .stat.{column} .value").evaluate(colour)
        cell = page.locator(f"#overview-rows td.num.{column}").evaluate(colour)
        assert total == cell, column


def test_first_on_the_first_page_looks_unlike_a_live_button(page: Page, console: Console, mq: EchoMQ) -> None:
    failed_jobs(mq, "first-page", 25)
    page.goto(console.url + "queue/?q=first-page&state=failed&limit=20")
    pager = page.locator("#queue-jobs .pager")

    first, following = pager.locator(".button", has_text="« First"), pager.locator(".button", has_text="Next ›")

    expect(following).to_have_attribute("href", re.compile(r"."))
    assert first.evaluate("(e) => e.tagName") == "SPAN"
    style = "(e) => { const s = getComputedStyle(e); return [s.color, s.borderTopStyle, s.cursor]; }"
    assert first.evaluate(style)[1:] == ["dashed", "default"]
    assert following.evaluate(style)[1:] == ["solid", "pointer"]
    assert first.evaluate(style)[0] != following.evaluate(style)[0]
