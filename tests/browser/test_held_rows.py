"""In real Chromium, with jobs moving under the open queue page: the rows hold still while the operator works
in the table, a press acts on the job of its row or is refused in words, never on another job; the keyboard
reaches every row and keeps its place while updates arrive."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ, QueueKeys, moves
from tests.support.browser import Console, wait_until_live
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser


@dataclass
class Traffic:
    """Jobs that fail and are deleted again in the queue, in pipelined batches: rows come and go at the top."""

    url: str
    queue: str
    moves_per_s: float = 300.0
    moved: int = 0
    seconds: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)

    def run(self) -> None:
        mq = EchoMQ.from_url(self.url, actor="traffic")
        started = time.monotonic()
        shown: list[list[str]] = []
        try:
            while not self.stop.is_set():
                batch = 5
                ids = mq.enqueue_many(self.queue, ["t"] * batch, max_attempts=1)
                claimed = [j for j in mq.claim(self.queue, lease_ms=60_000, count=batch) if j.id in set(ids)]
                mq.run_many([moves.fail(self.queue, j.id, j.token, error="traffic", backoff_ms=0) for j in claimed])
                shown.append([j.id for j in claimed])
                self.moved += batch + 2 * len(claimed)
                if len(shown) > random.randint(0, 2):
                    old = shown.pop(0)
                    mq.run_many([moves.operator_move("delete", self.queue, j, expect_state="failed",
                                                     expect_attempts="1", actor="traffic") for j in old])
                    self.moved += len(old)
                self.seconds = time.monotonic() - started
                ahead = self.moved / self.moves_per_s - self.seconds
                if ahead > 0:
                    time.sleep(ahead)
        except Exception as error:  # reported by the test
            self.errors.append(repr(error))
        finally:
            mq.close()

    @property
    def rate(self) -> float:
        return self.moved / self.seconds if self.seconds else 0.0


@pytest.fixture
def traffic(console: Console) -> Iterator[Traffic]:
    moving = Traffic(console.redis.url, "aim")
    thread = threading.Thread(target=moving.run, daemon=True)
    yield moving
    moving.stop.set()
    if thread.is_alive():
        thread.join(10)


def start(traffic: Traffic) -> None:
    threading.Thread(target=traffic.run, daemon=True).start()


def audit_rows(console: Console, queue: str) -> list[tuple[str, str, list[dict[str, str]], str, str]]:
    path = console.env["DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        rows = db.execute("select username, action, jobs, outcome, result from actions_auditentry where queue = ?",
                          (queue,)).fetchall()
    return [(u, a, json.loads(j), o, r) for u, a, j, o, r in rows]


def row_of(page: Page, job_id: str) -> str:
    return f"#{dom_id('j', job_id)}"


def test_rows_hold_still_under_the_pointer_and_a_moved_on_row_refuses_in_words(operator_page: Page,
                                                                             console: Console, mq: EchoMQ) -> None:
    page = operator_page
    ids = failed_jobs(mq, "hold", 8)
    page.goto(console.url + "queue/?q=hold&state=failed")
    wait_until_live(page)
    first = page.locator("tbody tr[data-job]").first
    page.locator(row_of(page, ids[3])).hover()
    order = page.eval_on_selector_all("tbody tr[data-job]", "rows => rows.map(r => r.dataset.job)")

    newer = failed_jobs(mq, "hold", 3)
    mq.retry("hold", ids[3])

    waiting = page.locator("#jobs-waiting")
    expect(waiting).to_have_text(re.compile(r"3 new jobs, 1 gone — show"), timeout=10_000)
    moved = page.locator(row_of(page, ids[3]))
    expect(moved.locator(".row-note")).to_have_text("now pending, attempts 1")
    assert page.eval_on_selector_all("tbody tr[data-job]", "rows => rows.map(r => r.dataset.job)") == order
    expect(moved.locator("button[value=retry]")).to_have_attribute("aria-disabled", "true")

    moved.locator("button[value=delete]").click(force=True)  # Playwright will not press what says it is disabled; a person can

    expect(page.locator("#action-results .action-result").first).to_have_text(
        f"refused, not sent: delete on job {ids[3]}, which is now pending, attempts 1 since this row was drawn")
    expect(page.locator("dialog.confirm-dialog")).to_have_count(0)
    assert mq.job("hold", ids[3]).exists

    page.mouse.click(5, 5)  # away from the table, and focus with it: what was waiting is shown
    expect(waiting).to_be_hidden()
    expect(page.locator(row_of(page, newer[0]))).to_be_visible()
    expect(page.locator(row_of(page, ids[3]))).to_have_count(0)
    assert first.is_visible()


def test_200_human_paced_presses_under_live_traffic_act_on_the_aimed_job_or_are_refused_in_words(
        operator_page: Page, console: Console, mq: EchoMQ, traffic: Traffic) -> None:
    page = operator_page
    page.set_viewport_size({"width": 1400, "height": 1400})
    targets = failed_jobs(mq, "aim", 260)
    start(traffic)
    page.goto(console.url + "queue/?q=aim&state=failed")
    wait_until_live(page)
    table = page.locator("table.jobs tbody")
    rng = random.Random(9)
    pressed: dict[str, str] = {}
    outcomes: Counter[str] = Counter()
    other = EchoMQ.from_url(console.redis.url, actor="another-operator")
    box = table.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 10)

    def release() -> None:
        """Away from the table, and focus with it: what was waiting is shown; then back over the table."""
        page.mouse.click(5, 5)
        expect(page.locator("#jobs-waiting")).to_be_hidden(timeout=10_000)
        box = table.bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 10)

    def visible_targets() -> list[str]:
        """The named jobs whose Retry button the operator can see (below the sticky header, above the bottom)."""
        seen = page.eval_on_selector_all(
            "tbody tr[data-job]:not(.moved-on) button[value=retry]",
            """buttons => { const top = document.querySelector('header.top').getBoundingClientRect().bottom;
                return buttons.filter(b => { const r = b.getBoundingClientRect();
                    return r.top > top && r.bottom < innerHeight; }).map(b => b.closest('tr').dataset.job); }""")
        return [c for c in seen if c not in pressed and c in names]

    names = set(targets)
    releases = 0
    for n in range(200):
        candidates = visible_targets()
        if n % 20 == 19 or not candidates:
            release()
            releases += 1
            candidates = visible_targets()
        assert candidates, f"no named job in sight after {n} presses"
        aimed = rng.choice(candidates)
        if n % 7 == 3:
            other.retry("aim", aimed)  # another operator moves it on while this one aims
        button = page.locator(f"{row_of(page, aimed)} button[value=retry]")
        where = button.bounding_box()
        assert where is not None
        results = page.locator("#action-results .action-result")
        before = results.count()
        page.wait_for_timeout(300)  # the human's pace between seeing and pressing, not a wait for a condition
        page.mouse.click(where["x"] + where["width"] / 2, where["y"] + where["height"] / 2)
        expect(results).to_have_count(before + 1, timeout=10_000)
        text = results.first.inner_text()
        pressed[aimed] = text
        if text.startswith(f"retried: job {aimed} "):
            outcomes["acted on the aimed job"] += 1
        elif text.startswith(f"refused: job {aimed} ") or text.startswith(f"refused, not sent: retry on job {aimed},"):
            outcomes["refused in words" + (" (not sent)" if "not sent" in text else " (by the server)")] += 1
        else:
            outcomes["other: " + text] += 1

    traffic.stop.set()
    other.close()
    rate = traffic.rate
    audited = [row for row in audit_rows(console, "aim") if row[0] == "otto"]
    on_other_jobs = [row for row in audited if row[2][0]["id"] not in pressed]
    print(f"\n200 presses at {rate:.0f} moves/s (load {open('/proc/loadavg').read().split()[0]}): {dict(outcomes)}; "
          f"{len(audited)} retries in the audit log, {len(on_other_jobs)} on a job not aimed at; the table was let go "
          f"{releases} times")
    assert traffic.errors == []
    assert rate >= 200, f"the traffic reached only {rate:.0f} moves/s"
    assert sum(n for kind, n in outcomes.items() if not kind.startswith("other")) == 200, outcomes
    assert on_other_jobs == []
    assert {row[2][0]["id"] for row in audited} <= set(pressed)
    assert all(row[1] == "retry" and row[4].startswith(("retried: job", "refused: job")) for row in audited)


def test_tab_and_j_k_reach_every_row_and_focus_stays_while_updates_arrive(operator_page: Page, console: Console,
                                                                         mq: EchoMQ) -> None:
    page = operator_page
    ids = failed_jobs(mq, "keys", 6)
    page.goto(console.url + "queue/?q=keys&state=failed")
    wait_until_live(page)
    rows = page.eval_on_selector_all("tbody tr[data-job]", "rows => rows.map(r => r.dataset.job)")
    assert sorted(rows) == sorted(ids)

    page.locator("body").press("j")
    reached = [page.evaluate("document.activeElement.dataset.job")]
    for n in range(len(rows) - 1):
        if n == 2:
            failed_jobs(mq, "keys", 2)  # updates arrive while the operator moves through the table
            expect(page.locator("#jobs-waiting")).to_contain_text("2 new jobs", timeout=10_000)
        page.keyboard.press("j")
        reached.append(page.evaluate("document.activeElement.dataset.job"))
    assert reached == rows
    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.dataset.job") == rows[-2]

    # Tab from a row goes through its controls, then to the next row.
    page.locator(row_of(page, rows[0])).focus()
    stops = []
    for _ in range(12):
        page.keyboard.press("Tab")
        stops.append(page.evaluate("""() => { const e = document.activeElement;
            const row = e.closest('tr[data-job]'); return row ? row.dataset.job + ':' + e.tagName : e.tagName; }"""))
    assert stops[:3] == [f"{rows[0]}:INPUT", f"{rows[0]}:A", f"{rows[0]}:BUTTON"]
    assert f"{rows[1]}:TR" in stops
    failed_jobs(mq, "keys", 1)
    expect(page.locator("#jobs-waiting")).to_contain_text("3 new jobs", timeout=10_000)
    assert page.evaluate("document.activeElement.closest('tr[data-job]') !== null")


def test_select_all_ticks_every_row_shown(operator_page: Page, console: Console, mq: EchoMQ) -> None:
    page = operator_page
    ids = failed_jobs(mq, "tick-all", 4)
    page.goto(console.url + "queue/?q=tick-all&state=failed")

    page.locator(".pick-all").check()

    for job_id in ids:
        expect(page.locator(f"#pick-{dom_id('j', job_id)}")).to_be_checked()
    page.locator("#selection-form button[value=retry]").click()
    expect(page.locator(".run-progress").first).to_contain_text("4 moved", timeout=10_000)


def test_the_job_pages_buttons_hold_still_under_the_pointer(operator_page: Page, console: Console,
                                                           mq: EchoMQ) -> None:
    page = operator_page
    [job_id] = failed_jobs(mq, "hold-job", 1)
    page.goto(console.url + f"job/?q=hold-job&id={job_id}")
    wait_until_live(page)
    retry = page.locator("#job-actions button[value=retry]")
    where = retry.bounding_box()
    retry.hover()

    mq.retry("hold-job", job_id)

    expect(page.locator("#job-actions .row-note")).to_have_text("now pending, attempts 1", timeout=10_000)
    expect(page.locator("#job-core .badge.big").first).to_have_text("pending")
    assert retry.bounding_box() == where
    page.mouse.click(where["x"] + where["width"] / 2, where["y"] + where["height"] / 2)  # type: ignore[index]
    expect(page.locator("#action-results .action-result").first).to_have_text(
        f"refused, not sent: retry on job {job_id}, which is now pending, attempts 1 since this page was drawn")
    assert mq.job("hold-job", job_id).state == "pending"

    page.mouse.click(5, 5)
    expect(page.locator("#job-actions button[value=cancel]")).to_be_visible()
    expect(page.locator("#job-actions button[value=retry]")).to_have_count(0)


def test_a_push_that_leaves_a_job_without_a_state_as_it_was_does_not_mark_its_buttons_moved_on(
        operator_page: Page, console: Console, mq: EchoMQ) -> None:
    # The buttons compare against "~absent" for a job without a state, the page's data-state is '': a push read
    # while the pointer is on the buttons once took that for a move and disabled them.
    page = operator_page
    keys = QueueKeys("hold-odd")
    mq.redis.hset(keys.job("nostate"), mapping={"attempts": "2", "payload": "x"})
    mq.redis.zadd(keys.pending, {"nostate": 1})
    mq.redis.sadd("emq:queues", keys.queue)
    page.goto(console.url + "job/?q=hold-odd&id=nostate")
    wait_until_live(page)
    delete = page.locator("#job-actions button[value=delete]")
    delete.hover()

    # Not a move (state and attempts stay), and an event naming the job, as a writer of another runtime might
    # leave: the page reads the job again now.
    mq.redis.hset(keys.job("nostate"), "note", "marker-7")
    mq.redis.xadd(keys.events, {"move": "note", "id": "nostate"})

    expect(page.locator("#job-core")).to_contain_text("marker-7", timeout=15_000)
    expect(page.locator("#job-actions .row-note")).to_have_count(0)
    assert delete.get_attribute("aria-disabled") is None
    delete.click()
    expect(page.locator("dialog.confirm-dialog")).to_be_visible()
