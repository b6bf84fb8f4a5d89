"""In real Chromium against a real daphne: hostile payloads, ids and errors stay inert everywhere; operators
act by button and see the result in place, without a reload; viewers see no controls; a bulk run reports live."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Dialog, Page, WebSocketRoute, expect

from dashboard.presenters import dom_id
from queues import EchoMQ, moves
from tests.support.browser import Console

pytestmark = pytest.mark.browser

SCRIPT = "<script>window.__xss = 'script'; alert(1)</script>"
IMG = "<img src=x onerror=\"window.__xss='img'; alert(2)\">"
HOSTILE_ID = "\"><svg/onload=window.__xss='id';alert(3)>"
HOSTILE_QUEUE = "<svg/onload=window.__xss='queue';alert(4)>"


def fail(mq: EchoMQ, queue: str, payload: str, *, job_id: str | None = None, error: str = "boom") -> str:
    job_id = mq.enqueue(queue, payload, job_id=job_id, max_attempts=1)
    [job] = [j for j in mq.claim(queue, count=1000) if j.id == job_id]
    mq.run(moves.fail(queue, job.id, job.token, error=error, backoff_ms=0))
    return job_id


class Alarms:
    """Any dialog a payload manages to open, and the flag every payload tries to set."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.dialogs: list[str] = []
        page.on("dialog", self._dialog)

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def assert_quiet(self) -> None:
        """Checked on every page before leaving it: the flag does not outlive a navigation, dialogs are kept."""
        self.page.wait_for_timeout(100)
        assert self.dialogs == [], f"a payload ran: {self.dialogs}"
        assert self.page.evaluate("window.__xss === undefined"), self.page.evaluate("String(window.__xss)")
        assert self.page.locator("img[src=x]").count() == 0
        assert self.page.locator("svg[onload]").count() == 0
        assert self.page.locator("script", has_text="window.__xss").count() == 0

    def goto(self, url: str) -> None:
        self.assert_quiet()
        self.page.goto(url)


def test_hostile_payloads_ids_errors_and_queue_names_are_inert_on_every_page(operator_page: Page, console: Console,
                                                                          mq: EchoMQ) -> None:
    page = operator_page
    alarms = Alarms(page)
    fail(mq, "xss", SCRIPT, job_id="script-job", error=IMG)
    fail(mq, "xss", IMG, job_id=HOSTILE_ID, error=SCRIPT)
    mq.enqueue("xss", IMG, job_id="pending-img")
    mq.enqueue(HOSTILE_QUEUE, SCRIPT, job_id="in-hostile-queue")
    q = "xss"

    alarms.goto(console.url)
    expect(page.locator(f"#{dom_id('q', HOSTILE_QUEUE)}")).to_contain_text(HOSTILE_QUEUE)
    alarms.goto(console.url + f"queue/?q={q}&state=failed")
    expect(page.locator("td.payload").first).to_be_visible()
    expect(page.locator("#queue-jobs")).to_contain_text(SCRIPT)
    expect(page.locator("#queue-jobs")).to_contain_text(HOSTILE_ID)
    expect(page.locator("#queue-jobs")).to_contain_text(IMG)
    alarms.goto(console.url + f"queue/?q={q}&state=pending")
    expect(page.locator("#queue-jobs")).to_contain_text(IMG)
    alarms.goto(console.url + "job/?" + _query(q, HOSTILE_ID))
    expect(page.locator("#job-payload pre")).to_have_text(IMG)

    # Act on the hostile job: its id comes back in the result, the audit log and the run page.
    page.locator("#job-actions button[value=retry]").click()
    expect(page.locator("#action-results .action-result").first).to_contain_text(f"retried: job {HOSTILE_ID}")
    alarms.goto(console.url + f"queue/?q={q}&state=failed")
    page.locator(f"#pick-{dom_id('j', 'script-job')}").check()
    page.locator("#selection-form button[value=retry]").click()
    expect(page.locator(".run-progress").first).to_contain_text("1 moved", timeout=15_000)
    alarms.goto(console.url + "audit/")
    expect(page.locator("#audit-rows")).to_contain_text(HOSTILE_ID)
    expect(page.locator("#audit-rows")).to_contain_text("script-job")
    page.locator("#audit-rows a[href*='/actions/runs/']").first.click()
    expect(page.locator(".run-progress")).to_contain_text("script-job")
    alarms.goto(console.url + "job/?" + _query(HOSTILE_QUEUE, "in-hostile-queue"))
    expect(page.locator("#job-payload pre")).to_have_text(SCRIPT)
    alarms.assert_quiet()


def _query(queue: str, job_id: str) -> str:
    return urlencode({"q": queue, "id": job_id})


def test_an_operator_retries_a_failed_job_by_button_and_reads_the_result_in_place(operator_page: Page,
                                                                                  console: Console,
                                                                                  mq: EchoMQ) -> None:
    page = operator_page
    job_id = fail(mq, "buttons", '{"n": 1}')
    page.goto(console.url + "queue/?q=buttons&state=failed")
    page.evaluate("window.notReloaded = true")

    page.locator(f"#{dom_id('j', job_id)} button[value=retry]").click()

    expect(page.locator("#action-results .action-result.moved")).to_have_text(
        f"retried: job {job_id} is now pending (attempts 1) (audit)")
    assert page.evaluate("window.notReloaded") is True
    assert mq.job("buttons", job_id).state == "pending"


