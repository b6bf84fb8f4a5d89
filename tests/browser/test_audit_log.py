"""The audit log in Chromium: it reads well at desktop width (no word broken mid-name, one tally per row,
pause and resume with their reason and no tally, times with their zone, job ids linked, orders without
an empty "(, attempts any)")."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page

from queues import EchoMQ
from tests.support.browser import Console
from tests.support.daphne import manage
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.browser

# The actions of a first hour, made through the console's own services (as its buttons make them).
ACTIONS = """
from django.contrib.auth.models import User
from dashboard.actions import runner, services
from dashboard.actions.models import AuditEntry
from dashboard.roles import user_create
from django.utils import timezone
user = User.objects.filter(username='audit-otto').first() or user_create(
    username='audit-otto', password='audit-otto-password', role='operators')
services.queue_pause_or_resume(user=user, move='pause', queue='audit-mail', reason='deploy 1.4 rolling back')
services.queue_pause_or_resume(user=user, move='resume', queue='audit-mail')
services.job_act(user=user, move='retry', queue='audit-mail', job_id='{first}', expect_state='failed',
                 expect_attempts='1')
run = services.queue_act(user=user, action='retry_all', queue='audit-mail')
runner.wait(run.pk, timeout=60)
now = timezone.now()
AuditEntry.objects.create(user=user, username='audit-otto', queue='orders', action='place_order', scope='job',
    jobs=[{{'id': 'ORD-01JDZ8Q6V7X3M9K2T5R8W4N1PA', 'client_order_id': 'c-1'}}], parameters={{'via': 'token'}},
    outcome='moved', result='placed ORD-01JDZ8Q6V7X3M9K2T5R8W4N1PA (client order id c-1)', finished_at=now, updated_at=now)
"""


def _broken_words(page: Page) -> list[str]:
    """Every word of the table's cells that the browser laid out on more than one line."""
    words: list[str] = page.evaluate("""() => {
        const broken = [];
        for (const cell of document.querySelectorAll('table.audit-log tbody td')) {
            const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                for (const match of node.textContent.matchAll(/\\S+/g)) {
                    const range = document.createRange();
                    range.setStart(node, match.index);
                    range.setEnd(node, match.index + match[0].length);
                    const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                    if (lines.size > 1) broken.push(match[0]);
                }
            }
        }
        return broken;
    }""")
    return words


def test_the_audit_log_reads_well_at_desktop_width(operator_page: Page, console: Console, mq: EchoMQ) -> None:
    first = failed_jobs(mq, "audit-mail", 3)[0]
    manage(console.env, "shell", "-c", ACTIONS.format(first=first))

    operator_page.goto(console.url + "audit/?user=audit-otto")
    rows = {row.locator("td").nth(2).inner_text().strip(): row for row in operator_page.locator("table.audit-log tbody tr").all()}

    assert _broken_words(operator_page) == []
    for text in operator_page.locator("table.audit-log tbody tr td:first-child").all_inner_texts():
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", text.strip()), text
    tallies = [row.inner_text().count("skipped because they had moved on") for row in rows.values()]
    assert max(tallies) == 1
    pause, resume = rows["pause the queue"], rows["resume the queue"]
    assert "deploy 1.4 rolling back" in pause.inner_text()
    assert "moved on" not in pause.inner_text() and "moved on" not in resume.inner_text()
    assert "every  job" not in pause.inner_text()
    retried = rows["retry"].locator("td").nth(4).locator("a")
    assert retried.inner_text() == first and f"id={first}" in (retried.get_attribute("href") or "")
    order = rows["place an order"].inner_text()
    assert "ORD-01JDZ8Q6V7X3M9K2T5R8W4N1PA" in order and "(, attempts any)" not in order and "c-1" in order
