"""Each page's data is one object: its view, its live pushes and the API say the same of a part that cannot be read."""

from __future__ import annotations

import html

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from queues import EchoMQ, QueueKeys
from queues.reads import HISTORY_READ_MAX
from tests.support.sockets import connect, receive_until

pytestmark = pytest.mark.django_db(transaction=True)

# What every surface says of a history another writer made longer than a read returns.
HISTORY_TOO_LONG = f"refused: the history of job j1 is 20000 bytes, more than the {HISTORY_READ_MAX} a read returns"


def _job_with_an_unreadable_history(mq: EchoMQ) -> None:
    mq.enqueue("mail", "a", job_id="j1")
    mq.redis.hset(QueueKeys("mail").job("j1"), "history", "x" * 20_000)


async def test_a_history_that_cannot_be_read_is_said_alike_by_the_view_the_live_page_and_the_api(
        console_mq: EchoMQ, viewer_client: Client, viewer_cookie: bytes, stop_followers: None) -> None:
    _job_with_an_unreadable_history(console_mq)
    said = f"The history cannot be read: {html.escape(HISTORY_TOO_LONG)}"

    page = await sync_to_async(viewer_client.get)("/job/?q=mail&id=j1")
    api = await sync_to_async(viewer_client.get)("/api/job?q=mail&id=j1")
    communicator = await connect("/ws/job/?q=mail&id=j1", viewer_cookie)
    pushed = await receive_until(communicator, lambda m: 'id="job-history"' in m)
    await communicator.disconnect()

    assert page.status_code == 200 and said in page.content.decode()
    assert api.status_code == 200 and api.json()["history_error"] == HISTORY_TOO_LONG and api.json()["history"] == []
    assert said in pushed
    # The rest of the job is shown all the same.
    assert 'data-state="pending"' in page.content.decode() and 'data-state="pending"' in pushed
    assert api.json()["state"] == "pending"


async def test_a_worker_that_is_gone_is_said_alike_by_the_view_the_live_page_and_the_api(
        console_mq: EchoMQ, viewer_client: Client, viewer_cookie: bytes, stop_followers: None) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    console_mq.claim("mail", lease_ms=600_000)  # by a client that never registered as a worker

    page = await sync_to_async(viewer_client.get)("/job/?q=mail&id=j1")
    api = await sync_to_async(viewer_client.get)("/api/job?q=mail&id=j1")
    communicator = await connect("/ws/job/?q=mail&id=j1", viewer_cookie)
    pushed = await receive_until(communicator, lambda m: 'id="job-core"' in m)
    await communicator.disconnect()

    assert 'id="worker-gone"' in page.content.decode()
    assert api.json()["worker_gone"] is True
    assert 'id="worker-gone"' in pushed
