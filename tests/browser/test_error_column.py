"""In real Chromium: the last-error column reads as class and text at desktop widths (two lines at most, the
whole error in a title), and a phone's card still shows the whole error, with no sideways scroll."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import PASSWORD, USERNAME, Console, logged_in
from tests.support.jobs import failed_job

pytestmark = pytest.mark.browser

ERROR = ("smtplib.SMTPServerDisconnected: Connection unexpectedly closed by mx1.example.com after 30 s "
         "while sending the message body for campaign spring-sale")


def test_the_last_error_shows_its_class_and_text_on_two_lines_with_the_whole_error_in_a_title(
        page: Page, console: Console, mq: EchoMQ) -> None:
    failed_job(mq, "errors-wide", "wide-1", error=ERROR)
    page.goto(console.url + "queue/?q=errors-wide&state=failed")

    cell = page.locator(f"#{dom_id('j', 'wide-1')} td.error-text .error-clamp")
    expect(cell).to_have_attribute("title", ERROR)
    box = cell.bounding_box()
    line = float(cell.evaluate("(el) => parseFloat(getComputedStyle(el).lineHeight)"))
    assert box is not None and box["width"] >= 320, box
    assert 1.5 * line < box["height"] < 2.5 * line, (box, line)
    assert cell.evaluate("(el) => el.scrollWidth <= el.clientWidth")


def test_a_phone_shows_the_whole_last_error_without_sideways_scroll(browser: Browser, console: Console,
                                                                    mq: EchoMQ) -> None:
    failed_job(mq, "errors-phone", "phone-1", error=ERROR)
    page = logged_in(browser, console, USERNAME, PASSWORD, viewport={"width": 390, "height": 844})
    try:
        page.goto(console.url + "queue/?q=errors-phone&state=failed")
        cell = page.locator(f"#{dom_id('j', 'phone-1')} td.error-text")
        expect(cell).to_have_text(ERROR)
        assert cell.evaluate("(el) => el.scrollHeight <= el.clientHeight + 1")
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 390
    finally:
        page.context.close()
