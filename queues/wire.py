"""A lean pipelined connection for the clients' scripts (standalone Redis only).

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
import select
import socket
from collections import deque
from collections.abc import Callable
from typing import Any

import hiredis
import redis
import redis.asyncio
import redis.exceptions
from redis._parsers.base import BaseParser

PLAIN = (redis.asyncio.Connection, redis.asyncio.UnixDomainSocketConnection, redis.Connection,
         redis.UnixDomainSocketConnection)


def wire_options(connection_class: type, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """Where and how to connect, when connections are plain TCP or unix sockets speaking RESP2; else None.

    TLS, RESP3, credential providers and decoded replies stay on redis-py's path.
    """
    if connection_class not in PLAIN or kwargs.get("credential_provider") is not None \
            or kwargs.get("protocol") not in (None, 2, "2") or kwargs.get("decode_responses"):
        return None
    return {name: kwargs.get(name) for name in ("host", "port", "path", "db", "username", "password", "client_name",
                                                 "socket_timeout", "socket_connect_timeout")}


# What waits for a write's replies: a caller's future, or (for a write nobody awaits) a function called with them.
Answered = Callable[[list[Any] | Exception], None]


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader(replyError=BaseParser.parse_error)
        self.waiters: deque[tuple[asyncio.Future[list[Any]] | Answered, int, list[Any]]] = deque()
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
            waiter, count, replies = waiters[0]
            replies.append(reply)
            if len(replies) == count:
                waiters.popleft()
                if not isinstance(waiter, asyncio.Future):
                    waiter(replies)
                elif not waiter.done():
                    waiter.set_result(replies)

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(redis.exceptions.ConnectionError(f"connection to redis lost: {exc or 'closed'}"))

    def fail(self, error: Exception) -> None:
        self.lost = self.lost or error
        while self.waiters:
            waiter = self.waiters.popleft()[0]
            if not isinstance(waiter, asyncio.Future):
                waiter(error)
            elif not waiter.done():
                waiter.set_exception(error)


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
        handshake = _handshake(options)
        if handshake:
            try:
                _check_handshake(await wire.call(b"".join(hiredis.pack_command(c) for c in handshake),
                                                 len(handshake)))
            except BaseException:
                wire.close()
                raise
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

    def send(self, packed: bytes, count: int, answered: Answered) -> None:
        """Writes commands nobody awaits: ``answered`` is called with their ``count`` replies as they arrive
        (or with the error that failed the connection). No task, no future: a worker's lease hint after each
        claim costs one write. A reply that never comes is caught by the next :meth:`call`'s timeout."""
        protocol = self._protocol
        if protocol.lost is not None:
            raise protocol.lost
        protocol.waiters.append((answered, count, []))
        protocol.transport.write(packed)  # type: ignore[union-attr]

    def close(self) -> None:
        transport = self._protocol.transport
        if transport is not None:
            transport.close()


def _handshake(options: dict[str, Any]) -> list[tuple[Any, ...]]:
    commands: list[tuple[Any, ...]] = []
    if options["password"]:
        commands.append(("AUTH", options["username"], options["password"]) if options["username"]
                        else ("AUTH", options["password"]))
    if options["db"]:
        commands.append(("SELECT", options["db"]))
    if options["client_name"]:
        commands.append(("CLIENT", "SETNAME", options["client_name"]))
    return commands


def _check_handshake(replies: list[Any]) -> None:
    for reply in replies:
        if isinstance(reply, Exception):
            raise redis.exceptions.AuthenticationError(f"redis refused the connection: {reply}")


class BlockingWire:
    """The same connection for one thread, blocking: a worker's handler thread makes its round trips on it
    without the event loop. A failed or timed-out connection is closed and stays failed."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reader = hiredis.Reader(replyError=BaseParser.parse_error)
        self._lost: Exception | None = None
        self._owed = 0
        # Asked before every call (closed_by_server): registered once, not made anew each time.
        self._readable = select.poll()
        self._readable.register(sock, select.POLLIN)

    @classmethod
    def open(cls, options: dict[str, Any]) -> BlockingWire:
        try:
            if options["path"]:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(options["socket_connect_timeout"])
                sock.connect(options["path"])
            else:
                sock = socket.create_connection((options["host"] or "localhost", options["port"] or 6379),
                                                timeout=options["socket_connect_timeout"])
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(options["socket_timeout"])
        except OSError as error:
            raise redis.exceptions.ConnectionError(f"cannot connect to redis: {error}") from error
        wire = cls(sock)
        commands = _handshake(options)
        # A call that fails closes the wire itself; a refusal is a reply, so close it here.
        replies = wire.call(b"".join(hiredis.pack_command(c) for c in commands), len(commands)) if commands else []
        if any(isinstance(reply, Exception) for reply in replies):
            wire.close()
        _check_handshake(replies)
        return wire

    @property
    def usable(self) -> bool:
        return self._lost is None

    def send(self, packed: bytes, count: int) -> None:
        """Writes commands nobody waits for: the next :meth:`call` reads their ``count`` replies first and drops them."""
        self.call(packed, 0)
        self._owed += count

    def closed_by_server(self) -> bool:
        """Whether an idle connection has something to read: the server closed it (a restart, CLIENT KILL,
        its idle timeout) or it holds a stray reply. Either way it must not carry the next call, which has
        not been sent yet, so the caller may open a new one instead. Not asked while replies are owed
        (:meth:`send`): those are readable too, and the next call reads them first."""
        if self._owed:
            return False
        try:
            return bool(self._readable.poll(0))
        except OSError:
            return True

    def call(self, packed: bytes, count: int) -> list[Any]:
        if self._lost is not None:
            raise self._lost
        replies: list[Any] = []
        owed, self._owed = self._owed, 0
        count += owed
        try:
            self._sock.sendall(packed)
            while len(replies) < count:
                reply = self._reader.gets()
                if reply is not False:
                    replies.append(reply)
                    continue
                data = self._sock.recv(65536)
                if not data:
                    raise redis.exceptions.ConnectionError("connection to redis lost: closed")
                self._reader.feed(data)
        except TimeoutError:
            self._lost = redis.exceptions.TimeoutError(f"no reply from redis within {self._sock.gettimeout()} s")
        except OSError as error:
            self._lost = redis.exceptions.ConnectionError(f"connection to redis lost: {error}")
        except redis.exceptions.ConnectionError as error:
            self._lost = error
        if self._lost is not None:
            self.close()
            raise self._lost
        return replies[owed:]

    def close(self) -> None:
        self._lost = self._lost or redis.exceptions.ConnectionError("connection closed")
        self._sock.close()


__all__ = ["Wire", "BlockingWire", "wire_options"]
