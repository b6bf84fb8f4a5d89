"""In real Chromium: an operator sets a queue's masked paths on its schema page (confirmed in a dialog first); a
viewer then sees the values masked on the job page and the live queue page, and never the value itself."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from queues.redaction import MASK, config
from tests.support.browser import Console
from tests.support.jobs import failed_job

pytestmark = pytest.mark.browser

SECRET = "s3cr3t-PLANTED-42"
CARD = "4111-PLANTED-0099"


def test_masked_paths_set_by_an_operator_hide_values_from_a_viewer(operator_page: Page, page: Page, console: Console,
                                                                   mq: EchoMQ) -> None:
    queue = "masked-browser"
    failed_job(mq, queue, "j1", json.dumps({"to": "ann", "password": SECRET, "card": {"number": CARD}}))
    operator_page.goto(console.url + "schema/?" + urlencode({"q": queue}))
    expect(operator_page.locator("#redaction-none")).to_be_visible()

    operator_page.locator("#redaction-paths").fill("card.number")
    operator_page.get_by_role("button", name="Save the masked paths").click()
    dialog = operator_page.locator("dialog.confirm-dialog")
    expect(dialog).to_contain_text(f"Mask payload values of {queue}? From now on viewers")
    assert mq.run(config(queue)).paths == ()
    dialog.get_by_role("button", name="Yes, set them").click()

    answer = operator_page.locator("#redaction-answer")
    expect(answer).to_contain_text(f"{queue} masks 1 path of its own for viewers: card.number")
    assert [p.text for p in mq.run(config(queue)).paths] == ["card.number"]
    page.goto(console.url + "job/?" + urlencode({"q": queue, "id": "j1"}))
    expect(page.locator("#job-payload pre")).to_contain_text(MASK)
    assert SECRET not in page.content() and CARD not in page.content()
    page.goto(console.url + "queue/?" + urlencode({"q": queue, "state": "failed"}))
    expect(page.locator("#queue-jobs td.payload").first).to_contain_text(MASK)
    assert SECRET not in page.content() and CARD not in page.content()
