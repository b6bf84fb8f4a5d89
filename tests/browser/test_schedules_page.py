"""In real Chromium: the schedules page lists a schedule with its ticks and recent outcomes; "Run now" and "Pause"
first show the server's confirmation (Escape leaves the keyspace byte-identical, "Yes" does it once); a viewer
sees no button; at 390 px, in both colour schemes, the page needs no sideways scroll."""

from __future__ import annotations

from typing import Literal

import pytest
from playwright.sync_api import Browser, Page, expect

from queues import EchoMQ
from queues.scheduler import Ticker
from queues.schedules import Definition, add_schedule, get_schedule
from tests.support.browser import Console, logged_in
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.browser


def _schedule(mq: EchoMQ, queue: str) -> None:
    since = mq.server_time_ms(queue) - 600_000
    add_schedule(mq, queue, "every-minute", Definition.of(every_ms=60_000, payload='{"report": 1}'), now_ms=since)
    ticker = Ticker(mq)
    first = get_schedule(mq, queue, "every-minute").next_ms
    assert first is not None
    for step in range(3):
        ticker.run_round(now_ms=first + step * 60_000)
    [job] = mq.claim(queue, lease_ms=60_000)
    mq.complete(queue, job.id, job.token)


def test_run_now_and_pause_ask_first_and_escape_changes_nothing(operator_page: Page, console: Console,
                                                                mq: EchoMQ) -> None:
    page = operator_page
    queue = "schedules-browser"
    _schedule(mq, queue)
    page.goto(console.url + f"schedules/?q={queue}")
    row = page.locator("tr.schedule-row", has_text="every-minute")
    expect(row).to_contain_text("every 1 min")
    expect(row.locator(".last-outcome")).to_have_text("pending")
    assert row.locator("svg.outcomes rect").count() == 3
    redis = console.redis.client()
    before = keyspace_dump(redis)
    dialog = page.locator("dialog.confirm-dialog")

    row.locator("button[value=schedule_run]").click()
    expect(dialog).to_be_visible()
    expect(dialog.locator(".confirm-question")).to_contain_text(f"Run schedule every-minute now: enqueue one job into {queue}")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert keyspace_dump(redis) == before

    row.locator("button[value=schedule_run]").click()
    dialog.locator("button[type=submit]").click()
    expect(page.locator("#action-results .action-result").first).to_contain_text("enqueued every-minute:run:")
    assert get_schedule(mq, queue, "every-minute").runs == 1
    assert mq.stats(queue).counts["pending"] == 3

    page.reload()
    row.locator("button[value=schedule_pause]").click()
    expect(dialog.locator(".confirm-question")).to_contain_text("Pause schedule every-minute")
    dialog.locator("button[type=submit]").click()
    expect(page.locator("#action-results .action-result").first).to_contain_text("paused")
    assert get_schedule(mq, queue, "every-minute").paused


def test_a_viewer_sees_the_schedule_and_no_button(page: Page, console: Console, mq: EchoMQ) -> None:
    queue = "schedules-viewer"
    _schedule(mq, queue)
    page.goto(console.url + f"schedules/?q={queue}")

    expect(page.locator("tr.schedule-row", has_text="every-minute")).to_be_visible()
    assert page.locator("form.schedule-actions").count() == 0


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_schedules_page_fits_390_px(browser: Browser, console: Console, operator_login: tuple[str, str],
                                        mq: EchoMQ, scheme: Literal["light", "dark"]) -> None:
    queue = f"schedules-narrow-{scheme}-" + "a-long-queue-name-" * 3
    _schedule(mq, queue)
    phone = logged_in(browser, console, *operator_login, viewport={"width": 390, "height": 844})
    try:
        phone.emulate_media(color_scheme=scheme)
        for path in [f"schedules/?q={queue}", f"schedules/edit/?q={queue}&name=every-minute"]:
            phone.goto(console.url + path)
            phone.wait_for_load_state("networkidle")
            width = phone.evaluate("[document.documentElement.scrollWidth, innerWidth]")
            assert width[0] <= width[1], (path, width)
        phone.goto(console.url + f"schedules/?q={queue}")
        button = phone.locator("button[value=schedule_run]").bounding_box()
        assert button is not None and 0 <= button["x"] and button["x"] + button["width"] <= 390
    finally:
        phone.context.close()
