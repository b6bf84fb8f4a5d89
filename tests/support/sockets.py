"""A console WebSocket for a test: found on its page, connected with a session cookie, read until a message
says what is wanted."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from channels.testing import WebsocketCommunicator
from django.test import Client

from dashboard.asgi import application


async def connect(path: str, cookie: bytes | None, origin: bytes = b"http://localhost") -> WebsocketCommunicator:
    headers = [(b"origin", origin), (b"host", b"localhost")]
    if cookie:
        headers.append((b"cookie", cookie))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=20)  # a bound, not a speed: 1 s is not enough at load 20
    assert connected
    return communicator


async def receive_until(communicator: WebsocketCommunicator, check: Callable[[str], bool], timeout: float = 30.0) -> str:
    # A bound for a message that must come, not a speed: a machine at load 30 takes seconds.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message: str = await communicator.receive_from(timeout=deadline - time.monotonic())
        if check(message):
            return message
    raise AssertionError("no matching message")


def ws_path(client: Client, url: str) -> str:
    page = client.get(url)
    assert page.status_code == 200
    [found] = re.findall(r'ws-connect="(/ws/search/\?[^"]+)"', page.content.decode())
    path: str = found.replace("&amp;", "&")
    return path


async def messages_until(communicator: WebsocketCommunicator, check: Callable[[str], bool],
                         timeout: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        output = await communicator.receive_output(timeout=deadline - time.monotonic())
        if output["type"] == "websocket.close":
            break
        seen.append(output["text"])
        if check(output["text"]):
            return seen
    raise AssertionError(f"no matching message in {len(seen)}: {seen[-1:]}")
