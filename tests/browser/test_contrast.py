"""In real Chromium: every text on every page, in light and in dark, meets WCAG AA against the colours it is
rendered on (4.5:1, 3:1 for large text), disabled labels included; every control's outline meets 3:1. So do
results, confirmations, warnings and rows marked as moved on. The scheme can be chosen by hand and is kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console, logged_in, wait_until_live
from tests.support.contrast import MEASURE, below_aa
from tests.support.jobs import done_jobs, failed_jobs

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def seeded(mq: EchoMQ) -> dict[str, list[str]]:
    jobs = {"failed": failed_jobs(mq, "contrast", 3), "done": done_jobs(mq, "contrast", 2)}
    jobs["active"] = mq.enqueue_many("contrast", ["x", "y"])
    mq.claim("contrast", lease_ms=1, count=1)
    mq.claim("contrast", lease_ms=600_000, count=1)
    jobs["pending"] = mq.enqueue_many("contrast", ["now", "later"])
    mq.enqueue("contrast", "later", delay_ms=600_000)
    return jobs


PAGES = ["", "?filter=con", "queue/?q=contrast&state=pending", "queue/?q=contrast&state=active",
         "queue/?q=contrast&state=done", "queue/?q=contrast&state=failed", "audit/", "cluster/", "find/?id=nowhere",
         "search/?q=contrast&state=failed", "failures/?q=contrast", "workers/"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_meets_aa_in_both_schemes(operator_page: Page, console: Console, seeded: dict[str, list[str]],
                                             scheme: str) -> None:
    page = operator_page
    page.emulate_media(color_scheme=scheme)
    failures = {}
    for path in PAGES + ["job/?" + urlencode({"q": "contrast", "id": seeded["failed"][0]}),
                         "job/?" + urlencode({"q": "contrast", "id": seeded["active"][0]})]:
        page.goto(console.url + path)
        page.wait_for_load_state("networkidle")
        if found := below_aa(page):
            failures[path] = found
    assert failures == {}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_results_confirmations_refusals_and_moved_on_rows_meet_aa(operator_page: Page, console: Console,
                                                                  mq: EchoMQ, scheme: str) -> None:
    page = operator_page
    page.emulate_media(color_scheme=scheme)
    queue = f"contrast-acts-{scheme}"
    ids = failed_jobs(mq, queue, 4)
    page.goto(console.url + f"queue/?q={queue}&state=failed")
    wait_until_live(page)
    checks: dict[str, list[dict[str, Any]]] = {}

    def check(what: str, step: Callable[[], None]) -> None:
        step()
        if found := below_aa(page):
            checks[what] = found

    def result() -> None:
        page.locator(f"#{dom_id('j', ids[0])} button[value=retry]").click()
        expect(page.locator("#action-results .action-result.moved")).to_be_visible()

    def confirmation() -> None:
        page.locator("button[value=retry_all]").click()
        expect(page.locator("dialog.confirm-dialog")).to_be_visible()

    def moved_on() -> None:
        page.keyboard.press("Escape")
        expect(page.locator("dialog.confirm-dialog")).to_have_count(0)
        page.locator(f"#{dom_id('j', ids[1])}").hover()
        mq.retry(queue, ids[1])
        row = page.locator(f"#{dom_id('j', ids[1])}")
        expect(row.locator(".row-note")).to_have_text("now pending, attempts 1", timeout=10_000)
        row.locator("button[value=delete]").click(force=True)
        expect(page.locator("#action-results .action-result.refused")).to_be_visible()
        page.locator(f"#{dom_id('j', ids[1])}").hover()

    def measured_while_held() -> None:
        found = page.evaluate(MEASURE)  # the pointer stays on the table: the marked row is shown as it is
        if found:
            checks["held table"] = found

    check("after an action", result)
    check("a confirmation", confirmation)
    moved_on()
    measured_while_held()
    page.mouse.move(0, 0)
    page.locator("button[value=purge_failed]").click()
    expect(page.locator("dialog.confirm-dialog")).to_be_visible()
    if found := below_aa(page):
        checks["a confirmation with nothing to do"] = found
    assert checks == {}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_login_page_and_its_error_meet_aa(browser: Browser, console: Console, scheme: str) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(console.url + "login/")
        assert below_aa(page) == []
        page.fill("#id_username", "nobody")
        page.fill("#id_password", "not-the-password")
        page.press("#id_password", "Enter")
        page.wait_for_load_state("networkidle")
        expect(page.locator(".login .error-text")).to_be_visible()
        assert below_aa(page) == []
    finally:
        context.close()


def test_the_scheme_can_be_chosen_by_hand_and_is_kept_per_browser(browser: Browser, console: Console,
                                                                  operator_login: tuple[str, str]) -> None:
    page = logged_in(browser, console, *operator_login, color_scheme="light")
    try:
        background = "getComputedStyle(document.documentElement).backgroundColor"
        light = page.evaluate(background)
        page.select_option("#theme-switch", "dark")
        dark = page.evaluate(background)
        assert dark != light
        assert below_aa(page) == []

        page.goto(console.url + "audit/")
        assert page.evaluate(background) == dark
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        assert page.locator("#theme-switch").input_value() == "dark"

        page.select_option("#theme-switch", "system")
        page.reload()
        assert page.evaluate(background) == light
    finally:
        page.context.close()
