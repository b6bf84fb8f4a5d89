"""In real Chromium: every destructive action first shows the server's confirmation with what it touches now;
Escape or "Keep" leave the keyspace byte-identical; "Yes" runs it once; a replayed or another operator's
confirmation is refused in words."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ
from tests.support.browser import Console, create_operator, logged_in, wait_until_live
from tests.support.jobs import done_jobs, failed_jobs
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.browser


@dataclass(frozen=True)
class Case:
    name: str
    state: str  # the tab the button is on
    setup: Callable[[EchoMQ, str], list[str]]
    press: Callable[[Page, list[str]], None]
    question: Callable[[str, list[str]], str]
    after: Callable[[EchoMQ, str, list[str]], bool]


def _lapsed(mq: EchoMQ, q: str) -> list[str]:
    ids = mq.enqueue_many(q, ["x"] * 2)
    mq.claim(q, lease_ms=1, count=2)
    return ids


def _running(mq: EchoMQ, q: str) -> list[str]:
    ids = mq.enqueue_many(q, ["x"] * 2)
    mq.claim(q, lease_ms=600_000, count=2)
    return ids


def _pending(mq: EchoMQ, q: str) -> list[str]:
    return mq.enqueue_many(q, ["x"] * 3)


def _queue_button(action: str, any_age: bool = False) -> Callable[[Page, list[str]], None]:
    def press(page: Page, ids: list[str]) -> None:
        if any_age:
            page.select_option("select[name=older_than_ms]", "0")
        page.locator(f"button[value={action}]").click()
    return press


def _row_button(move: str) -> Callable[[Page, list[str]], None]:
    def press(page: Page, ids: list[str]) -> None:
        page.locator(f"#{dom_id('j', ids[0])} button[value={move}]").click()
    return press


def _ticked(move: str) -> Callable[[Page, list[str]], None]:
    def press(page: Page, ids: list[str]) -> None:
        for job_id in ids[:2]:
            box = page.locator(f"#pick-{dom_id('j', job_id)}")
            if not box.is_checked():
                box.check()
        page.locator(f"#selection-form button[value={move}]").click()
    return press


def _counts(mq: EchoMQ, q: str) -> dict[str, int]:
    return mq.stats(q).counts


CASES = [
    Case("purge done, any age", "done", lambda mq, q: done_jobs(mq, q, 4), _queue_button("purge_done", any_age=True),
         lambda q, ids: f"Purge 4 done jobs of {q}, of any age?", lambda mq, q, ids: _counts(mq, q)["done"] == 0),
    Case("purge failed, any age", "failed", lambda mq, q: failed_jobs(mq, q, 3),
         _queue_button("purge_failed", any_age=True),
         lambda q, ids: f"Purge 3 failed jobs of {q}, of any age?", lambda mq, q, ids: _counts(mq, q)["failed"] == 0),
    Case("retry all", "failed", lambda mq, q: failed_jobs(mq, q, 3), _queue_button("retry_all"),
         lambda q, ids: f"Retry 3 failed jobs of {q}?", lambda mq, q, ids: _counts(mq, q)["pending"] == 3),
    Case("recover all", "active", _lapsed, _queue_button("recover_all"),
         lambda q, ids: f"Recover 2 lapsed leases of {q}?", lambda mq, q, ids: _counts(mq, q)["pending"] == 2),
    Case("delete one", "failed", lambda mq, q: failed_jobs(mq, q, 2), _row_button("delete"),
         lambda q, ids: f"Delete job {ids[0]} (failed, attempts 1) from {q}?",
         lambda mq, q, ids: not mq.job(q, ids[0]).exists and mq.job(q, ids[1]).exists),
    Case("cancel one running job", "active", _running, _row_button("cancel"),
         lambda q, ids: f"Cancel running job {ids[0]} (active, attempts 1) of {q}?",
         lambda mq, q, ids: mq.job(q, ids[0]).state == "failed" and mq.job(q, ids[1]).state == "active"),
    Case("delete ticked", "failed", lambda mq, q: failed_jobs(mq, q, 3), _ticked("delete"),
         lambda q, ids: f"Delete 2 jobs ticked in {q}?",
         lambda mq, q, ids: _counts(mq, q)["failed"] == 1 and mq.job(q, ids[2]).exists),
    Case("cancel ticked", "pending", _pending, _ticked("cancel"),
         lambda q, ids: f"Cancel 2 jobs ticked in {q}?",
         lambda mq, q, ids: _counts(mq, q) == {"pending": 1, "active": 0, "done": 0, "failed": 2}),
]


def confirmation_fields(page: Page) -> dict[str, Any]:
    """What the open confirmation's form would post, its token included."""
    return page.evaluate("""() => {
        const form = document.querySelector('dialog.confirm-dialog form');
        const out = {};
        for (const [name, value] of new FormData(form)) (out[name] = out[name] || []).push(value);
        return {action: form.getAttribute('action'), fields: out};
    }""")


