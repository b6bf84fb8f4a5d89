"""In real Chromium: the page-size control and ``limit`` are honoured, and a live push of a page larger than
one message comes in parts the page puts together: every row stays."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.jobs import failed_job, failed_jobs, many_queues

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


def test_the_overview_shows_200_queues_and_a_push_of_them_in_parts_holds_still_under_the_pointer(
        page: Page, console: Console, mq: EchoMQ) -> None:
    names = many_queues(mq, 230, prefix="ps-", jobs=1)
    for name in names:
        # A long reason in each row's title: a page of 200 rows is several live messages.
        mq.pause(name, reason="held for the size test " * 50)
    shown = page.locator("#overview-rows tr td.name a")
    page.goto(console.url + "?filter=ps-")
    expect(shown).to_have_count(50)

    page.locator(".overview-pager .page-size select[name=limit]").select_option("200")

    page.wait_for_url("**filter=ps-&limit=200")
    expect(shown).to_have_count(200)
    expect(page.locator(".overview-pager .position")).to_contain_text("1–200 of 230")
    wait_until_live(page)
    shown.nth(3).hover()
    many_queues(mq, 1, prefix="ps-00000-new-", jobs=1)
    expect(page.locator("#overview-waiting")).to_contain_text("1 new queue", timeout=20_000)
    assert shown.all_text_contents() == names[:200]

    page.mouse.move(5, 5)
    expect(shown.nth(1)).to_have_text("ps-00000-new-00000", timeout=20_000)
    expect(shown).to_have_count(200)
    assert shown.all_text_contents() == [names[0], "ps-00000-new-00000", *names[1:199]]
