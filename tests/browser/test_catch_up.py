"""In real Chromium: pages catch up after an action. A row's press moves focus to its answer, and a ticked run
that started clears its ticks, so the held table shows what the move did once the pointer leaves; a run that
finishes on the failures page or over a search's results brings the groups and the matches up to date, without
taking focus from a group still there or from a match."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, WebSocketRoute, expect

from dashboard.presenters import dom_id
from queues import EchoMQ, moves
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


def _fail(mq: EchoMQ, queue: str, job_id: str, error: str) -> None:
    mq.enqueue(queue, "{}", job_id=job_id, max_attempts=1)
    [job] = [j for j in mq.claim(queue, count=10) if j.id == job_id]
    mq.run(moves.fail(queue, job.id, job.token, error=error, backoff_ms=0))


def _two_groups(page: Page, console: Console, mq: EchoMQ, queue: str) -> Locator:
    """Three jobs failed by a timeout and one by a declined card, their failures page open: two groups."""
    for n in range(3):
        _fail(mq, queue, f"t{n}", f"timeout after {3000 + n} ms")
    _fail(mq, queue, "c1", "card declined")
    page.goto(console.url + f"failures/?q={queue}")
    groups = page.locator(".failure-group")
    expect(groups).to_have_count(2)
    return groups


def test_the_failures_page_shows_the_groups_a_finished_run_left(operator_page: Page, console: Console,
                                                                mq: EchoMQ) -> None:
    page = operator_page
    queue = "catch-failures"
    groups = _two_groups(page, console, mq, queue)

    groups.first.locator("button[value=retry]").first.click()
    page.locator("dialog.confirm-dialog button.danger").click()

    expect(page.locator("#failure-runs .run-progress .tally")).to_contain_text("3 moved", timeout=15_000)
    page.mouse.move(5, 5)
    expect(groups).to_have_count(1, timeout=10_000)
    expect(groups.first.locator(".signature")).to_have_text("card declined")
    expect(page.locator("#failure-groups")).to_contain_text("1 failed jobs")
    expect(page.locator("#failure-runs .run-progress .tally")).to_contain_text("3 moved")  # the run's box stays


def _three_matches(page: Page, console: Console, mq: EchoMQ, queue: str) -> None:
    """Three jobs failed by a zebra timeout, found by a finished search."""
    for n in range(3):
        _fail(mq, queue, f"s{n}", "zebra timeout")
    page.goto(console.url + f"search/?q={queue}&state=failed&error=zebra")
    expect(page.locator(".search-progress")).to_contain_text("Finished:", timeout=10_000)
    expect(page.locator(".search-match")).to_have_count(3)


def _start_run_from(page: Page, button: str) -> None:
    """Presses ``button`` (a selector) and confirms, leaving focus where it was: a click from script does not move
    focus, and the dialog gives it back on closing."""
    page.locator(button).first.evaluate("(button) => button.click()")
    page.locator("dialog.confirm-dialog button.danger").click()
    expect(page.locator("dialog.confirm-dialog")).to_have_count(0)


# Where focus went and what the sockets and requests did, in order: what a failure of a focus test needs to be read.
_RECORD_EVENTS = """() => {
  window.eventLog = [];
  const name = (t) => t && t.tagName ? `${t.tagName}.${t.className}#${t.id}` : String(t);
  const note = (e) => window.eventLog.push(`${performance.now().toFixed(0)} ${e.type} ${name(e.target)}`
    + ` code=${e.detail && e.detail.event ? e.detail.event.code : ""} active=${name(document.activeElement)}`);
  for (const type of ["focusin", "focusout", "htmx:wsOpen", "htmx:wsClose", "htmx:wsAfterMessage",
                      "htmx:beforeRequest", "htmx:afterRequest", "htmx:load"]) document.addEventListener(type, note, true);
}"""


def _focused_before() -> str:
    return "() => document.activeElement === window.focusedBefore && window.focusedBefore.isConnected"


def test_the_groups_catch_up_around_a_slice_the_operator_is_choosing(operator_page: Page, console: Console,
                                                                     mq: EchoMQ) -> None:
    """The groups are morphed in place: the other group's opened slice stays open, its choice keeps focus."""
    page = operator_page
    queue = "catch-slice"
    groups = _two_groups(page, console, mq, queue)
    other = groups.nth(1)
    other.locator(".group-slice summary").click()
    other.locator(".group-slice select[name=release]").focus()
    page.evaluate("() => { window.focusedBefore = document.activeElement; }")

    _start_run_from(page, ".failure-group .group-act-form button[value=retry]")
    expect(page.locator("#failure-runs .run-progress:not(.running)")).to_have_count(1, timeout=15_000)
    page.mouse.move(5, 5)

    expect(groups).to_have_count(1, timeout=10_000)
    expect(groups.first.locator(".signature")).to_have_text("card declined")
    assert page.evaluate(_focused_before())
    expect(groups.first.locator(".group-slice")).to_have_attribute("open", "")


