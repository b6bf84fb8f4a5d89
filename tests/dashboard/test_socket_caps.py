"""A session, a user and a console process hold a bounded number of sockets, and what a page says over its socket
is rendered at the page's pace, however fast it says it."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.asgi import application
from dashboard.consumers import MIN_INTERVAL_S
from dashboard.socket_caps import TOO_MANY_SOCKETS, open_sockets
from queues import EchoMQ
from tests.support.sessions import session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


def communicator(cookie: bytes, path: str = "/ws/overview/") -> WebsocketCommunicator:
    return WebsocketCommunicator(application, path, headers=[
        (b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie)])


async def opened(cookie: bytes, path: str = "/ws/overview/") -> tuple[WebsocketCommunicator, int | None]:
    """A socket and the code it was closed with at once (None: it stays open)."""
    socket = communicator(cookie, path)
    connected, _ = await socket.connect(timeout=20)  # a bound, not a speed
    assert connected
    first = await socket.receive_output(timeout=20)
    return socket, first.get("code") if first["type"] == "websocket.close" else None


async def test_a_session_past_its_cap_is_closed_with_4429_and_another_users_socket_opens(
        console_mq: EchoMQ, viewer_cookie: bytes, operator_cookie: bytes, settings: SettingsWrapper,
        stop_followers: None) -> None:
    settings.EMQ_SOCKETS_PER_USER = 3
    sockets = [await opened(viewer_cookie) for _ in range(4)]
    other, other_code = await opened(operator_cookie)

    assert [code for _, code in sockets] == [None, None, None, TOO_MANY_SOCKETS]
    assert other_code is None
    for socket, _ in [*sockets, (other, None)]:
        await socket.disconnect()


async def test_a_user_past_the_cap_is_closed_with_4429_whatever_sessions_they_open(
        console_mq: EchoMQ, viewer: User, settings: SettingsWrapper, stop_followers: None) -> None:
    settings.EMQ_SOCKETS_PER_USER = 2
    cookies = [await asyncio.to_thread(session_cookie, viewer) for _ in range(3)]

    sockets = [await opened(cookie) for cookie in cookies]

    assert [code for _, code in sockets] == [None, None, TOO_MANY_SOCKETS]
    for socket, _ in sockets:
        await socket.disconnect()


async def test_the_process_past_its_cap_closes_the_next_socket_and_a_closed_one_frees_its_place(
        console_mq: EchoMQ, viewer_cookie: bytes, operator_cookie: bytes, settings: SettingsWrapper,
        stop_followers: None) -> None:
    settings.EMQ_SOCKETS_PER_PROCESS = 2
    first, _ = await opened(viewer_cookie)
    second, _ = await opened(operator_cookie)

    third, third_code = await opened(viewer_cookie)
    await first.disconnect()
    await asyncio.sleep(0.1)
    fourth, fourth_code = await opened(viewer_cookie)

    assert third_code == TOO_MANY_SOCKETS and fourth_code is None
    for socket in (second, third, fourth):
        await socket.disconnect()
    await asyncio.sleep(0.1)
    assert open_sockets() == 0


async def test_a_page_that_says_its_filter_two_hundred_times_gets_a_few_renders_of_the_last(
        console_mq: EchoMQ, viewer_cookie: bytes, stop_followers: None) -> None:
    for name in ("mail", "billing", "search-index"):
        console_mq.enqueue(name, "x")
    socket, _ = await opened(viewer_cookie)
    await socket.receive_nothing(timeout=2)  # the first render, whole
    started = time.monotonic()

    for n in range(200):
        await socket.send_json_to({"filter": f"mail-{n}" if n < 199 else "billing"})
    messages = []
    while not await socket.receive_nothing(timeout=2):
        messages.append((await socket.receive_output(timeout=20))["text"])
    seconds = time.monotonic() - started

    # One render at once, then at most one a MIN_INTERVAL_S: far fewer than the 200 messages said.
    renders = [m for m in messages if "overview-rows" in m or "<table" in m]
    assert 1 <= len(renders) <= seconds / MIN_INTERVAL_S + 2, (len(renders), seconds)
    assert "billing" in renders[-1] and "mail-1" not in renders[-1]
    await socket.disconnect()