def post_as_page(page: Page, action: str, fields: dict[str, list[str]]) -> dict[str, Any]:
    """Posts the fields from this page (its cookies and CSRF token), as a crafted replay would."""
    return page.evaluate("""async ([action, fields]) => {
        const body = new URLSearchParams();
        for (const [name, values] of Object.entries(fields)) {
            if (name !== 'csrfmiddlewaretoken') for (const v of values) body.append(name, v);
        }
        const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
        const response = await fetch(action, {method: 'POST', body, headers: {'X-CSRFToken': token, 'HX-Request': 'true'}});
        return {status: response.status, text: await response.text()};
    }""", [action, fields])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_destructive_action_asks_with_the_count_and_only_yes_runs_it_once(operator_page: Page, console: Console,
                                                                           mq: EchoMQ, case: Case) -> None:
    page = operator_page
    queue = "confirm-" + case.name.replace(" ", "-").replace(",", "")
    ids = case.setup(mq, queue)
    page.goto(console.url + f"queue/?q={queue}&state={case.state}")
    wait_until_live(page)
    redis = console.redis.client()
    before = keyspace_dump(redis)
    dialog = page.locator("dialog.confirm-dialog")

    case.press(page, ids)
    expect(dialog).to_be_visible()
    expect(dialog.locator(".confirm-question")).to_have_text(case.question(queue, ids))
    assert page.evaluate("document.querySelector('dialog.confirm-dialog').matches(':modal')")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert keyspace_dump(redis) == before

    case.press(page, ids)
    expect(dialog).to_be_visible()
    dialog.locator("[data-dismiss]").click()
    expect(dialog).to_have_count(0)
    assert keyspace_dump(redis) == before

    case.press(page, ids)
    expect(dialog).to_be_visible()
    posted = confirmation_fields(page)
    dialog.locator("button.danger").click()
    expect(dialog).to_have_count(0)
    page.wait_for_function("() => document.querySelector('#action-runs .run-progress.finished, "
                           "#action-results .action-result.moved') !== null", timeout=10_000)
    assert case.after(mq, queue, ids)

    after = keyspace_dump(redis)
    replay = post_as_page(page, posted["action"], posted["fields"])
    assert replay["status"] == 409
    assert "refused: this confirmation has already been used: nothing was done again" in replay["text"]
    assert keyspace_dump(redis) == after


def test_another_operators_confirmation_is_refused_and_changes_nothing(browser: Browser, operator_page: Page,
                                                                       console: Console, mq: EchoMQ) -> None:
    queue = "confirm-other-user"
    failed_jobs(mq, queue, 3)
    create_operator(console, "olga", "olga-password")
    other = logged_in(browser, console, "olga", "olga-password")
    try:
        operator_page.goto(console.url + f"queue/?q={queue}&state=failed")
        operator_page.select_option("select[name=older_than_ms]", "0")
        operator_page.locator("button[value=purge_failed]").click()
        expect(operator_page.locator("dialog.confirm-dialog")).to_be_visible()
        posted = confirmation_fields(operator_page)
        other.goto(console.url + f"queue/?q={queue}&state=failed")
        redis = console.redis.client()
        before = keyspace_dump(redis)

        stolen = post_as_page(other, posted["action"], posted["fields"])

        assert stolen["status"] == 409
        assert "refused: this confirmation was issued to another user: nothing was done" in stolen["text"]
        assert keyspace_dump(redis) == before
        other.goto(console.url + f"audit/?queue={queue}")
        expect(other.locator("#audit-rows tbody tr").first).to_contain_text("olga")
        expect(other.locator("#audit-rows tbody tr").first).to_contain_text("refused: this confirmation was issued")
    finally:
        other.context.close()


def test_the_confirmation_shows_a_hostile_queue_name_as_text(operator_page: Page, console: Console, mq: EchoMQ) -> None:
    queue = "confirm-hostile-<b>name</b>"
    failed_jobs(mq, queue, 1)
    operator_page.goto(console.url + "queue/?" + urlencode({"q": queue, "state": "failed"}))
    operator_page.locator("button[value=retry_all]").click()
    expect(operator_page.locator("dialog.confirm-dialog .confirm-question")).to_have_text(f"Retry 1 failed job of {queue}?")
    assert operator_page.locator("dialog.confirm-dialog b").count() == 0
