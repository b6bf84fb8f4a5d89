"""In real Chromium: the queue page starts with its jobs. The queue-wide controls sit in one compact bar that
offers what applies now (Pause or Resume, nothing to retry or purge at 0), and the boxes for results and runs
show only once they hold something, never to a viewer."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser


def test_the_queue_bar_is_one_compact_line_and_the_empty_boxes_are_hidden(operator_page: Page, console: Console,
                                                                         mq: EchoMQ) -> None:
    page = operator_page
    mq.enqueue("bar-compact", "x")
    page.goto(console.url + "queue/?q=bar-compact")

    bar = page.locator(".queue-actions")
    box = bar.bounding_box()
    assert box is not None and box["height"] <= 130, box
    expect(page.locator("#action-results")).to_be_hidden()
    expect(page.locator("#action-runs")).to_be_hidden()


def test_the_queue_bar_disables_what_a_zero_count_leaves_nothing_to_do_for(operator_page: Page, console: Console,
                                                                          mq: EchoMQ) -> None:
    page = operator_page
    mq.enqueue("bar-zero", "x")
    page.goto(console.url + "queue/?q=bar-zero")

    expect(page.locator(".queue-actions-form button[value=retry_all]")).to_be_disabled()
    expect(page.locator(".queue-actions-form button[value=purge_failed]")).to_be_disabled()


def test_the_queue_bar_enables_retry_once_a_job_fails_while_the_page_is_open(operator_page: Page, console: Console,
                                                                            mq: EchoMQ) -> None:
    page = operator_page
    mq.enqueue("bar-live", "x", delay_ms=3_600_000)
    page.goto(console.url + "queue/?q=bar-live")
    wait_until_live(page)
    retry_all = page.locator(".queue-actions-form button[value=retry_all]")
    expect(retry_all).to_be_disabled()

    failed_jobs(mq, "bar-live", 1)

    expect(retry_all).to_be_enabled(timeout=10_000)


def test_the_queue_bar_offers_pause_or_resume_as_the_queue_is(operator_page: Page, console: Console,
                                                             mq: EchoMQ) -> None:
    page = operator_page
    mq.enqueue("bar-pause", "x")
    page.goto(console.url + "queue/?q=bar-pause")
    wait_until_live(page)
    pause, resume = page.locator("button[value=pause]"), page.locator("button[value=resume]")
    expect(pause).to_be_visible()
    expect(resume).to_be_hidden()

    console.cli("pause", "bar-pause", "--reason", "deploy")

    expect(resume).to_be_visible(timeout=10_000)
    expect(pause).to_be_hidden()
    page.reload()
    expect(resume).to_be_visible()
    expect(pause).to_be_hidden()


def test_a_viewer_sees_no_result_boxes_and_no_controls_on_the_queue_page(page: Page, console: Console,
                                                                        mq: EchoMQ) -> None:
    mq.enqueue("bar-viewer", "x")
    page.goto(console.url + "queue/?q=bar-viewer")

    expect(page.locator(".audit-of-queue")).to_be_visible()
    for selector in ("#action-results", "#action-runs", ".queue-actions-form", ".queue-pause-form"):
        expect(page.locator(selector)).to_have_count(1 if selector.startswith("#") else 0)
        if selector.startswith("#"):
            expect(page.locator(selector)).to_be_hidden()
