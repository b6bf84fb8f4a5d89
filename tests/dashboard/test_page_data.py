"""Each page's data is one object: its view, its live pushes, the API (and emq) say the same of a part that cannot be
read."""

from __future__ import annotations

import html

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from queues import EchoMQ, QueueKeys
from queues.cli import main
from queues.failures import groups
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


async def test_a_queue_whose_jobs_cannot_be_read_is_said_alike_by_the_view_the_live_page_and_the_api(
        console_mq: EchoMQ, viewer_client: Client, viewer_cookie: bytes, stop_followers: None) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    keys = QueueKeys("mail")
    console_mq.redis.delete(keys.done)
    console_mq.redis.set(keys.done, "not a sorted set")
    refusal = f"refused: {keys.done} holds a string"

    page = await sync_to_async(viewer_client.get)("/queue/?q=mail&state=done")
    api = await sync_to_async(viewer_client.get)("/api/queue/jobs?q=mail&state=done")
    communicator = await connect("/ws/queue/?q=mail&state=done", viewer_cookie)
    pushed = await receive_until(communicator, lambda m: html.escape(refusal) in m)
    await communicator.disconnect()

    assert f"This queue cannot be read: {html.escape(refusal)}" in page.content.decode()
    assert api.status_code == 409 and api.json()["error"].startswith(refusal)
    assert 'id="why-line"' in pushed and 'id="queue-jobs"' not in pushed


async def test_a_workers_registry_that_cannot_be_read_is_unknown_alike_on_the_view_and_the_live_page(
        console_mq: EchoMQ, viewer_client: Client, viewer_cookie: bytes, stop_followers: None) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    console_mq.redis.set(QueueKeys("mail").workers, "not a sorted set")

    page = await sync_to_async(viewer_client.get)("/queue/?q=mail")
    communicator = await connect("/ws/queue/?q=mail", viewer_cookie)
    pushed = await receive_until(communicator, lambda m: 'id="queue-jobs"' in m)
    await communicator.disconnect()

    # Unknown is not none: neither says "0 workers", and the jobs are shown all the same.
    assert page.status_code == 200 and 'id="queue-workers"' not in page.content.decode()
    assert 'id="queue-workers"' not in pushed and "j1" in pushed and "j1" in page.content.decode()


async def test_a_queue_that_cannot_be_read_is_one_row_with_the_same_words_on_the_overview_live_and_in_the_api(
        console_mq: EchoMQ, viewer_client: Client, viewer_cookie: bytes, stop_followers: None) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    console_mq.enqueue("thumbs", "b", job_id="j2")
    keys = QueueKeys("thumbs")
    console_mq.redis.delete(keys.done)
    console_mq.redis.set(keys.done, "not a sorted set")
    refusal = f"refused: {keys.done} holds a string"

    page = await sync_to_async(viewer_client.get)("/")
    api = await sync_to_async(viewer_client.get)("/api/queues")
    communicator = await connect("/ws/overview/", viewer_cookie)
    pushed = await receive_until(communicator, lambda m: html.escape(refusal) in m)
    await communicator.disconnect()

    said = {row["queue"]: row["error"] for row in api.json()["queues"]}
    assert said["mail"] is None and said["thumbs"].startswith(refusal)
    assert html.escape(said["thumbs"]) in page.content.decode() and html.escape(said["thumbs"]) in pushed


def test_a_state_that_cannot_be_sampled_is_said_alike_by_the_failures_page_the_api_and_emq(
        console_mq: EchoMQ, viewer_client: Client, redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1", max_attempts=1)
    [job] = console_mq.claim("mail")
    console_mq.fail("mail", job.id, job.token, error="timeout", backoff_ms=0)
    keys = QueueKeys("mail")
    console_mq.redis.set(keys.done, "not a sorted set")
    said = f"the done jobs could not be sampled: refused: {keys.done} holds a string"

    page = viewer_client.get("/failures/?q=mail").content.decode()
    api = viewer_client.get("/api/failures?q=mail").json()
    assert main(["--url", redis_url, "failures", "mail", "--explain"]) == 0

    [note] = api["notes"]
    assert note.startswith(said) and api["groups"][0]["count"] == 1
    assert f"Note: {html.escape(note)}." in page
    assert f"emq: note: {note}\n" in capsys.readouterr().err


def test_a_groups_value_too_long_to_read_is_said_alike_by_the_failures_page_the_api_and_emq(
        console_mq: EchoMQ, viewer_client: Client, redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1", max_attempts=1)
    [job] = console_mq.claim("mail")
    console_mq.fail("mail", job.id, job.token, error="timeout", backoff_ms=0)
    [group] = console_mq.run(groups("mail")).groups
    console_mq.redis.hset(QueueKeys("mail").prefix + "failure:" + group.id, "sig", "<b>" * 10_000)
    said = "not read, longer than any script writes (another writer's): signature (30000 bytes)"

    page = viewer_client.get("/failures/?q=mail").content.decode()
    api = viewer_client.get("/api/failures?q=mail").json()
    assert main(["--url", redis_url, "failures", "mail"]) == 0

    assert f"⚠ {html.escape(said)}" in page and "<b><b>" not in page
    assert api["groups"][0]["unread"] == {"signature": 30_000} and api["groups"][0]["count"] == 1
    assert f"\n  {said}\n" in capsys.readouterr().out
