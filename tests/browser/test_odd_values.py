"""In real Chromium: an id or a queue name holding bidi or invisible characters is shown with them as escapes,
flagged, so it reads as it is stored and never reverses the text around it; the operator still acts on it. A
failure group's value too long to read is flagged, readable in both schemes, on a phone."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.presenters import dom_id
from queues import EchoMQ, QueueKeys
from queues.failures import groups
from tests.support.browser import Console, logged_in, wait_until_live
from tests.support.contrast import below_aa
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser

# Reads "invoice-exe.pdf" where a right-to-left override is shown as it is.
REVERSED = "invoice-\u202efdp.exe"
ZERO_WIDTH = "re\u200bport"


def test_a_bidi_id_is_shown_escaped_and_flagged_and_can_still_be_deleted(operator_page: Page, console: Console,
                                                                         mq: EchoMQ) -> None:
    page = operator_page
    queue = "odd-\u202ename"
    mq.enqueue(queue, "{}", job_id=REVERSED)
    mq.enqueue(queue, "{}", job_id=ZERO_WIDTH)
    mq.enqueue(queue, "{}", job_id="report")

    page.goto(console.url + "queue/?" + urlencode({"q": queue}))
    wait_until_live(page)
    row = page.locator(f"#{dom_id('j', REVERSED)} td.id a")
    expect(row).to_have_text(r"invoice-\u202efdp.exe")
    expect(row.locator(".escaped")).to_have_attribute("title", "holds invisible or bidi characters, shown here as escapes")
    # Two ids that differ only by a zero-width space do not look alike.
    expect(page.locator(f"#{dom_id('j', ZERO_WIDTH)} td.id a")).to_have_text(r"re\u200bport")
    expect(page.locator(f"#{dom_id('j', 'report')} td.id a")).to_have_text("report")
    expect(page.locator("#queue-summary h1")).to_have_text(r"odd-\u202ename")
    shown = page.locator("#main").inner_text()
    assert "\u202e" not in shown and "\u200b" not in shown

    page.goto(console.url + "job/?" + urlencode({"q": queue, "id": REVERSED}))
    wait_until_live(page)
    expect(page.locator("#job-core h1")).to_have_text(r"invoice-\u202efdp.exe")
    page.locator("#job-actions button[value=delete]").click()
    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog.locator(".confirm-question")).to_contain_text(r"invoice-\u202efdp.exe")
    dialog.locator("button.danger").click()
    expect(page.locator("#action-results .action-result")).to_contain_text(r"invoice-\u202efdp.exe")
    assert not mq.job(queue, REVERSED).exists and mq.job(queue, ZERO_WIDTH).exists


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_failure_groups_value_too_long_to_read_is_flagged_readable_and_fits_a_phone(
        browser: Browser, console: Console, operator_login: tuple[str, str], mq: EchoMQ,
        scheme: Literal["light", "dark"]) -> None:
    queue = "odd-group-" + scheme
    [job_id] = failed_jobs(mq, queue, 1)
    [group] = mq.run(groups(queue)).groups
    mq.redis.hset(QueueKeys(queue).prefix + "failure:" + group.id, "sig", "s" * 20_000)
    page = logged_in(browser, console, *operator_login, viewport={"width": 390, "height": 844})
    page.emulate_media(color_scheme=scheme)

    page.goto(console.url + f"failures/?{urlencode({'q': queue})}")

    warning = page.locator(f"#group-{group.id} .group-unread")
    expect(warning).to_have_text("⚠ not read, longer than any script writes (another writer's): "
                                 "signature (20000 bytes)")
    assert page.evaluate("[document.documentElement.scrollWidth, innerWidth]") == [390, 390]
    assert below_aa(page) == []
    expect(page.locator(f"#group-{group.id}")).to_contain_text(job_id)  # the rest of the group is read as ever
    page.context.close()
