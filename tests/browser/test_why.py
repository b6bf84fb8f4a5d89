"""The why line as a person sees it: at the top of the queue page, following a pause live, and "unknown" (never
a made-up answer) while Redis does not answer."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from tests.support.browser import Console, wait_until_live
from tests.support.redis_servers import RedisServer

pytestmark = pytest.mark.browser


@contextmanager
def redis_not_answering(server: RedisServer) -> Iterator[None]:
    """Redis takes every connection and command and answers none (its process stopped) until the block ends.

    As a CLIENT PAUSE would, but over as soon as the test has seen what it waited for: a pause must be long
    enough for the slowest machine to show it (an UNPAUSE would wait behind it), and every run waited it out.
    """
    assert server.process is not None
    server.process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        server.process.send_signal(signal.SIGCONT)


def test_the_why_line_is_the_first_thing_on_the_queue_page_and_follows_a_pause(page: Page, console: Console,
                                                                              mq: EchoMQ) -> None:
    console.cli("enqueue", "why-mail", '{"n": 1}')
    page.goto(console.url + "queue/?q=why-mail")
    line = page.locator("#why-line")
    expect(line).to_be_visible()
    expect(line.locator(".why-code").first).to_have_text("no_live_worker")
    assert page.evaluate("() => { const why = document.getElementById('why-line'); const rest = document.querySelector("
                         "'main section:not(#why-line)'); return !!rest && why.compareDocumentPosition(rest) === "
                         "Node.DOCUMENT_POSITION_FOLLOWING; }")
    wait_until_live(page)

    console.cli("pause", "why-mail", "--reason", "db migration")

    expect(line.locator(".why-code").first).to_have_text("paused", timeout=15_000)
    expect(line).to_contain_text("db migration")
    mq.resume("why-mail")


def test_the_why_line_says_unknown_while_redis_is_paused(page: Page, console: Console) -> None:
    console.cli("enqueue", "why-paused", '{"n": 1}', "--id", "j")
    page.goto(console.url + "job/?q=why-paused&id=j")
    line = page.locator("#why-line")
    expect(line.locator(".why-code").first).to_have_text("no_live_worker")
    wait_until_live(page)

    # The console's reads time out after 2 s; a loaded machine may take several seconds more to push what it saw.
    with redis_not_answering(console.redis):
        expect(line.locator(".why-code").first).to_have_text("unknown", timeout=30_000)
        expect(line.locator(".figure.unknown")).to_be_visible()
    expect(line.locator(".why-code").first).to_have_text("no_live_worker", timeout=40_000)


def test_the_queue_pages_counts_say_stale_while_redis_is_paused(page: Page, console: Console) -> None:
    console.cli("enqueue", "why-stale", '{"n": 1}')
    page.goto(console.url + "queue/?q=why-stale")
    mark = page.locator("#queue-summary .figures-mark")
    expect(mark).to_contain_text("exact as of")
    wait_until_live(page)

    with redis_not_answering(console.redis):
        expect(mark).to_contain_text("stale", timeout=30_000)
        expect(page.locator('#queue-summary .count[data-state="pending"]')).to_have_text("1")
    expect(mark).to_contain_text("exact as of", timeout=40_000)
