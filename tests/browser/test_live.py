from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from dashboard.presenters import dom_id
from tests.support.browser import Console, wait_until_live

pytestmark = pytest.mark.browser


def test_a_count_follows_a_cli_move_without_a_reload(page: Page, console: Console) -> None:
    # How fast is measured by bench.console_live (move-to-screen p50/p95), not
    # asserted here: on a loaded machine a second is not a promise a test can keep.
    console.cli("enqueue", "cli-mail", '{"n": 1}')
    page.goto(console.url)
    due = page.locator(f"#{dom_id('q', 'cli-mail')} td.pending")
    expect(due).to_have_text("1")
    wait_until_live(page)
    page.evaluate("window.notReloaded = true")

    console.cli("enqueue", "cli-mail", '{"n": 2}')
    expect(due).to_have_text("2", timeout=15_000)

    assert page.evaluate("window.notReloaded") is True


def test_a_live_page_outlives_the_idle_connection_timeout(page: Page, console: Console) -> None:
    console.cli("enqueue", "cli-idle", '{"n": 1}')
    page.goto(console.url)
    wait_until_live(page)
    page.evaluate("window.notReloaded = true")
    page.wait_for_timeout(3 * 2_000)  # three of the console's idle timeouts (EMQ_IDLE_TIMEOUT_S=2 here)

    console.cli("enqueue", "cli-idle", '{"n": 2}')
    expect(page.locator(f"#{dom_id('q', 'cli-idle')} td.pending")).to_have_text("2", timeout=15_000)
    expect(page.locator("#live-status")).to_be_hidden()
    assert page.evaluate("window.notReloaded") is True


def test_a_lease_countdown_goes_down_even_on_a_skewed_clock(page: Page, console: Console) -> None:
    console.cli("enqueue", "cli-leases", '{"n": 1}', "--id", "leased")
    console.cli("claim", "cli-leases", "--lease-ms", "60000")
    # The laptop's clock is an hour fast: the countdown must still follow Redis's.
    page.clock.install(time=datetime.now() + timedelta(hours=1))
    page.goto(console.url + "job/?q=cli-leases&id=leased")
    countdown = page.locator("#job-core .countdown")

    started = time.monotonic()
    first = _seconds_left(countdown.inner_text())
    second = first
    # It ticks once a second; a loaded machine may hold a tick back, so the test waits for one (10 s at most) and
    # checks the countdown went down by no more than the time that passed.
    while second >= first and time.monotonic() - started < 10:
        page.wait_for_timeout(500)
        second = _seconds_left(countdown.inner_text())
    waited = time.monotonic() - started

    assert 50 < first <= 60
    assert second < first and first - second <= waited + 1.5


def _seconds_left(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d)?) s left", text.strip())
    assert match, f"not a countdown: {text!r}"
    return float(match.group(1))


def test_the_banner_appears_when_redis_stops_and_goes_when_it_returns(page: Page, console: Console) -> None:
    console.cli("enqueue", "cli-outage", '{"n": 1}')
    page.goto(console.url)
    wait_until_live(page)
    banner = page.locator("#redis-status")
    expect(banner).to_be_hidden()

    console.redis.stop()
    try:
        expect(banner).to_be_visible(timeout=15_000)
    finally:
        console.redis.start()
    expect(banner).to_be_hidden(timeout=15_000)

    console.cli("enqueue", "cli-after", '{"n": 1}')
    expect(page.locator(f"#{dom_id('q', 'cli-after')} td.pending")).to_have_text("1", timeout=15_000)


def test_pages_served_by_two_daphne_processes_both_follow_a_move(page: Page, console: Console,
                                                                 second_console: str) -> None:
    # Cookies are per host, not per port: the one login is good for both processes,
    # as it would be behind one address.
    console.cli("enqueue", "two-procs", '{"n": 1}')
    other = page.context.new_page()
    page.goto(console.url)
    other.goto(second_console)
    counts = [p.locator(f"#{dom_id('q', 'two-procs')} td.pending") for p in (page, other)]
    for count, shown in zip(counts, (page, other)):
        expect(count).to_have_text("1")
        wait_until_live(shown)

    console.cli("enqueue", "two-procs", '{"n": 2}')

    for count in counts:
        expect(count).to_have_text("2", timeout=15_000)
