"""In real Chromium: every select shows what its page shows, from the link that opened it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import Console

pytestmark = pytest.mark.browser


def test_the_search_form_shows_the_state_its_link_names(page: Page, console: Console) -> None:
    page.goto(console.url + "search/?q=orders&state=failed")

    expect(page.locator(".search-form select[name=state]")).to_have_value("failed")


def test_a_search_link_with_an_unknown_state_says_so_and_selects_no_other(page: Page, console: Console) -> None:
    page.goto(console.url + "search/?q=orders&state=bogus&payload=x")

    expect(page.locator("#search-results [role=alert]")).to_contain_text("unknown state 'bogus'")
    expect(page.locator(".search-form select[name=state]")).to_have_value("bogus")


def test_the_queue_pages_search_shows_the_state_of_the_page(page: Page, console: Console) -> None:
    console.cli("enqueue", "select-me", "{}")
    page.goto(console.url + "queue/?q=select-me&state=done")

    expect(page.locator(".queue-search select[name=state]")).to_have_value("done")
