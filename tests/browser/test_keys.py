"""In real Chromium: the keyboard. A live push never takes focus from what it re-sends (a link in the queue summary
or the workers line, the page-size choice over the jobs, a run's Cancel button); j and k move between the overview's
queues as between a queue's jobs, Enter opens the row with focus, Escape leaves Find, and ? shows the keys."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.daphne import manage

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("link", ["#queue-summary a.tab.done", "#queue-workers a"])
def test_a_live_push_to_the_queue_pages_summary_or_workers_line_keeps_focus_on_its_link(
        page: Page, console: Console, mq: EchoMQ, link: str) -> None:
    """Every push re-sends the summary and the workers line whole: they must update in place, the focused link
    the same element, not come in as a new one."""
    queue = "keys-summary" if "summary" in link else "keys-workers"
    mq.enqueue(queue, "x")
    page.goto(console.url + f"queue/?q={queue}")
    wait_until_live(page)
    page.locator(link).focus()
    page.evaluate("() => { window.focusedBefore = document.activeElement; }")

    mq.enqueue(queue, "y")

    expect(page.locator("#queue-summary .count[data-state=pending]")).to_have_text("2", timeout=10_000)
    assert page.evaluate("() => document.activeElement === window.focusedBefore && window.focusedBefore.isConnected")


def test_a_live_push_keeps_focus_on_the_page_size_over_the_jobs(page: Page, console: Console, mq: EchoMQ) -> None:
    """Focus there is not in the table, so the jobs section is applied at once, around the choice."""
    mq.enqueue("keys-size", "x")
    page.goto(console.url + "queue/?q=keys-size")
    wait_until_live(page)
    page.mouse.move(5, 5)
    page.locator("#queue-jobs .page-size select").focus()
    page.evaluate("() => { window.focusedBefore = document.activeElement; }")

    mq.enqueue("keys-size", "y")

    expect(page.locator("#queue-jobs tbody tr[data-job]")).to_have_count(2, timeout=10_000)
    assert page.evaluate("() => document.activeElement === window.focusedBefore && window.focusedBefore.isConnected")


def _run(console: Console, code: str) -> str:
    return manage(console.env, "shell", "-v0", "-c", "from dashboard.actions.models import AuditEntry; " + code)


def test_a_runs_cancel_button_keeps_focus_as_its_progress_comes_so_enter_cancels(operator_page: Page,
                                                                               console: Console) -> None:
    """A run's progress is re-sent whole as it moves: its Cancel button must stay the button the operator is on."""
    page = operator_page
    run = int(_run(console, "print(AuditEntry.objects.create(username='otto', queue='keys-run', action='retry_all', "
                            "scope='queue', outcome='running').pk)").split()[-1])
    try:
        page.goto(console.url + f"actions/runs/{run}/")
        cancel = page.locator(f"#run-{run} button", has_text="Cancel")
        cancel.focus()
        page.evaluate("() => { window.focusedBefore = document.activeElement; }")

        _run(console, f"AuditEntry.objects.filter(pk={run}).update(moved=5)")

        expect(page.locator(f"#run-{run} .tally")).to_contain_text("5 moved", timeout=10_000)
        assert page.evaluate("() => document.activeElement === window.focusedBefore && window.focusedBefore.isConnected")
        page.keyboard.press("Enter")
        expect(page.locator(f"#run-{run}")).to_contain_text("cancel requested by otto", timeout=10_000)
    finally:
        _run(console, f"AuditEntry.objects.filter(pk={run}).update(outcome='finished')")


def test_j_and_k_move_between_the_overviews_queues_and_enter_opens_one(page: Page, console: Console,
                                                                      mq: EchoMQ) -> None:
    mq.enqueue("aaa-keys-1", "x")
    mq.enqueue("aaa-keys-2", "x")
    page.goto(console.url + "?filter=aaa-keys")
    expect(page.locator("#overview-rows tr[id]")).to_have_count(2)
    wait_until_live(page)

    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("j")
    assert page.evaluate("() => document.activeElement.textContent.includes('aaa-keys-2')")
    page.keyboard.press("Enter")

    page.wait_for_url(re.compile(r"/queue/\?q=aaa-keys-2$"))


def test_a_row_whose_counts_change_keeps_focus_so_enter_opens_it(page: Page, console: Console, mq: EchoMQ) -> None:
    """A row that differs is pushed alone; it must update in place, not come in as a new row that drops focus."""
    mq.enqueue("aaa-focus-1", "x")
    mq.enqueue("aaa-focus-2", "x")
    page.goto(console.url + "?filter=aaa-focus")
    expect(page.locator("#overview-rows tr[id]")).to_have_count(2)
    wait_until_live(page)
    page.keyboard.press("j")
    page.keyboard.press("j")
    row = page.locator("#overview-rows tr[id]", has_text="aaa-focus-2")
    expect(row).to_be_focused()
    page.evaluate("() => { window.focusedRow = document.activeElement; }")

    mq.enqueue("aaa-focus-2", "y")

    expect(row.locator("td.num.pending")).to_have_text("2", timeout=15_000)
    assert page.evaluate("() => document.activeElement === window.focusedRow && window.focusedRow.isConnected")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/queue/\?q=aaa-focus-2$"))


def test_escape_leaves_find_and_question_mark_shows_the_keys(page: Page, console: Console) -> None:
    page.goto(console.url)
    page.keyboard.press("/")
    expect(page.locator(".find input")).to_be_focused()

    page.keyboard.press("Escape")
    expect(page.locator(".find input")).not_to_be_focused()
    page.keyboard.press("?")

    expect(page.locator("#keys-help")).to_be_visible()
    expect(page.locator("#keys-help")).to_contain_text("Open the row that has focus")
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).to_be_hidden()
