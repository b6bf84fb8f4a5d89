"""In real Chromium: a viewer granted one action on some queues sees that action's buttons there, and only there,
and the button works; every other control stays hidden."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import ROOT, Console, logged_in
from tests.support.jobs import failed_job

pytestmark = pytest.mark.browser

GRANTED, PASSWORD = "gina", "gina-password-1"


def _manage(console: Console, *args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], env={**console.env, "EMQ_PASSWORD": PASSWORD},
                   cwd=ROOT, check=True, timeout=60, capture_output=True)


@pytest.fixture
def granted_page(browser: Browser, console: Console) -> Iterator[Page]:
    _manage(console, "createviewer", GRANTED)
    _manage(console, "grant", GRANTED, "retry", "--queue", "granted-*")
    page = logged_in(browser, console, GRANTED, PASSWORD)
    yield page
    page.context.close()
    _manage(console, "grant", GRANTED, "retry", "--queue", "granted-*", "--revoke")


def test_a_viewer_granted_retry_on_some_queues_sees_and_presses_retry_there_only(
        granted_page: Page, console: Console, mq: EchoMQ) -> None:
    page = granted_page
    failed_job(mq, "granted-eu", "g1")
    failed_job(mq, "elsewhere", "e1")

    page.goto(console.url + "queue/?q=granted-eu&state=failed")
    row = page.locator(f"#{dom_id('j', 'g1')}")
    expect(row.locator("button[value=retry]")).to_be_visible()
    expect(row.locator("button[value=delete]")).to_be_hidden()
    expect(page.locator("button[value=purge_failed]")).to_be_hidden()
    expect(page.locator("button[value=retry_all]")).to_be_visible()
    row.locator("button[value=retry]").click()
    expect(page.locator("#action-results .action-result.moved")).to_contain_text("retried: job g1 is now pending")

    page.goto(console.url + "queue/?q=elsewhere&state=failed")
    expect(page.locator(f"#{dom_id('j', 'e1')}")).to_be_visible()
    expect(page.locator(f"#{dom_id('j', 'e1')} button[value=retry]")).to_be_hidden()
    expect(page.locator("button[value=retry_all]")).to_be_hidden()
    assert mq.job("granted-eu", "g1").state == "pending" and mq.job("elsewhere", "e1").state == "failed"
