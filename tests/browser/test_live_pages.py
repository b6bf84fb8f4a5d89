"""In real Chromium: the overview's filter lives in the URL and the server applies it to every push; the
disconnect banner means the page's own live socket is gone, and only that."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser


def shown_queues(page: Page) -> list[str]:
    return page.eval_on_selector_all("#overview-rows tr td.name", "cells => cells.map(c => c.textContent.trim())")


def test_the_filter_is_in_the_url_survives_reload_and_back_and_applies_to_pushed_rows(page: Page, console: Console,
                                                                                    mq: EchoMQ) -> None:
    for name in ("nc-alpha", "nc-beta", "zz-other"):
        mq.enqueue(name, "x")
    page.goto(console.url + "?filter=nc-")
    wait_until_live(page)
    # The live table follows the follower's list of queues, which learns a new queue within moments.
    expect(page.locator("#overview-rows tr td.name")).to_have_text(["nc-alpha", "nc-beta"], timeout=10_000)

    mq.enqueue("nc-gamma", "x")
    mq.enqueue("zz-other", "x")
    expect(page.locator(f"#{dom_id('q', 'nc-gamma')}")).to_be_visible(timeout=10_000)
    expect(page.locator(f"#{dom_id('q', 'nc-alpha')} td.pending")).to_have_text("1")
    assert "zz-other" not in shown_queues(page)

    page.locator(".queue-filter input").fill("zz-")
    page.wait_for_url(re.compile(r".*\?filter=zz-$"))
    expect(page.locator(f"#{dom_id('q', 'nc-alpha')}")).to_have_count(0, timeout=10_000)
    assert shown_queues(page) == ["zz-other"]

    page.reload()
    assert page.locator(".queue-filter input").input_value() == "zz-"
    assert shown_queues(page) == ["zz-other"]
    page.locator(f"#{dom_id('q', 'zz-other')} td.name a").click()
    page.wait_for_url(re.compile(r".*/queue/.*"))
    page.go_back()
    page.wait_for_url(re.compile(r".*\?filter=zz-$"))
    assert page.locator(".queue-filter input").input_value() == "zz-"
    wait_until_live(page)
    mq.enqueue("nc-delta", "x")
    mq.enqueue("zz-other", "x")
    expect(page.locator(f"#{dom_id('q', 'zz-other')} td.pending")).to_have_text("3", timeout=10_000)
    assert shown_queues(page) == ["zz-other"]


def test_a_finished_runs_socket_closing_raises_no_disconnect_banner(operator_page: Page, console: Console,
                                                                    mq: EchoMQ) -> None:
    page = operator_page
    failed_jobs(mq, "no-false-alarm", 3)
    page.goto(console.url + "queue/?q=no-false-alarm&state=failed")
    wait_until_live(page)
    page.evaluate("""window.closedSockets = [];
        document.addEventListener('htmx:wsClose', (e) => window.closedSockets.push(e.detail.event.code));""")

    page.locator("button[value=retry_all]").click()
    page.locator("dialog.confirm-dialog button.danger").click()
    expect(page.locator(".run-progress").first).to_contain_text("finished", timeout=10_000)
    page.wait_for_function("() => window.closedSockets.includes(1000)", timeout=10_000)

    expect(page.locator("#live-status")).to_be_hidden()


def test_the_banner_shows_while_the_pages_socket_is_gone_and_clears_when_it_is_back(page: Page,
                                                                                  console: Console) -> None:
    cut = {"on": False}
    sockets: list[WebSocketRoute] = []

    def route(ws: WebSocketRoute) -> None:
        if cut["on"]:
            ws.close(code=1012, reason="the console restarts")
            return
        sockets.append(ws)
        server = ws.connect_to_server()
        server.on_message(ws.send)
        ws.on_message(server.send)

    page.route_web_socket(re.compile(r".*/ws/overview/.*"), route)
    page.goto(console.url)
    wait_until_live(page)
    banner = page.locator("#live-status")
    expect(banner).to_be_hidden()

    cut["on"] = True
    sockets[-1].close(code=1012, reason="the console restarts")
    expect(banner).to_be_visible(timeout=15_000)
    expect(banner).to_contain_text("disconnected")

    cut["on"] = False
    expect(banner).to_be_hidden(timeout=10_000)
