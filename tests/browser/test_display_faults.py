"""In real Chromium: no stray marks. No dot between a row's tick box and its id, no lone "done" after a
finished search."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console
from tests.support.jobs import failed_job

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
