"""In real Chromium: the page-size control and ``limit`` are honoured, and a live push of a page larger than
one message comes in parts the page puts together: every row stays."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.jobs import failed_job, failed_jobs

pytestmark = pytest.mark.browser


def test_the_page_size_control_shows_200_rows_and_a_push_keeps_all_of_them(page: Page, console: Console,
                                                                           mq: EchoMQ) -> None:
    failed_jobs(mq, "sized", 230, payload="é" * 3000)
    page.goto(console.url + "queue/?q=sized&state=failed")
    expect(page.locator("#queue-jobs tbody tr[data-job]")).to_have_count(50)

    page.locator(".page-size select[name=limit]").select_option("200")

    page.wait_for_url("**limit=200**")
    rows = page.locator("#queue-jobs tbody tr[data-job]")
    expect(rows).to_have_count(200)
    expect(page.locator(".page-size select[name=limit]")).to_have_value("200")
    wait_until_live(page)
    failed_job(mq, "sized", "newest", payload="é" * 3000)
    expect(page.locator(f"#{dom_id('j', 'newest')}")).to_be_visible(timeout=15_000)
    expect(rows).to_have_count(200)
    assert rows.first.get_attribute("data-job") == "newest"
