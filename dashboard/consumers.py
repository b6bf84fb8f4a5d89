"""The WebSocket behind every live page: one per open page, fed by this process's follower.

The follower coalesces changes; each consumer coalesces again to its own
pace (at least MIN_INTERVAL_S between sends, longer when rendering is slow),
so a browser gets at most a few updates per second however fast jobs move.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from importlib import import_module
from typing import Any, Final
from urllib.parse import parse_qsl

from autobahn.exception import Disconnected
from channels.auth import get_user
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth.models import AnonymousUser

from queues import EmqError, InvalidInput, validate_job_id, validate_queue_name
from queues.follower import Follower, Subscription, stop_if_cancelled
from queues.keys import parse_job_id_token

from . import presenters
from .census import census_pass
from .deployments import (
    QUERY,
    SESSION_KEY,
    UnknownDeployment,
    current,
    deployment_allows,
    deployment_named,
    first_visible,
    use,
)
from .live import MESSAGE_MAX_BYTES, JobPage, LivePage, OverviewPage, QueuePage
from .redaction import reader_for
from .roles import can_view
from .services import redis_url
from .session_limits import session_expired

log = logging.getLogger(__name__)

MIN_INTERVAL_S: Final = 0.25
# How often an open socket asks again who its user is (a logout, a deactivation, a lost role).
RECHECK_USER_S: Final = 2.0
# Close codes the page's script explains (and htmx does not retry).
NOT_LOGGED_IN: Final = 4401
BAD_REQUEST: Final = 4400
# Signed in, but the account holds no console role (never had one, or lost it while the socket was open).
NO_ROLE: Final = 4403
NOT_FOUND: Final = 4404


async def refusal_code(user: Any) -> int | None:
    """4401 for nobody signed in, 4403 for an account that may not view the console or the socket's deployment,
    else None."""
    if user is None or not user.is_authenticated:
        return NOT_LOGGED_IN
    # has_perm reads the groups from the database: not on the event loop.
    if not await database_sync_to_async(can_view)(user):
        return NO_ROLE
    if not await database_sync_to_async(deployment_allows)(user, current(), False):
        return NO_ROLE
    return None


async def choose_deployment(consumer: AsyncWebsocketConsumer, query: dict[str, str]) -> bool:
    """Makes the deployment the socket's ``?d=`` (else its session) names the current one for the socket's
    life; False when it names none the console has."""
    session = consumer.scope.get("session")
    stored = await database_sync_to_async(lambda: session.get(SESSION_KEY, "") if session is not None else "")()
    asked = query.get(QUERY, "")
    try:
        use(deployment_named(asked or stored))
    except UnknownDeployment:
        if asked:
            return False
        # None chosen, or a session's choice of a deployment since removed from the setting.
        use(await database_sync_to_async(first_visible)(consumer.scope.get("user")))
    return True


async def accept_signed_in(consumer: AsyncWebsocketConsumer) -> dict[str, str] | None:
    """Accepts the socket; closes it with 4401 (nobody signed in) or 4403 (no console role), else returns its query."""
    # Accept first, then close with a code: a refused handshake reaches the
    # browser as 1006, which the ws extension would retry for ever.
    await consumer.accept()
    query = dict(parse_qsl(consumer.scope.get("query_string", b"").decode()))
    if not await choose_deployment(consumer, query):
        await consumer.close(code=BAD_REQUEST)
        return None
    code = await refusal_code(consumer.scope.get("user"))
    if code is not None:
        await consumer.close(code=code)
        return None
    return query


async def current_user(consumer: AsyncWebsocketConsumer) -> Any:
    """Who the socket's session belongs to now, read afresh; also put in the scope for what follows.

    Anonymous once the session was logged out or expired, the user was
    deactivated or deleted, or the password changed (Django's session hash).
    """
    session = consumer.scope.get("session")
    key = getattr(session, "session_key", None) if session is not None else None
    if not key:
        user: Any = AnonymousUser()
    else:
        store = await database_sync_to_async(import_module(settings.SESSION_ENGINE).SessionStore)(session_key=key)
        expired = await database_sync_to_async(session_expired)(store)
        user = AnonymousUser() if expired else await get_user({"session": store})
    consumer.scope["user"] = user
    return user


def watch_user(consumer: AsyncWebsocketConsumer,
               on_user: Callable[[Any], Awaitable[None]] | None = None) -> asyncio.Task[None]:
    """Re-reads the user every RECHECK_USER_S; closes the socket with 4401 once they are signed out, 4403 once
    their account lost the console role; else tells ``on_user`` who they are now."""

    async def watch() -> None:
        while True:
            await asyncio.sleep(RECHECK_USER_S)
            user = await current_user(consumer)
            code = await refusal_code(user)
            if code is not None:
                await consumer.close(code=code)
                return
            if on_user is not None:
                await on_user(user)

    return asyncio.create_task(watch())


class ClosedTabTolerant(AsyncWebsocketConsumer):
    """A socket whose sends to a tab that has just closed are dropped, not raised: normal for a live page."""

    async def send(self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False) -> None:
        try:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
        except (Disconnected, OSError):
            # Daphne raises autobahn's Disconnected (other ASGI servers an OSError); disconnect() follows.
            return


class LiveConsumer(AsyncWebsocketConsumer):
    page: LivePage
    follower: Follower
    subscription: Subscription | None = None
    pusher: asyncio.Task[None] | None = None
    watcher: asyncio.Task[None] | None = None
    # What the page said is rendered by this task, at the page's pace (see _render_heard).
    hearing: asyncio.Task[None] | None = None
    heard_again: bool = False
    next_heard_at: float = 0.0
    # One render and its messages at a time: a table sent in parts never has another's parts between them.
    turn: asyncio.Lock
    # What a page may say on this socket, by its key (the permission test wants an entry for each).
    MESSAGE_TYPES: tuple[str, ...] = ()

    def make_page(self, query: dict[str, str]) -> LivePage:
        raise NotImplementedError

    async def connect(self) -> None:
        query = await accept_signed_in(self)
        if query is None:
            return
        try:
            self.page = self.make_page(query)
        except InvalidInput:
            await self.close(code=BAD_REQUEST)
            return
        self.turn = asyncio.Lock()
        await self._read_reader(self.scope.get("user"))
        self.follower = await Follower.shared(redis_url(), poll_interval_s=float(settings.EMQ_LIVE_SAFETY_POLL_S))
        self.subscription = self.follower.subscribe(self.page.queues)
        self.pusher = asyncio.create_task(self._push())
        self.watcher = watch_user(self, self._read_reader)

    async def _read_reader(self, user: Any) -> None:
        """Whether the page shows masked values follows the user's role as it is now (an operator made a viewer
        sees them masked from the next push on)."""
        self.page.reader = await database_sync_to_async(reader_for)(user)

    async def disconnect(self, code: int) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
        if self.pusher is not None:
            self.pusher.cancel()
        if self.hearing is not None:
            self.hearing.cancel()
        if self.subscription is not None:
            self.subscription.close()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """A page says what it shows (its rows, its filter); actions never come this way, only over HTTP."""
        try:
            message = json.loads(text_data or "")
        except ValueError:
            return
        page = getattr(self, "page", None)
        if page is not None and isinstance(message, dict) and page.hear(message):
            self._render_heard()

    def _render_heard(self) -> None:
        """Renders what the page said at the page's pace: at most one render every MIN_INTERVAL_S (longer when
        rendering is slow), however fast messages arrive; the page as it stands after the last one is what is
        rendered, so nothing said is lost, only coalesced."""
        if self.hearing is not None and not self.hearing.done():
            self.heard_again = True
            return
        self.hearing = asyncio.create_task(self._render_heard_paced())

    async def _render_heard_paced(self) -> None:
        try:
            while True:
                await asyncio.sleep(max(0.0, self.next_heard_at - time.monotonic()))
                self.heard_again = False
                started = time.monotonic()
                async with self.turn:
                    await self._send_all(await self._safely(self.page.full(self.follower)))
                self.next_heard_at = time.monotonic() + max(MIN_INTERVAL_S, (time.monotonic() - started) * 4)
                if not self.heard_again:
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("a live page failed")
            await self.close(code=1011)

    async def _push(self) -> None:
        assert self.subscription is not None
        try:
            async with self.turn:
                await self._send_all(await self._safely(self.page.full(self.follower)))
            while True:
                # A cancel a render's Redis call lost must not leave this task waiting in next() for ever.
                stop_if_cancelled()
                update = await self.subscription.next()
                started = time.monotonic()
                async with self.turn:
                    await self._send_all(await self._safely(self.page.changed(self.follower, update)))
                await asyncio.sleep(max(MIN_INTERVAL_S, (time.monotonic() - started) * 4))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("a live page failed")
            await self.close(code=1011)

    async def _safely(self, work: Any) -> list[str]:
        try:
            return list(await work)
        except EmqError:
            # Redis went away mid-render; the follower has seen it too and its
            # next update brings the banner.
            return []

    async def _send_all(self, messages: list[str]) -> None:
        if self.subscription is not None:
            # A page that pages, sorts or filters anew shows other queues: the follower reads those now.
            self.subscription.watch(self.page.queues)
        for message in messages:
            if not message:
                continue
            if len(message.encode()) > MESSAGE_MAX_BYTES:
                # Never sent: the fragments are bounded by construction, so this is a bug to hear of,
                # and the page keeps what it shows rather than lose its socket to the frame limit.
                log.error("a live message of %d bytes was not sent (at most %d): %.200s",
                          len(message.encode()), MESSAGE_MAX_BYTES, message)
                continue
            try:
                await self.send(text_data=message)
            except (Disconnected, OSError):
                # The tab closed while this was being rendered: normal for a live page, not a fault.
                # Daphne raises autobahn's Disconnected (ASGI servers an OSError); disconnect() follows.
                return


class UnknownPathConsumer(AsyncWebsocketConsumer):
    """A socket to a path the console does not serve: accepted, then closed with 4404."""

    MESSAGE_TYPES: tuple[str, ...] = ()

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=NOT_FOUND)


class OverviewConsumer(LiveConsumer):
    MESSAGE_TYPES = ("filter",)

    def make_page(self, query: dict[str, str]) -> LivePage:
        return OverviewPage(presenters.OverviewQuery.from_query(query), census_pass())


class QueueConsumer(LiveConsumer):
    MESSAGE_TYPES = ("shown",)

    def make_page(self, query: dict[str, str]) -> LivePage:
        name = validate_queue_name(query.get("q", ""))
        return QueuePage(presenters.Window.from_query(name, query))


class JobConsumer(LiveConsumer):
    def make_page(self, query: dict[str, str]) -> LivePage:
        return JobPage(validate_queue_name(query.get("q", "")), validate_job_id(parse_job_id_token(query.get("id", ""))))
