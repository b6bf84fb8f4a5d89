"""/api/docs in Chromium: Swagger UI renders every operation under the console's CSP, with no violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.support.browser import Console

pytestmark = pytest.mark.browser


def test_the_interactive_docs_render_every_operation_without_a_csp_violation(operator_page: Page,
                                                                             console: Console) -> None:
    page = operator_page
    blocked: list[str] = []
    page.on("console", lambda message: blocked.append(message.text)
            if "Content Security Policy" in message.text or "Refused to" in message.text else None)
    page.add_init_script("document.addEventListener('securitypolicyviolation', e => "
                         "console.error('Refused to load ' + e.blockedURI + ' (' + e.violatedDirective + ')'))")

    page.goto(console.url + "api/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=30_000)

    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert {"/api/queues", "/api/job", "/api/orders", "/api/runs/{run_id}/cancel"} <= {p.strip() for p in paths}
    schema = page.request.get(console.url + "api/schema").json()
    assert page.locator(".opblock-summary-path").count() == sum(len(methods) for methods in schema["paths"].values())
    page.locator(".opblock-summary-path", has_text="/api/queues").first.click()
    page.get_by_role("button", name="Try it out").click()
    page.get_by_role("button", name="Execute").click()
    page.wait_for_selector(".live-responses-table tbody .response-col_status", timeout=30_000)
    # The signed-in viewer's session answers the try-out, as a script on the page would be answered.
    assert page.locator(".live-responses-table tbody .response-col_status").first.inner_text().strip().startswith("200")
    assert blocked == []
