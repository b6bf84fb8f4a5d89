"""A lean pipelined connection for the asyncio client's scripts (standalone Redis only).

redis-py's asyncio path costs about as much Python per round trip as Redis
spends on two scripts: a pool lock, a health check and a timeout per reply.
A worker makes thousands of small round trips a second, so
:meth:`AsyncEchoMQ.run_many` sends them here instead: one connection, packed
by hiredis, replies parsed by hiredis in the protocol's callback and handed
to the waiting callers in order. Several callers may pipeline on it at once
(Redis answers in the order it was asked).

A connection that fails, or a round that does not get its replies within
the socket timeout, is closed with every waiter failed (ConnectionError or
TimeoutError, which the client reports as ``Unavailable``: the outcome is
unknown, as after any lost connection). A caller that is cancelled leaves
its replies to be read and dropped, so the order stays right.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import hiredis
import redis.asyncio
import redis.exceptions
from redis._parsers.base import BaseParser

PLAIN = (redis.asyncio.Connection, redis.asyncio.UnixDomainSocketConnection)


def wire_options(connection_class: type, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """Where and how to connect, when connections are plain TCP or unix sockets speaking RESP2; else None.

    TLS, RESP3, credential providers and decoded replies stay on redis-py's path.
    """
    if connection_class not in PLAIN or kwargs.get("credential_provider") is not None \
            or kwargs.get("protocol") not in (None, 2, "2") or kwargs.get("decode_responses"):
        return None
    return {name: kwargs.get(name) for name in ("host", "port", "path", "db", "username", "password", "client_name",
                                                 "socket_timeout", "socket_connect_timeout")}


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader(replyError=BaseParser.parse_error)
        self.waiters: deque[tuple[asyncio.Future[list[Any]], int, list[Any]]] = deque()
        self.transport: asyncio.Transport | None = None
        self.lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        waiters = self.waiters
        while waiters:
            reply = self.reader.gets()
            if reply is False:
                return
            future, count, replies = waiters[0]
            replies.append(reply)
            if len(replies) == count:
                waiters.popleft()
                if not future.done():
                    future.set_result(replies)

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(redis.exceptions.ConnectionError(f"connection to redis lost: {exc or 'closed'}"))

    def fail(self, error: Exception) -> None:
        self.lost = self.lost or error
        while self.waiters:
            future = self.waiters.popleft()[0]
            if not future.done():
                future.set_exception(error)


class Wire:
    """One pipelined connection; ``await wire.call(packed, count)`` returns ``count`` replies in order.

    An error reply is returned in its place as the redis-py exception it maps to.
    """

    def __init__(self, protocol: _Protocol, timeout: float | None) -> None:
        self._protocol = protocol
        self._timeout = timeout

    @classmethod
    async def open(cls, options: dict[str, Any]) -> Wire:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(options["socket_connect_timeout"]):
                if options["path"]:
                    _, protocol = await loop.create_unix_connection(_Protocol, options["path"])
                else:
                    _, protocol = await loop.create_connection(_Protocol, options["host"] or "localhost",
                                                               options["port"] or 6379)
        except (OSError, TimeoutError) as error:
            raise redis.exceptions.ConnectionError(f"cannot connect to redis: {error}") from error
        wire = cls(protocol, options["socket_timeout"])
        handshake: list[tuple[Any, ...]] = []
        if options["password"]:
            handshake.append(("AUTH", options["username"], options["password"]) if options["username"]
                             else ("AUTH", options["password"]))
        if options["db"]:
            handshake.append(("SELECT", options["db"]))
        if options["client_name"]:
            handshake.append(("CLIENT", "SETNAME", options["client_name"]))
        if handshake:
            try:
                replies = await wire.call(b"".join(hiredis.pack_command(c) for c in handshake), len(handshake))
            except BaseException:
                wire.close()
                raise
            for reply in replies:
                if isinstance(reply, Exception):
                    wire.close()
                    raise redis.exceptions.AuthenticationError(f"redis refused the connection: {reply}")
        return wire

    @property
    def usable(self) -> bool:
        return self._protocol.lost is None

    async def call(self, packed: bytes, count: int) -> list[Any]:
        protocol = self._protocol
        if protocol.lost is not None:
            raise protocol.lost
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        protocol.waiters.append((future, count, []))
        protocol.transport.write(packed)  # type: ignore[union-attr]
        if self._timeout is None:
            return await future
        try:
            async with asyncio.timeout(self._timeout):
                return await future
        except TimeoutError:
            # Replies still owed would land on the next caller: this connection is done.
            error = redis.exceptions.TimeoutError(f"no reply from redis within {self._timeout} s")
            protocol.fail(error)
            self.close()
            raise error from None

    def close(self) -> None:
        transport = self._protocol.transport
        if transport is not None:
            transport.close()


__all__ = ["Wire", "wire_options"]
