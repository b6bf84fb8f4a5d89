"""In real Chromium: a search streams its matches while it runs, and Stop ends it; the results fit a phone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from queues import EchoMQ, QueueKeys, moves
from tests.support.browser import Console
from tests.support.daphne import start_daphne, stop_daphne

pytestmark = pytest.mark.browser

QUEUE = "browser-search"
FILLER = 20_000

# Pending jobs as enqueue writes them, in bulk (test data only): the first `hits` carry the text searched for.
_FILL = """
local prefix = KEYS[1]
local first, count, hits = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for n = first, first + count - 1 do
  local id = string.format('s%07d', n)
  local payload = n < hits and ('{"customer": "needle-' .. n .. '"}') or '{"customer": "hay"}'
  redis.call('HSET', prefix .. 'job:' .. id, 'state', 'pending', 'attempts', 0, 'payload', payload,
    'max_attempts', 3, 'created_at', 1)
  redis.call('ZADD', prefix .. 'pending', n, id)
end
return count
"""


@pytest.fixture(scope="module")
def haystack(console: Console) -> Iterator[EchoMQ]:
    """FILLER pending jobs, the oldest three of which hold "needle": a search finds them at once and then
    keeps walking the rest (one entry per step on the slow console: many seconds, however fast the machine)."""
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    fill = mq.redis.register_script(_FILL)
    prefix = QueueKeys(QUEUE).prefix
    for start in range(0, FILLER, 20_000):
        fill(keys=[prefix], args=[start, 20_000, 3])
    mq.redis.sadd("emq:queues", QUEUE)
    yield mq
    keys = QueueKeys(QUEUE)
    for start in range(0, FILLER, 10_000):
        mq.redis.unlink(*[keys.job(f"s{n:07d}") for n in range(start, min(start + 10_000, FILLER))])
    mq.redis.unlink(keys.pending)
    mq.redis.srem("emq:queues", QUEUE)
    mq.close()


@pytest.fixture(scope="module")
def slow_console(console: Console) -> Iterator[str]:
    """Another daphne on the same Redis and database whose searches look at one entry per step."""
    workdir = Path(console.env["EMQ_CONSOLE_WORKDIR"])
    url, daphne = start_daphne({**console.env, "EMQ_SEARCH_STEP_ENTRIES": "1"}, workdir, "daphne-slow-search")
    try:
        yield url
    finally:
        stop_daphne(daphne)


def test_a_search_lists_matches_while_it_runs_and_stop_ends_it(page: Page, slow_console: str,
                                                               haystack: EchoMQ) -> None:
    # Cookies are per host, not per port: the login is good for the other process too.
    page.goto(slow_console + f"queue/?q={QUEUE}&state=pending")
    form = page.locator(".queue-search form")
    form.locator("input[name=payload]").fill("needle")
    form.locator("button[type=submit]").click()

    matches = page.locator(".search-match")
    expect(matches).to_have_count(3, timeout=10_000)
    progress = page.locator(".search-progress")
    assert progress.inner_text().startswith("Searching…")  # the matches came before the search ended
    assert page.url.endswith(f"queue/?q={QUEUE}&state=pending")  # in place, no reload
    page.locator(".search-stop button").click()

    expect(progress).to_contain_text("Stopped:", timeout=10_000)
    expect(progress).to_contain_text("stopped by you")
    looked = int(re.search(r"3 matched of ([\d]+) pending", progress.inner_text()).group(1))  # type: ignore[union-attr]
    assert looked < FILLER
    assert [m.locator("a.id").inner_text() for m in matches.all()] == ["s0000000", "s0000001", "s0000002"]


def test_search_results_need_no_sideways_scroll_on_a_phone(browser: Browser, console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    mq.enqueue("phone-search", '{"note": "' + "long-words-without-spaces" * 20 + '"}', job_id="p" * 200,
               max_attempts=1)
    [job] = mq.claim("phone-search")
    mq.run(moves.fail("phone-search", job.id, job.token, error="E" * 300, backoff_ms=0))
    context = browser.new_context(viewport={"width": 390, "height": 844})
    phone = context.new_page()
    phone.goto(console.url + "login/")
    phone.fill("#id_username", "vera")
    phone.fill("#id_password", "vera-password")
    phone.click("button[type=submit]")
    phone.wait_for_url(console.url)

    phone.goto(console.url + "search/?q=phone-search&state=failed&payload=long-words")

    expect(phone.locator(".search-progress")).to_contain_text("Finished:", timeout=10_000)
    expect(phone.locator(".search-match")).to_have_count(1)
    # The page's own parts (the shared header is the base layout's business) stay within the screen.
    right = phone.evaluate("Math.max(...[...document.querySelectorAll('main, main *')]"
                           ".map(e => e.getBoundingClientRect().right))")
    assert right <= 390
    context.close()
    mq.close()


def test_acting_on_a_search_asks_with_the_query_and_the_count_then_moves_them(operator_page: Page,
                                                                              console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    queue = "browser-search-act"
    for n, error in enumerate(["timeout after 3012 ms"] * 4 + ["card declined"] * 2):
        mq.enqueue(queue, "{}", job_id=f"a{n}", max_attempts=1)
        [job] = mq.claim(queue)
        mq.run(moves.fail(queue, job.id, job.token, error=error, backoff_ms=0))
    page = operator_page
    page.goto(console.url + f"queue/?q={queue}&state=failed")
    form = page.locator(".queue-search form")
    form.locator("input[name=error]").fill("timeout")
    form.locator("button[type=submit]").click()
    expect(page.locator(".search-progress")).to_contain_text("Finished:", timeout=10_000)

    page.locator(".search-act-form button[value=retry]").click()

    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".confirm-question")).to_have_text(
        f"Retry the 4 jobs the search found: failed jobs whose error contains 'timeout', in {queue}?")
    assert mq.stats(queue).counts["failed"] == 6  # nothing moved before the confirmation
    dialog.locator("button.danger").click()
    expect(page.locator(".run-progress .tally")).to_contain_text("4 moved, 0 skipped", timeout=15_000)
    assert mq.stats(queue).counts == {"pending": 4, "active": 0, "done": 0, "failed": 2}
    mq.close()


def test_acting_on_a_failure_group_shows_the_confirmation_with_its_count(operator_page: Page,
                                                                         console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    queue = "browser-groups"
    for n, error in enumerate([f"timeout after {3000 + n} ms on host h{n}" for n in range(3)] + ["card declined"]):
        mq.enqueue(queue, "{}", job_id=f"g{n}", max_attempts=1)
        [job] = mq.claim(queue)
        mq.run(moves.fail(queue, job.id, job.token, error=error, backoff_ms=0))
    page = operator_page
    page.goto(console.url + f"failures/?q={queue}")
    first = page.locator(".failure-group").first
    expect(first.locator(".signature")).to_have_text("timeout after <n> ms on host <id>")

    first.locator(".group-act-form button[value=retry]").click()

    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".confirm-question")).to_contain_text(
        "Retry the 3 jobs in the failure group “timeout after <n> ms on host <id>”")
    assert page.evaluate("document.querySelector('dialog.confirm-dialog').matches(':modal')")
    assert mq.stats(queue).counts["failed"] == 4
    dialog.locator("button.danger").click()
    expect(page.locator(".run-progress .tally")).to_contain_text("3 moved, 0 skipped", timeout=15_000)
    assert mq.stats(queue).counts == {"pending": 3, "active": 0, "done": 0, "failed": 1}
    mq.close()


def test_acting_on_a_search_of_many_queues_asks_once_with_the_query_the_total_and_each_queue(
        operator_page: Page, console: Console) -> None:
    mq = EchoMQ.from_url(console.redis.url, actor="browser-test")
    for queue, count in (("browser-many-a", 2), ("browser-many-b", 1)):
        for n in range(count):
            mq.enqueue(queue, "{}", job_id=f"m{n}", max_attempts=1)
            [job] = mq.claim(queue)
            mq.run(moves.fail(queue, job.id, job.token, error="zebra quota exceeded", backoff_ms=0))
    page = operator_page
    page.goto(console.url + "search/?state=failed&error=zebra+quota&in=browser-many")
    expect(page.locator(".search-progress")).to_contain_text("Finished:", timeout=10_000)
    everything = page.locator(".search-act-all")
    expect(everything).to_contain_text("All 3 matches in 2 queues:")

    everything.locator("button[value=retry]").click()

    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".confirm-question")).to_have_text(
        "Retry the 3 jobs the search found: failed jobs whose error contains 'zebra quota', in "
        "2 queues (browser-many-a 2, browser-many-b 1)?")
    assert mq.stats("browser-many-a").counts["failed"] == 2  # nothing moved before the confirmation
    dialog.locator("button.danger").click()
    expect(page.locator(".run-progress .tally")).to_contain_text("3 moved, 0 skipped", timeout=15_000)
    expect(page.locator(".run-progress")).to_contain_text("on 2 queues")
    assert [mq.stats(q).counts["pending"] for q in ("browser-many-a", "browser-many-b")] == [2, 1]
    mq.close()