def test_search_results_catch_up_once_focus_has_left_the_matches(operator_page: Page, console: Console,
                                                                  mq: EchoMQ) -> None:
    """The matches are drawn afresh by a new search, so they wait for focus to leave them as for the pointer."""
    page = operator_page
    queue = "catch-search-focus"
    _three_matches(page, console, mq, queue)
    page.evaluate(_RECORD_EVENTS)
    page.locator(".search-match a").first.focus()
    page.evaluate("() => { window.focusedBefore = document.activeElement; window.searchedAgain = false;"
                  " document.addEventListener('htmx:beforeRequest', (e) => {"
                  " if (e.detail.elt.matches('form.search-form')) window.searchedAgain = true; }); }")

    _start_run_from(page, ".search-act-form button[value=retry]")
    expect(page.locator("#search-results .run-progress:not(.running)")).to_have_count(1, timeout=15_000)
    page.mouse.move(5, 5)

    held = page.evaluate("() => !window.searchedAgain") and page.evaluate(_focused_before())
    assert held, "\n".join(page.evaluate("() => window.eventLog"))
    page.locator("form.search-form input[name=q]").focus()
    expect(page.locator(".search-match")).to_have_count(0, timeout=15_000)
    expect(page.locator(".search-progress")).to_contain_text("Finished:", timeout=10_000)


def test_search_results_show_the_states_a_finished_run_left(operator_page: Page, console: Console,
                                                            mq: EchoMQ) -> None:
    page = operator_page
    queue = "catch-search"
    _three_matches(page, console, mq, queue)

    page.locator(".search-act-form button[value=retry]").click()
    page.locator("dialog.confirm-dialog button.danger").click()

    page.mouse.move(5, 5)
    expect(page.locator(".search-match")).to_have_count(0, timeout=15_000)
    expect(page.locator(".search-progress")).to_contain_text("Finished:", timeout=10_000)
    expect(page.locator("#search-results .run-progress .tally")).to_contain_text("3 moved")
    assert mq.stats(queue).counts["pending"] == 3



def test_a_finished_search_whose_socket_closes_abnormally_is_not_searched_again_under_the_operator(
        operator_page: Page, console: Console, mq: EchoMQ) -> None:
    """htmx's ws extension opens a socket again when it closes abnormally (1006, 1011, 1012, 1013). For a
    finished search that would start the search over, again and again: its first message empties the matches
    the operator is reading, and Redis is searched again for nothing."""
    page = operator_page
    opened: list[WebSocketRoute] = []

    def route(ws: WebSocketRoute) -> None:
        opened.append(ws)
        server = ws.connect_to_server()
        server.on_message(ws.send)
        ws.on_message(server.send)
        closed_by_page = []

        def page_closed(code: int | None, reason: str | None) -> None:
            closed_by_page.append(code)
            server.close(code=code, reason=reason)

        def server_closed(code: int | None, reason: str | None) -> None:
            # The server ends a finished search's socket normally: the page is told it ended abnormally.
            if not closed_by_page:
                ws.close(code=1011, reason="the console failed")

        ws.on_close(page_closed)
        server.on_close(server_closed)

    page.route_web_socket(re.compile(r".*/ws/search/.*"), route)
    _three_matches(page, console, mq, "catch-search-drop")
    page.locator(".search-match a").first.focus()
    page.evaluate("() => { window.focusedBefore = document.activeElement; }")

    # The socket opens again (the extension's doing), and the page closes it at once.
    for _ in range(100):
        if len(opened) >= 2:
            break
        page.wait_for_timeout(100)
    # Closed normally, it is not opened a third time: console.js's reconnect delay is at most 2 s.
    page.wait_for_timeout(3_000)

    assert len(opened) == 2
    expect(page.locator(".search-match")).to_have_count(3)
    expect(page.locator(".search-progress")).to_contain_text("Finished:")
    assert page.evaluate(_focused_before())
