"""In real Chromium: the overview is paged and sorted on the server, its paging and sort links keep the
filter, and its rows hold still under the pointer while a push brings another queue onto the page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.jobs import failed_jobs, many_queues

pytestmark = pytest.mark.browser


def shown_queues(page: Page) -> list[str]:
    return page.eval_on_selector_all("#overview-rows tr td.name a", "links => links.map(a => a.textContent.trim())")


def test_paging_and_sorting_keep_the_filter_and_the_rows_hold_still_under_the_pointer(
        page: Page, console: Console, mq: EchoMQ) -> None:
    names = many_queues(mq, 120, prefix="pg-", jobs=1)
    many_queues(mq, 5, prefix="elsewhere-", jobs=1)
    failed_jobs(mq, "pg-x-broken", 1)
    page.goto(console.url + "?filter=pg-")
    wait_until_live(page)
    expect(page.locator(".overview-pager .position")).to_contain_text("1–50 of 121")
    assert shown_queues(page) == names[:50]

    page.locator(".overview-pager a[rel=next]").click()
    page.wait_for_url(re.compile(r".*\?filter=pg-&offset=50$"))
    assert shown_queues(page) == names[50:100]

    page.locator("th a.sort-link[data-sort=failed]").click()
    page.wait_for_url(re.compile(r".*\?filter=pg-&sort=failed$"))
    expect(page.locator("#overview-rows tr td.name a").first).to_have_text("pg-x-broken", timeout=10_000)
    expect(page.locator(".overview-pager .position")).to_contain_text("sorted by failed jobs, most first")

    page.locator(".queue-filter input[name=filter]").fill("pg-0011")
    page.wait_for_url(re.compile(r".*\?filter=pg-0011&sort=failed$"))
    expect(page.locator("#overview-rows tr td.name a")).to_have_count(10, timeout=10_000)
    assert shown_queues(page) == names[110:120]
    assert "filter=pg-0011" in (page.locator("th a.sort-link[data-sort=name]").get_attribute("href") or "")

    page.locator("#overview-rows tr td.name").nth(3).hover()
    many_queues(mq, 1, prefix="pg-00110-new-", jobs=1)
    expect(page.locator("#overview-waiting")).to_contain_text("1 new queue", timeout=20_000)
    assert shown_queues(page) == names[110:120]

    page.mouse.move(5, 5)
    expect(page.locator("#overview-rows tr td.name a")).to_have_count(11, timeout=10_000)
    # A queue the census has not read yet sorts last by count; once read, it takes its place by name.
    expect(page.locator("#overview-rows tr td.name a").nth(1)).to_have_text("pg-00110-new-00000", timeout=20_000)
    expect(page.locator("#overview-waiting")).to_be_hidden()
