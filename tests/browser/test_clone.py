"""In real Chromium: an operator clones a failed job from its page with an edited payload and a delay. The
server asks first in a modal saying what it makes; confirmed, the answer links the new job, which holds the
edited bytes; the form and the question are readable in both colour schemes."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from tests.support.browser import Console
from tests.support.contrast import below_aa
from tests.support.jobs import failed_job

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_job_is_cloned_with_an_edited_payload_once_confirmed(operator_page: Page, console: Console, mq: EchoMQ,
                                                              scheme: Literal["light", "dark"]) -> None:
    page = operator_page
    page.emulate_media(color_scheme=scheme)
    queue = f"clone-{scheme}"
    failed_job(mq, queue, "j1", '{"to": "a@exmaple.com"}')
    page.goto(console.url + "job/?" + urlencode({"q": queue, "id": "j1"}))
    page.locator("#job-clone").scroll_into_view_if_needed()
    assert below_aa(page) == []

    page.locator("#clone-new-id").fill("j1-fixed")
    page.locator("#clone-delay").fill("60")
    # Typing in the payload chooses the edited text.
    page.locator("#clone-payload").fill('{"to": "a@example.com"}')
    expect(page.locator("#clone-edited")).to_be_checked()
    page.get_by_role("button", name="Clone…").click()

    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog).to_contain_text(f"Clone job j1 (failed, attempts 1) of {queue}?")
    expect(dialog).to_contain_text("New job j1-fixed is enqueued, due in 1m 00s, with the payload you edited (23 bytes)")
    assert below_aa(page) == []
    assert mq.redis.exists(f"emq:{{{queue}}}:job:j1-fixed") == 0
    dialog.get_by_role("button", name="Yes, clone it").click()

    answer = page.locator("#clone-answer .action-result.moved")
    expect(answer).to_contain_text("cloned: job j1 (failed, attempts 1) as new job j1-fixed, pending")
    assert mq.payload(queue, "j1-fixed") == b'{"to": "a@example.com"}'
    assert mq.job(queue, "j1").state == "failed"
    answer.get_by_role("link", name="Open the new job").click()
    expect(page.locator("#job-history")).to_contain_text("clone of j1")
