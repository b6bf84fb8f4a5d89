"""In real Chromium at a phone's width (390 px): the overview, queue and job pages need no sideways scroll, and
the header with its search and "Log out" stays within reach."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page

from queues import EchoMQ
from tests.support.browser import Console, logged_in
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser


@pytest.fixture
def phone(browser: Browser, console: Console, operator_login: tuple[str, str]) -> Page:
    page = logged_in(browser, console, *operator_login, viewport={"width": 390, "height": 844})
    yield page  # type: ignore[misc]
    page.context.close()


def test_overview_queue_and_job_pages_fit_390_px(phone: Page, console: Console, mq: EchoMQ) -> None:
    long_queue = "narrow-" + "a-very-long-queue-name-" * 3
    [job_id] = failed_jobs(mq, long_queue, 1, payload='{"to": "' + "x" * 300 + '"}')
    mq.enqueue(long_queue, "y" * 500, delay_ms=600_000)
    wide = {}
    for path in ["", "?filter=narrow", f"queue/?{urlencode({'q': long_queue, 'state': 'failed'})}",
                 f"queue/?{urlencode({'q': long_queue, 'state': 'pending'})}",
                 f"job/?{urlencode({'q': long_queue, 'id': job_id})}", "audit/"]:
        phone.goto(console.url + path)
        phone.wait_for_load_state("networkidle")
        width = phone.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        if width[0] > width[1]:
            wide[path] = width
        logout = phone.locator("form.logout button").bounding_box()
        assert logout is not None and logout["x"] >= 0 and logout["x"] + logout["width"] <= 390, (path, logout)
        assert phone.locator("form.logout button").is_visible()
    assert wide == {}
