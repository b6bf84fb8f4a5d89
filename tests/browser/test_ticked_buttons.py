"""In real Chromium: the "Ticked:" buttons wait for a tick, and a refusal, whatever its status, lands in the
results box of a page that stays styled, also on a console run with DEBUG on, as the demo runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console, logged_in
from tests.support.daphne import start_daphne, stop_daphne
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser


@pytest.fixture
def debug_operator_page(browser: Browser, console: Console, operator_login: tuple[str, str]) -> Iterator[Page]:
    """An operator's page on a second daphne with DEBUG on (the demo's setting), same database and Redis."""
    env = {**console.env, "DEBUG": "1", "EMQ_DEMO": "1"}
    url, daphne = start_daphne(env, Path(console.env["EMQ_CONSOLE_WORKDIR"]), "daphne-debug")
    try:
        page = logged_in(browser, Console(url, console.redis, env), *operator_login)
        yield page
        page.context.close()
    finally:
        stop_daphne(daphne)


def test_the_ticked_buttons_are_disabled_until_a_row_is_ticked(operator_page: Page, console: Console,
                                                               mq: EchoMQ) -> None:
    page = operator_page
    [job_id] = failed_jobs(mq, "tick-first", 1)
    page.goto(console.url + "queue/?q=tick-first&state=failed")
    retry = page.locator("#selection-form button[value=retry]")

    expect(retry).to_be_disabled()
    page.locator(f"#pick-{dom_id('j', job_id)}").check()
    expect(retry).to_be_enabled()
    page.locator(f"#pick-{dom_id('j', job_id)}").uncheck()
    expect(retry).to_be_disabled()


def test_a_ticked_press_with_nothing_ticked_is_refused_in_the_results_box_of_a_styled_page(
        debug_operator_page: Page, mq: EchoMQ) -> None:
    page = debug_operator_page
    failed_jobs(mq, "tick-none", 1)
    page.goto(page.url + "queue/?q=tick-none&state=failed")
    retry = page.locator("#selection-form button[value=retry]")
    expect(retry).to_be_disabled()

    # As a press that beat the script that disables the buttons would send it.
    retry.evaluate("(b) => { b.disabled = false; b.click(); }")

    expect(page.locator("#action-results .action-result")).to_have_text("not done: no jobs were ticked")
    expect(page.locator("header.top .brand")).to_be_visible()
    assert page.locator("link[rel=stylesheet]").count() >= 1
