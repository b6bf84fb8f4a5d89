"""Every live message a page gets is at most 64 KiB, whatever its queues' names, pause reasons or jobs
hold: the rows that do not fit start the next page, in the first render as in every push."""

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



async def first_messages(path: str, cookie: bytes, until: str, timeout: float = 15.0) -> list[str]:
    """The messages a fresh page gets, up to and including the first that holds ``until``."""
    communicator = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost"),
                                                                      (b"host", b"localhost"), (b"cookie", cookie)])
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    messages: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while not messages or until not in messages[-1]:
            messages.append(await communicator.receive_from(timeout=max(0.1, deadline - time.monotonic())))
    finally:
        await communicator.disconnect()
        await Follower.stop_all()
    return messages


def job_ids(html: str) -> list[str]:
    return re.findall(r'<tr id="j-[0-9a-f]+"[^>]* data-job="([^"]+)"', html)


def test_a_queue_page_of_200_big_rows_fits_one_message_and_the_next_page_goes_on_from_its_last_row(
        console_mq: EchoMQ, operator_client: Client, operator_cookie: bytes) -> None:
    console_mq.enqueue_many("wide", ["é" * 5000] * 300)

    page = operator_client.get("/queue/?q=wide&limit=200").content.decode()
    shown = job_ids(page)
    after = re.search(r'href="/queue/\?([^"]*after=[^"]*)" class="button" rel="next"', page)
    assert after is not None
    following = job_ids(operator_client.get("/queue/?" + after.group(1).replace("&amp;", "&")).content.decode())
    messages = async_to_sync(first_messages)("/ws/queue/?q=wide&limit=200", operator_cookie, 'id="queue-jobs"')

    assert 10 < len(shown) < 200
    in_order = [row.id for row in console_mq.page("wide", "pending", limit=len(shown) + 1).rows]
    assert shown + following[:1] == in_order
    assert job_ids(messages[-1]) == shown
    assert max(len(m.encode()) for m in messages) <= MESSAGE_MAX_BYTES


def test_an_overview_of_the_widest_names_and_pause_reasons_fits_one_message(
        console_mq: EchoMQ, viewer_client: Client, operator_cookie: bytes) -> None:
    names = [f'{n:03d}' + '"' * 125 for n in range(100)]
    for name in names:
        console_mq.enqueue(name, "x")
        console_mq.pause(name, reason="<" * 4000)

    page = viewer_client.get("/?limit=100").content.decode()
    messages = async_to_sync(first_messages)("/ws/overview/?limit=100", operator_cookie, 'id="overview-table"')

    shown = re.findall(r'<td class="name"><a href="[^"]*">([^<]*)</a>', page)
    assert 1 <= len(shown) < 100
    assert "next" in page and f"1–{len(shown)} of 100" in page
    assert max(len(m.encode()) for m in messages) <= MESSAGE_MAX_BYTES