def test_a_button_on_a_job_that_moved_on_is_refused_in_words(operator_page: Page, console: Console,
                                                             mq: EchoMQ) -> None:
    page = operator_page
    job_id = fail(mq, "moved-on", "x")
    # The live socket would redraw the buttons once the job moves on; hold its
    # messages back so that the page still shows (and posts) what it showed.
    live = {"frozen": False}

    def hold_back_when_frozen(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        server.on_message(lambda message: None if live["frozen"] else ws.send(message))
        ws.on_message(server.send)

    page.route_web_socket(re.compile(r".*/ws/.*"), hold_back_when_frozen)
    page.goto(console.url + "job/?" + _query("moved-on", job_id))
    expect(page.locator("#job-actions button[value=retry]").first).to_be_visible()
    live["frozen"] = True
    mq.retry("moved-on", job_id)
    [job] = mq.claim("moved-on")
    mq.complete("moved-on", job.id, job.token)

    page.locator("#job-actions button[value=retry]").first.click(timeout=10_000)

    expect(page.locator("#action-results .action-result").first).to_contain_text(
        f"refused: job {job_id} is now done (attempts 2)")


def test_delete_asks_first_and_deletes_only_when_confirmed(operator_page: Page, console: Console, mq: EchoMQ) -> None:
    page = operator_page
    job_id = mq.enqueue("deleting", "x")
    page.goto(console.url + "job/?" + _query("deleting", job_id))

    page.locator("#job-actions button[value=delete]").click()
    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(f"Delete job {job_id} (pending, attempts 0) from deleting? This cannot be undone.")
    assert page.evaluate("document.querySelector('dialog.confirm-dialog').matches(':modal')")
    assert mq.job("deleting", job_id).exists
    dialog.locator("button.danger").click()

    expect(page.locator("#action-results .action-result.moved")).to_contain_text(f"deleted: job {job_id}")
    assert not mq.job("deleting", job_id).exists


def test_retry_all_shows_its_progress_live_and_ends_with_the_tally(operator_page: Page, console: Console,
                                                                  mq: EchoMQ) -> None:
    page = operator_page
    for _ in range(3):
        fail(mq, "bulk", "x")
    page.goto(console.url + "queue/?q=bulk&state=failed")
    page.evaluate("window.notReloaded = true")

    page.locator("button[value=retry_all]").click()
    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog).to_contain_text("Retry 3 failed jobs of bulk?")
    assert mq.stats("bulk").counts["failed"] == 3
    dialog.locator("button.danger").click()

    expect(dialog).to_have_count(0)
    expect(page.locator(".run-progress").first).to_contain_text("finished", timeout=15_000)
    expect(page.locator(".run-progress").first).to_contain_text("3 moved, 0 skipped because they had moved on")
    assert page.evaluate("window.notReloaded") is True
    assert mq.stats("bulk").counts["failed"] == 0


def test_a_viewer_sees_no_controls_and_a_crafted_post_is_refused(page: Page, console: Console, mq: EchoMQ) -> None:
    job_id = fail(mq, "viewing", "x")
    page.goto(console.url + "queue/?q=viewing&state=failed")
    expect(page.locator(f"#{dom_id('j', job_id)}")).to_be_visible()

    assert page.locator(".job-actions").first.is_hidden()
    assert page.locator("#selection-form").is_hidden()
    status = page.evaluate("""async () => {
        const body = new URLSearchParams({q: 'viewing', id: %r, move: 'retry', state: 'failed', attempts: '1'});
        const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
        const response = await fetch('/actions/job/', {method: 'POST', body, headers: {'X-CSRFToken': token}});
        return response.status;
    }""" % job_id)
    assert status == 403
    assert mq.job("viewing", job_id).state == "failed"


def test_a_tick_survives_live_updates_and_only_ticked_jobs_move(operator_page: Page, console: Console,
                                                               mq: EchoMQ) -> None:
    page = operator_page
    first, second = fail(mq, "ticks", "1"), fail(mq, "ticks", "2")
    page.goto(console.url + "queue/?q=ticks&state=failed")
    page.wait_for_function("() => !!document.querySelector('main[ws-connect]')")
    page.wait_for_timeout(600)
    page.locator(f"#pick-{dom_id('j', first)}").check()

    third = fail(mq, "ticks", "3")  # pushed while a row is ticked: the table holds still and says what waits
    expect(page.locator("#jobs-waiting")).to_contain_text("1 new job", timeout=15_000)
    expect(page.locator(f"#{dom_id('j', third)}")).to_have_count(0)

    assert page.locator(f"#pick-{dom_id('j', first)}").is_checked()
    page.locator("#selection-form button[value=retry]").click()
    expect(page.locator(".run-progress").first).to_contain_text("1 moved", timeout=15_000)
    assert [mq.job("ticks", j).state for j in (first, second, third)] == ["pending", "failed", "failed"]
