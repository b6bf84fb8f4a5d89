"""In real Chromium, a console with two deployments: the badge names the one shown, in its colour (production
apart), the switcher opens the same page on the other one, both readable in both schemes and within 390 px; on
production the delete's confirmation wants the queue's name typed before it runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from queues import EchoMQ
from tests.support.browser import Console, console_over_deployments, logged_in
from tests.support.contrast import below_aa
from tests.support.jobs import failed_job
from tests.support.redis_servers import RedisServer

pytestmark = pytest.mark.browser

NAME, PASSWORD = "sara", "sara-password"


@pytest.fixture(scope="module")
def two_deployments() -> Iterator[tuple[Console, EchoMQ, EchoMQ]]:
    """A console over staging and production (two redis-servers), signed in as an operator granted both."""
    staging, production = RedisServer().start(), RedisServer().start()
    setting = {"staging": {"url": staging.url}, "production": {"url": production.url, "production": True,
                                                               "act": ["sre"]}}
    staging_mq, production_mq = EchoMQ.from_url(staging.url, actor="test"), EchoMQ.from_url(production.url, actor="test")
    try:
        with console_over_deployments(setting, staging, operator=(NAME, PASSWORD), groups=("sre",)) as console:
            yield console, staging_mq, production_mq
    finally:
        staging_mq.close()
        production_mq.close()
        staging.cleanup()
        production.cleanup()


@pytest.fixture
def sara(browser: Browser, two_deployments: tuple[Console, EchoMQ, EchoMQ]) -> Iterator[Page]:
    page = logged_in(browser, two_deployments[0], NAME, PASSWORD)
    yield page
    page.context.close()


def test_the_badge_names_the_deployment_and_the_switcher_opens_the_same_page_on_the_other(
        sara: Page, two_deployments: tuple[Console, EchoMQ, EchoMQ]) -> None:
    console, staging, production = two_deployments
    staging.enqueue("only-staging", "x")
    production.enqueue("only-production", "x")

    sara.goto(console.url + "?filter=only")
    badge = sara.locator("summary.deployment-badge")
    expect(badge).to_have_text("staging")
    expect(sara.locator("#main")).to_contain_text("only-staging")
    badge.click()
    sara.locator(".deployment-menu a", has_text="production").click()

    expect(badge).to_contain_text("production")
    expect(badge).to_have_class("deployment-badge deployment-colour-1 deployment-production")
    assert "filter=only" in sara.url and "d=production" in sara.url
    expect(sara.locator("#main")).to_contain_text("only-production")
    expect(sara.locator("#main")).not_to_contain_text("only-staging")
    sara.goto(console.url + "queue/?q=only-production")  # the session kept the choice
    expect(badge).to_contain_text("production")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_badges_and_the_open_switcher_read_in_both_schemes_and_fit_390_px(
        browser: Browser, two_deployments: tuple[Console, EchoMQ, EchoMQ], scheme: str) -> None:
    console = two_deployments[0]
    phone = logged_in(browser, console, NAME, PASSWORD, viewport={"width": 390, "height": 844}, color_scheme=scheme)
    try:
        found = {}
        for path in ["?d=staging", "?d=production", "deployments/?id=nothing-here"]:
            phone.goto(console.url + path)
            phone.wait_for_load_state("networkidle")
            phone.locator("summary.deployment-badge").click()
            expect(phone.locator(".deployment-menu")).to_be_visible()
            width = phone.evaluate("[document.documentElement.scrollWidth, innerWidth]")
            assert width[0] <= width[1], (path, width)
            if below := below_aa(phone):
                found[path] = below
        assert found == {}
    finally:
        phone.context.close()


def test_on_production_the_delete_runs_only_once_the_queue_name_is_typed(
        sara: Page, two_deployments: tuple[Console, EchoMQ, EchoMQ]) -> None:
    console, _, production = two_deployments
    failed_job(production, "typed", "p1")

    sara.goto(console.url + "job/?q=typed&id=p1&d=production")
    sara.locator("button[value=delete]").first.click()
    dialog = sara.locator("dialog.confirm-dialog")
    expect(dialog).to_contain_text("production is a production deployment: type typed to confirm")
    dialog.locator("button[type=submit]").click()  # the browser holds back a form with a required field empty
    assert production.job("typed", "p1").exists
    dialog.locator("input[name=typed_name]").fill("typed")
    dialog.locator("button[type=submit]").click()

    expect(sara.locator(".action-result").first).to_contain_text("deleted")
    assert not production.job("typed", "p1").exists
