"""In real Chromium: the queue page catches up after an action. A row's press moves focus to its answer, and
a ticked run that started clears its ticks, so the held table shows what the move did once the pointer leaves."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser


def test_a_row_press_moves_focus_to_its_answer_and_the_table_then_shows_the_move(
        operator_page: Page, console: Console, mq: EchoMQ) -> None:
    page = operator_page
    first, second = failed_jobs(mq, "catch-row", 2)
    page.goto(console.url + "queue/?q=catch-row&state=failed")
    wait_until_live(page)

    page.locator(f"#{dom_id('j', first)} button[value=retry]").click()

    expect(page.locator("#action-results .action-result").first).to_contain_text(f"retried: job {first}")
    assert page.evaluate("() => document.activeElement.matches('#action-results .action-result')")
    page.mouse.move(5, 5)
    expect(page.locator(f"#{dom_id('j', first)}")).to_have_count(0, timeout=10_000)
    expect(page.locator(f"#{dom_id('j', second)}")).to_be_visible()


def test_a_ticked_run_clears_its_ticks_and_the_table_then_shows_the_moves(operator_page: Page, console: Console,
                                                                         mq: EchoMQ) -> None:
    page = operator_page
    first, second = failed_jobs(mq, "catch-ticks", 2)
    page.goto(console.url + "queue/?q=catch-ticks&state=failed")
    wait_until_live(page)
    page.locator(f"#pick-{dom_id('j', first)}").check()

    page.locator("#selection-form button[value=retry]").click()

    expect(page.locator(".run-progress").first).to_contain_text("1 moved", timeout=15_000)
    page.mouse.move(5, 5)
    expect(page.locator(f"#{dom_id('j', first)}")).to_have_count(0, timeout=10_000)
    expect(page.locator(f"#pick-{dom_id('j', second)}")).not_to_be_checked()
    expect(page.locator("#selection-form button[value=retry]")).to_be_disabled()
