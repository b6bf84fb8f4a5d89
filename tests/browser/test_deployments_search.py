"""In real Chromium, the search over every deployment: the form on /deployments/ searches staging and production at
once, shows each one's count and matches linking to the job on that deployment, and names the one that is down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from queues import EchoMQ
from tests.support.browser import Console, console_over_deployments, logged_in
from tests.support.jobs import failed_job
from tests.support.redis_servers import RedisServer

pytestmark = pytest.mark.browser

NAME, PASSWORD = "sara", "sara-password"


@pytest.fixture(scope="module")
def three_deployments() -> Iterator[tuple[Console, EchoMQ, EchoMQ]]:
    """A console over staging, production and backup (three redis-servers; backup stopped before any request),
    signed in as an operator."""
    staging, production, backup = RedisServer().start(), RedisServer().start(), RedisServer().start()
    backup.stop()
    setting = {"staging": {"url": staging.url}, "production": {"url": production.url, "production": True},
               "backup": {"url": backup.url}}
    staging_mq, production_mq = EchoMQ.from_url(staging.url, actor="test"), EchoMQ.from_url(production.url, actor="test")
    try:
        with console_over_deployments(setting, staging, operator=(NAME, PASSWORD)) as console:
            yield console, staging_mq, production_mq
    finally:
        staging_mq.close()
        production_mq.close()
        staging.cleanup()
        production.cleanup()
        backup.cleanup()


@pytest.fixture
def sara(browser: Browser, three_deployments: tuple[Console, EchoMQ, EchoMQ]) -> Iterator[Page]:
    page = logged_in(browser, three_deployments[0], NAME, PASSWORD)
    yield page
    page.context.close()


def test_the_form_searches_every_deployment_and_names_the_one_that_did_not_answer(
        sara: Page, three_deployments: tuple[Console, EchoMQ, EchoMQ]) -> None:
    console, staging, production = three_deployments
    failed_job(staging, "mail", "on-staging", error="smtp boom")
    failed_job(production, "mail", "on-production-1", error="smtp boom")
    failed_job(production, "billing", "on-production-2", error="smtp boom")
    failed_job(production, "billing", "elsewhere", error="other")

    sara.goto(console.url + "deployments/")
    form = sara.locator("#deployment-search form")
    form.locator("select[name=state]").select_option("failed")
    form.locator("input[name=error]").fill("boom")
    form.locator("button[type=submit]").click()

    results = sara.locator("#deployment-search")
    expect(results.locator("#searched-staging")).to_contain_text("1 match in 1 queue")
    expect(results.locator("#searched-production")).to_contain_text("2 matches in 2 queues")
    expect(results.locator("#searched-backup")).to_contain_text("backup did not answer")
    expect(results.locator(".deployment-missing")).to_contain_text("backup did not answer")
    expect(results).not_to_contain_text("elsewhere")
    expect(form.locator("input[name=error]")).to_have_value("boom")

    results.locator("#searched-production a", has_text="on-production-2").click()
    expect(sara.locator("summary.deployment-badge")).to_contain_text("production")
    expect(sara.locator("#main")).to_contain_text("on-production-2")
    assert "d=production" in sara.url
