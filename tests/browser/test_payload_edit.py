"""In real Chromium: an operator edits a failed job's payload on its page. A payload the queue's JSON Schema
refuses is answered in words beside the form, the text kept and nothing written; a good one is saved and
retried, the page then shows the kept version and a diff whose lines are marked and readable in both
colour schemes."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from queues import EchoMQ
from queues.payload_versions import schema_set
from tests.support.browser import Console
from tests.support.contrast import below_aa
from tests.support.jobs import failed_job
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.browser

SCHEMA = ('{"type": "object", "required": ["to", "retries"], "properties": {"to": {"type": "string"}, '
          '"retries": {"type": "integer", "minimum": 0}}}')


def test_an_edit_the_schema_refuses_is_shown_in_words_and_changes_nothing(operator_page: Page, console: Console,
                                                                         mq: EchoMQ) -> None:
    page = operator_page
    queue = "edit-schema"
    failed_job(mq, queue, "j1", '{"to": "a@example.com", "retries": 1}')
    mq.run(schema_set(queue, SCHEMA, actor="test"))
    page.goto(console.url + "job/?" + urlencode({"q": queue, "id": "j1"}))
    expect(page.locator("#edit-schema")).to_contain_text(f"JSON Schema of {queue}")
    before = keyspace_dump(mq.redis)

    page.locator("#edit-payload").fill('{"to": 5, "retries": -1}')
    page.get_by_role("button", name="Save and retry").click()

    answer = page.locator("#edit-answer .action-result.refused")
    expect(answer).to_contain_text(f"the payload does not match the JSON Schema of {queue}")
    expect(answer).to_contain_text("retries: -1 is less than the minimum of 0")
    expect(answer).to_contain_text("to: 5 is not of type 'string'")
    # The operator's text stays in the form to be fixed, and nothing was written.
    expect(page.locator("#edit-payload")).to_have_value('{"to": 5, "retries": -1}')
    assert keyspace_dump(mq.redis) == before


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_saved_edit_shows_its_version_and_a_diff_readable_in_both_schemes(operator_page: Page, console: Console,
                                                                           mq: EchoMQ, scheme: Literal["light", "dark"]) -> None:
    page = operator_page
    page.emulate_media(color_scheme=scheme)
    queue = f"edit-diff-{scheme}"
    failed_job(mq, queue, "j1", '{"to": "a@exmaple.com", "retries": 1, "body": "hello"}')
    page.goto(console.url + "job/?" + urlencode({"q": queue, "id": "j1"}))

    page.locator("#edit-payload").fill('{"to": "a@example.com", "retries": 1, "body": "hello"}')
    page.get_by_role("button", name="Save and retry").click()

    expect(page.locator("#edit-answer .action-result.moved")).to_contain_text(
        "edited: job j1 is now pending (attempts 1); the payload it replaced is kept as version 1")
    expect(page.locator("#job-versions #version-1")).to_be_visible()
    removed = page.locator("#job-diff .diff-line.del")
    added = page.locator("#job-diff .diff-line.add")
    expect(removed).to_have_count(1)
    expect(removed).to_have_text('−  "to": "a@exmaple.com",')
    expect(added).to_have_text('+  "to": "a@example.com",')
    assert mq.job(queue, "j1").state == "pending"
    page.locator("#job-diff").scroll_into_view_if_needed()
    assert below_aa(page) == []
