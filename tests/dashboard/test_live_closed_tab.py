"""A live page's tab that closes is normal: no traceback when the answer rendered for it finds the socket
closed before Channels has heard of the close.

Daphne drops a send once it has seen the TCP connection go; between the close frame and that moment
(a window of a reactor turn, which a loaded machine widens) autobahn raises ``Disconnected`` from the
send. The window cannot be held open from outside, so daphne's side is played by a wrapper that raises
exactly that from every send once the tab is "closed"; the console, the follower and Redis are real.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from autobahn.exception import Disconnected
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from queues import EchoMQ
from tests.support.sockets import receive_until

pytestmark = pytest.mark.django_db(transaction=True)


class ClosingTab:
    """The console behind daphne for a tab that has just closed: every send raises as daphne's does."""

    def __init__(self) -> None:
        self.closed = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def send_to_the_tab(message: dict[str, Any]) -> None:
            if self.closed and message["type"] == "websocket.send":
                raise Disconnected("Attempt to send on a closed protocol")
            await send(message)

        await application(scope, receive, send_to_the_tab)


async def test_a_tab_that_closed_while_its_page_was_answered_or_pushed_leaves_no_traceback(
        console_mq: EchoMQ, viewer_cookie: bytes, stop_followers: None, caplog: pytest.LogCaptureFixture) -> None:
    console_mq.enqueue("mail", "x")
    tab = ClosingTab()
    communicator = WebsocketCommunicator(tab, "/ws/queue/?q=mail", headers=[
        (b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", viewer_cookie)])
    connected, _ = await communicator.connect(timeout=20)  # a bound, not a speed
    assert connected
    await receive_until(communicator, lambda message: "jobs-table" in message or "<tr" in message)
    caplog.set_level(logging.WARNING)

    tab.closed = True
    # The page says which rows it shows (answered at once), and a job moves (pushed): both meet the closed tab.
    await communicator.send_json_to({"shown": ["a-job-the-page-shows"]})
    console_mq.enqueue("mail", "y")
    await communicator.receive_nothing(timeout=3)

    await communicator.disconnect()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
