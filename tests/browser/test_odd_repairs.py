"""In real Chromium: odd data is repaired from the page it shows on, after the server's confirmation. A job
without a state is deleted from its page; a state set of another type (which makes the whole queue unreadable)
is removed from the queue page. "Keep" leaves the keyspace byte-identical; "Yes" repairs it once."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ, QueueKeys
from tests.support.browser import Console
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.browser


def test_a_job_without_a_state_is_deleted_from_its_page(operator_page: Page, console: Console, mq: EchoMQ) -> None:
    keys = QueueKeys("repair-stateless")
    mq.redis.hset(keys.job("nostate"), mapping={"attempts": "2", "payload": "x"})
    mq.redis.zadd(keys.pending, {"nostate": 1})
    mq.redis.sadd("emq:queues", keys.queue)
    redis = console.redis.client()
    page = operator_page
    page.goto(console.url + f"job/?q={keys.queue}&id=nostate")
    dialog = page.locator("dialog.confirm-dialog")
    before = keyspace_dump(redis)

    page.locator("#job-actions button[value=delete]").click()
    expect(dialog).to_be_visible()
    expect(dialog.locator(".confirm-question")).to_have_text(f"Delete job nostate (no state, attempts 2) from {keys.queue}?")
    dialog.locator("[data-dismiss]").click()
    expect(dialog).to_have_count(0)
    assert keyspace_dump(redis) == before

    page.locator("#job-actions button[value=delete]").click()
    dialog.locator("button.danger").click()
    expect(page.locator("#action-results .action-result.moved")).to_contain_text("deleted: job nostate is now deleted")
    assert not redis.exists(keys.job("nostate")) and redis.zcard(keys.pending) == 0


def test_a_state_set_of_another_type_is_removed_from_the_queue_page(operator_page: Page, console: Console,
                                                                  mq: EchoMQ) -> None:
    keys = QueueKeys("repair-wrongtype")
    mq.enqueue(keys.queue, "x", job_id="kept")
    mq.redis.set(keys.failed, "junk")
    redis = console.redis.client()
    page = operator_page
    page.goto(console.url + f"queue/?q={keys.queue}")
    expect(page.locator("#read-error")).to_contain_text("holds a string")
    dialog = page.locator("dialog.confirm-dialog")
    before = keyspace_dump(redis)

    page.locator("#remove-key").click()
    # The dialog is in the page a moment before it is shown modal (htmx:load, after the settle): an Escape
    # pressed in between reaches no dialog.
    expect(dialog).to_be_visible()
    expect(dialog.locator(".confirm-question")).to_have_text(
        f"Remove the failed set (it holds a string, not a sorted set) of {keys.queue}?")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert keyspace_dump(redis) == before

    page.locator("#remove-key").click()
    dialog.locator("button.danger").click()
    expect(page.locator("#action-results .action-result.moved")).to_contain_text(
        f"removed: the failed set of {keys.queue} held a string")
    assert not redis.exists(keys.failed)
    page.goto(console.url + f"queue/?q={keys.queue}")
    expect(page.locator("#queue-jobs")).to_contain_text("kept")
