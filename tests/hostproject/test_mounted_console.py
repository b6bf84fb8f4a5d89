"""In real Chromium, the console mounted in a host project under /ops/queues/ (tests/hostproject): the console's own
browser tests of a live page, a confirmed action and a search run against it (imported here, so they take this
folder's fixtures), and the host keeps its own pages, login, user model, CSP and static URL."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.test_confirmations import test_a_destructive_action_asks_with_the_count_and_only_yes_runs_it_once
from tests.browser.test_live import test_a_count_follows_a_cli_move_without_a_reload
from tests.browser.test_search import test_acting_on_a_search_asks_with_the_query_and_the_count_then_moves_them
from tests.support.browser import Console, wait_until_live

pytestmark = pytest.mark.browser

__all__ = [
    "test_a_count_follows_a_cli_move_without_a_reload",
    "test_a_destructive_action_asks_with_the_count_and_only_yes_runs_it_once",
    "test_acting_on_a_search_asks_with_the_query_and_the_count_then_moves_them",
]

# Every URL a console page names: links, forms, htmx requests, scripts, styles, its sockets.
_URLS = """() => [...document.querySelectorAll('[href], [action], [src], [hx-get], [hx-post], [ws-connect]')]
    .flatMap(e => ['href', 'action', 'src', 'hx-get', 'hx-post', 'ws-connect'].map(a => e.getAttribute(a)))
    .filter(u => u && u.startsWith('/'))"""


def test_every_url_on_the_console_pages_is_under_the_prefix_or_the_hosts_static_url(
        operator_page: Page, console: Console) -> None:
    console.cli("enqueue", "host-mail", "{}", "--id", "m1")
    console.cli("enqueue", "host-mail", "{}", "--id", "m2")
    console.cli("claim", "host-mail")
    page = operator_page
    named: set[str] = set()
    for path in ["", "queue/?q=host-mail&state=pending", "queue/?q=host-mail&state=active", "job/?q=host-mail&id=m2",
                 "search/?q=host-mail&state=pending", "audit/", "workers/", "cluster/"]:
        page.goto(console.url + path)
        named |= set(page.evaluate(_URLS))

    outside = {url for url in named if not url.startswith(("/ops/queues/", "/assets/", "/accounts/logout/"))}
    assert outside == set()
    assert any(url.startswith("/ops/queues/ws/") for url in named)
    assert any(url.startswith("/assets/") for url in named)


def test_the_live_page_socket_opens_under_the_prefix(page: Page, console: Console) -> None:
    sockets: list[str] = []
    page.on("websocket", lambda socket: sockets.append(socket.url))

    page.goto(console.url)
    wait_until_live(page)

    assert sockets and all("/ops/queues/ws/overview/" in url for url in sockets)


def test_a_signed_out_visitor_is_sent_to_the_hosts_login_and_back(browser: Browser, console: Console) -> None:
    context = browser.new_context()
    visitor = context.new_page()

    visitor.goto(console.url + "queue/?q=host-mail")

    expect(visitor.locator("form.host-login")).to_be_visible()
    assert "/accounts/login/?next=/ops/queues/queue/" in visitor.url
    visitor.fill("#id_username", "vera")
    visitor.fill("#id_password", "vera-password")
    visitor.click("button[type=submit]")
    visitor.wait_for_url(console.url + "queue/?q=host-mail")
    context.close()


def test_the_host_keeps_its_own_app_named_dashboard_its_pages_and_its_csp(page: Page, console: Console) -> None:
    host = console.url.removesuffix("ops/queues/")

    answer = page.goto(host + "dashboard/")
    assert answer is not None and answer.status == 200
    expect(page.locator(".host-panels li")).to_have_text(["Sales today"])
    console_answer = page.goto(console.url)
    assert console_answer is not None
    headers = console_answer.headers

    assert "script-src 'self'" in headers["content-security-policy"]
    assert "no-store" in headers["cache-control"]
    expect(page.locator(".who")).to_contain_text("vera · viewer")
