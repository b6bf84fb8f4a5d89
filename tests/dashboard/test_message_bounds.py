"""Every live message a page gets is at most 64 KiB, whatever its queues' names, pause reasons or jobs
hold: a page's table larger than one message (the overview's, a queue page's) comes in parts."""

from __future__ import annotations

import re
import time

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client

from dashboard.asgi import application
from dashboard.live import MESSAGE_MAX_BYTES
from queues import EchoMQ
from queues.follower import Follower

pytestmark = pytest.mark.django_db(transaction=True)



async def first_messages(path: str, cookie: bytes, until: str | re.Pattern[str], timeout: float = 15.0) -> list[str]:
    """The messages a fresh page gets, up to and including the first that holds ``until`` (text or pattern)."""
    def holds(message: str) -> bool:
        return until in message if isinstance(until, str) else until.search(message) is not None

    communicator = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost"),
                                                                      (b"host", b"localhost"), (b"cookie", cookie)])
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    messages: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while not messages or not holds(messages[-1]):
            messages.append(await communicator.receive_from(timeout=max(0.1, deadline - time.monotonic())))
    finally:
        await communicator.disconnect()
        await Follower.stop_all()
    return messages


def job_ids(html: str) -> list[str]:
    return re.findall(r'<tr id="j-[0-9a-f]+"[^>]* data-job="([^"]+)"', html)


def test_a_queue_page_of_200_big_rows_shows_all_200_and_a_push_sends_them_in_parts_of_one_message_each(
        console_mq: EchoMQ, operator_client: Client, operator_cookie: bytes) -> None:
    console_mq.enqueue_many("wide", ["é" * 5000] * 300)

    page = operator_client.get("/queue/?q=wide&limit=200").content.decode()
    shown = job_ids(page)
    messages = async_to_sync(first_messages)("/ws/queue/?q=wide&limit=200", operator_cookie,
                                             re.compile(r'data-part="(\d+)" data-parts="\1"'))
    parts = int(re.findall(r'data-parts="(\d+)"', messages[-1])[0])

    assert shown == [row.id for row in console_mq.page("wide", "pending", limit=200).rows]
    first = next(m for m in messages if 'id="queue-jobs"' in m)
    rest = [next(m for m in messages if f'data-part="{n}"' in m) for n in range(2, parts + 1)]
    assert parts > 1
    assert job_ids(first) + [i for m in rest for i in job_ids(m)] == shown
    assert max(len(m.encode()) for m in messages) <= MESSAGE_MAX_BYTES


def queue_names(html: str) -> list[str]:
    return re.findall(r'<td class="name"><a href="[^"]*">([^<]*)</a>', html)


def test_an_overview_of_200_of_the_widest_names_and_pause_reasons_shows_all_200_and_sends_them_in_parts(
        console_mq: EchoMQ, viewer_client: Client, operator_cookie: bytes) -> None:
    names = [f'{n:03d}' + '"' * 125 for n in range(230)]
    for name in names:
        console_mq.enqueue(name, "x")
        console_mq.pause(name, reason="<" * 4000)

    page = viewer_client.get("/?limit=200").content.decode()
    messages = async_to_sync(first_messages)(
        "/ws/overview/?limit=200", operator_cookie,
        re.compile(r'id="overview-table-part"[^>]* data-part="(\d+)" data-parts="\1"'))
    parts = int(re.findall(r'data-parts="(\d+)"', messages[-1])[0])

    rows = page[page.index('<tbody id="overview-rows"'):]
    shown = queue_names(rows[:rows.index("</tbody>")])
    assert [name[:3] for name in shown] == [f"{n:03d}" for n in range(200)]
    assert "1–200 of 230" in page
    first = next(m for m in messages if 'id="overview-table"' in m)
    rest = [next(m for m in messages if f'data-part="{n}"' in m) for n in range(2, parts + 1)]
    assert parts > 1
    assert "1–200 of 230" in first
    assert queue_names(first) + [name for m in rest for name in queue_names(m)] == shown
    assert max(len(m.encode()) for m in messages) <= MESSAGE_MAX_BYTES
