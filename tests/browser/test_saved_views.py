"""In real Chromium: a search saved from its results opens again by its permalink, a frozen one names the same jobs,
and the saved views and alerts pages fit a phone's width."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from queues import EchoMQ
from tests.support.browser import Console, logged_in
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser


def test_a_search_saved_from_its_results_opens_again_by_its_permalink(operator_page: Page, console: Console,
                                                                       mq: EchoMQ) -> None:
    ids = failed_jobs(mq, "saved-mail", 3, error="smtp refused")
    page = operator_page
    page.goto(console.url + "search/?" + urlencode({"q": "saved-mail", "state": "failed", "error": "smtp",
                                                    "finished_after": "1h"}))
    expect(page.locator(".search-matches li")).to_have_count(3)

    page.locator("details.save-view summary").click()
    form = page.locator("form.save-view-form")
    form.locator("input[name=name]").fill("smtp refusals")
    form.locator("input[name=shared]").check()
    form.locator("input[name=freeze]").check()
    form.locator("button[type=submit]").click()

    row = page.locator("table.saved-views tr.just-saved")
    expect(row).to_contain_text("smtp refusals")
    expect(row).to_contain_text("frozen")
    expect(row).to_contain_text("the team")
    failed_jobs(mq, "saved-mail", 2, error="smtp refused")  # after the freeze: not in the view
    row.locator("td a").first.click()
    expect(page.locator(".search-matches li")).to_have_count(3)
    shown = page.locator(".search-matches li").all_inner_texts()
    assert all(any(job_id in text for job_id in ids) for text in shown)


@pytest.fixture
def phone(browser: Browser, console: Console, operator_login: tuple[str, str]) -> Iterator[Page]:
    page = logged_in(browser, console, *operator_login, viewport={"width": 390, "height": 844})
    yield page
    page.context.close()


def test_the_views_and_alerts_pages_fit_390_px(phone: Page, console: Console) -> None:
    wide = {}
    for path in ("views/", "alerts/", "alerts/new/?kind=why&q=mail"):
        phone.goto(console.url + path)
        phone.wait_for_load_state("networkidle")
        width = phone.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        if width[0] > width[1]:
            wide[path] = width
    assert wide == {}
