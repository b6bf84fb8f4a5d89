"""A person runs a bounded number of searches at once: the next waits its turn, saying so; a count is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.search.budget import SLOTS
from queues import EchoMQ
from tests.support.jobs import failed_jobs
from tests.support.sockets import connect, messages_until, ws_path

pytestmark = pytest.mark.django_db(transaction=True)

SLOW = "/search/?q=mail&state=pending&payload=nothing"


@pytest.fixture
def one_search_each(settings: SettingsWrapper, console_mq: EchoMQ) -> Iterator[None]:
    settings.EMQ_SEARCH_PER_USER = 1
    # One entry per step, so a search of 3000 jobs is still running when the next one asks.
    settings.EMQ_SEARCH_STEP_ENTRIES = 1
    console_mq.enqueue_many("mail", ["{}"] * 3000)
    yield


async def test_a_search_beyond_a_persons_limit_waits_saying_why_and_starts_when_one_ends(
        viewer_client: Client, viewer_cookie: bytes, one_search_each: None, stop_followers: None) -> None:
    first = await connect(await sync_to_async(ws_path)(viewer_client, SLOW), viewer_cookie)
    await messages_until(first, lambda m: "Searching…" in m)
    second = await connect(await sync_to_async(ws_path)(viewer_client, SLOW), viewer_cookie)

    waiting = await messages_until(second, lambda m: "Waiting:" in m)
    await first.send_to(text_data=json.dumps({"action": "cancel"}))
    started = await messages_until(second, lambda m: "Searching…" in m)

    assert "1 searches of yours are running (at most 1 at once); this one starts when one of them ends" in waiting[-1]
    assert "Searching…" in started[-1]
    await first.disconnect()
    await second.disconnect()


async def test_another_persons_search_does_not_wait_for_a_persons_limit(
        viewer_client: Client, viewer_cookie: bytes, operator_client: Client, operator_cookie: bytes,
        one_search_each: None, stop_followers: None) -> None:
    first = await connect(await sync_to_async(ws_path)(viewer_client, SLOW), viewer_cookie)
    await messages_until(first, lambda m: "Searching…" in m)

    other = await connect(await sync_to_async(ws_path)(operator_client, SLOW), operator_cookie)

    assert "Searching…" in (await messages_until(other, lambda m: "Searching…" in m or "Waiting:" in m))[-1]
    await first.disconnect()
    await other.disconnect()


def test_a_count_for_a_confirmation_is_refused_in_words_while_the_persons_searches_run(
        operator_client: Client, operator: User, console_mq: EchoMQ, settings: SettingsWrapper) -> None:
    settings.EMQ_SEARCH_PER_USER = 1
    failed_jobs(console_mq, "mail", 3, "{}", error="timeout")
    with SLOTS.held(operator.pk):
        refused = operator_client.post("/actions/search/", {"q": "mail", "state": "failed", "error": "timeout",
                                                            "move": "retry"}, headers={"HX-Request": "true"})
    counted = operator_client.post("/actions/search/", {"q": "mail", "state": "failed", "error": "timeout",
                                                        "move": "retry"}, headers={"HX-Request": "true"})

    assert refused.status_code == 400
    assert "not counted now: 1 searches of yours are running (at most 1 at once)" in refused.content.decode()
    assert counted.status_code == 200 and "Retry the 3 jobs matching now" in counted.content.decode()
