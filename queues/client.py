"""Sync and asyncio clients: one surface, two transports.

Every read and move is written once, in :class:`Described`: one :class:`Call` (``sends``) or a plan of
several steps (``plans``). :class:`EchoMQ` sends them over the lean blocking wire (or redis-py's client),
:class:`AsyncEchoMQ` over redis-py's asyncio client; neither holds a read or move of its own.

Every call goes EVALSHA first; on NOSCRIPT (after SCRIPT FLUSH, a restart, a
failover to a node that never saw the script) it is sent once more as EVAL,
which runs it and caches it on that node. NOSCRIPT means the script did not
run, so sending it again cannot apply a move twice.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Concatenate, Final, Generic, ParamSpec, TypeVar, overload

import hiredis
import redis
import redis.exceptions
from redis.crc import key_slot

from . import moves, reads, why
from .cluster import QueueLocation, queue_location
from .connection import AsyncClient, SyncClient, connect, connect_async, is_cluster_client
from .errors import EmqError, InvalidInput, NotReplicated, Refused, Unavailable
from .keys import ANY_QUEUE_KEY_PATTERN, QUEUE_REGISTRY, QueueKeys, queue_of_key, validate_job_id, validate_queue_name
from .lease_index import hint_command, shard_of
from .moves import BatchResult, Call, ClaimedJob, MoveResult, _text
from .redis_errors import NOT_RUN as _NOT_RUN, UNREACHABLE as _UNREACHABLE, ResponseError, translate
from .scripts import script
from .wire import BlockingWire, Wire, wire_options

T = TypeVar("T")

# How many EXISTS one round trip of find_job sends.
_FIND_CHUNK: Final = 500

log = logging.getLogger(__name__)


def default_actor() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _translate(call: Call[Any], error: BaseException) -> BaseException:
    return translate(error, call.script)


def _result(call: Call[Any], reply: Any) -> Any:
    """A call's result from its reply, or the error it stands for."""
    try:
        if isinstance(reply, Exception):
            raise reply
        return call.parse(reply)
    except Exception as error:
        return _translate(call, error)


def _evalsha(call: Call[Any]) -> tuple[Any, ...]:
    return ("EVALSHA", script(call.script).sha, len(call.keys), *call.keys, *call.args)


def _eval(call: Call[Any]) -> tuple[Any, ...]:
    return ("EVAL", script(call.script).source, len(call.keys), *call.keys, *call.args)


def _lease_hints(calls: list[Call[Any]], results: list[Any], client: Any = None) -> list[tuple[Any, ...]]:
    """The lease index writes that follow these calls' results: one per queue whose claims claimed jobs,
    each to the queue's shard of the index as ``client`` (a cluster client, or None) sees the slot map."""
    earliest: dict[str, int] = {}
    for call, result in zip(calls, results):
        jobs = result.result if isinstance(result, NotReplicated) else result
        if isinstance(jobs, moves.FinishedAndClaimed):
            jobs = jobs.claimed
        if call.leases and isinstance(jobs, list) and jobs:
            deadline = min(job.lease_deadline_ms for job in jobs)
            earliest[call.leases] = min(deadline, earliest.get(call.leases, deadline))
    if client is None:
        return [hint_command(queue, deadline) for queue, deadline in earliest.items()]
    return [hint_command(queue, deadline, shard_of(client, queue).index_key) for queue, deadline in earliest.items()]


def _hint_failed(error: Exception) -> None:
    # The claim stands; the index is a hint, and discovery's pass puts the queue back in it.
    log.warning("could not note a claim's lease deadline in the lease index: %s", error)


def _hints_answered(replies: list[Any] | Exception) -> None:
    for reply in replies if isinstance(replies, list) else [replies]:
        if isinstance(reply, Exception):
            _hint_failed(reply)


def _packed(calls: list[Call[Any]]) -> bytes:
    return b"".join(hiredis.pack_command(_evalsha(call)) for call in calls)


def _waits_for(calls: list[Call[Any]], wait_replicas: int) -> bool:
    """Whether ``WAIT`` follows these calls: with ``wait_replicas``, after any move (reads write nothing)."""
    return wait_replicas > 0 and any(script(call.script).writes for call in calls)


def _replicated(calls: list[Call[Any]], results: list[Any], acked: Any, wanted: int, timeout_ms: int) -> list[Any]:
    """Each move's result, or :class:`NotReplicated` (holding it) when ``WAIT`` counted fewer than ``wanted``."""
    count = 0 if isinstance(acked, Exception) else int(acked)
    if count >= wanted:
        return results
    return [NotReplicated(call.script, result, count, wanted, timeout_ms)
            if script(call.script).writes and not isinstance(result, Exception) else result
            for call, result in zip(calls, results)]


class BlockingRunner:
    """Runs calls pipelined on lean blocking connections (:class:`~queues.wire.BlockingWire`), standalone
    Redis only: the sync client's scripts and a worker's handler thread (see :meth:`AsyncEchoMQ.blocking_runner`).

    A call takes an idle connection or opens one, so threads never share one mid-call; a connection that
    failed is dropped. With ``wait_replicas`` a batch holding a move is followed by ``WAIT`` on the same
    connection, and a move fewer replicas acknowledged comes back as :class:`NotReplicated`.
    """

    def __init__(self, options: dict[str, Any], *, wait_replicas: int = 0, wait_timeout_ms: int = 1000) -> None:
        self._options = options
        self._idle: list[BlockingWire] = []
        self._wait: tuple[Any, ...] = ("WAIT", wait_replicas, wait_timeout_ms)
        self._pid = os.getpid()

    def _take(self) -> BlockingWire:
        """An idle connection the server has not closed meanwhile, or a new one."""
        if self._pid != os.getpid():
            # A forked child must not read the parent's replies off a shared socket (nor close it).
            self._idle, self._pid = [], os.getpid()
        while True:
            try:
                wire = self._idle.pop()
            except IndexError:  # none idle (another thread may have taken the last one)
                return BlockingWire.open(self._options)
            if not wire.closed_by_server():
                return wire
            wire.close()

    def run_many(self, calls: list[Call[Any]]) -> list[Any]:
        """As :meth:`EchoMQ.run_many`: one round trip, each call its own atomic script; a lost connection
        raises ``Unavailable`` (whether the calls ran is unknown) and the next call opens a new one."""
        if not calls:
            return []
        waits = _waits_for(calls, self._wait[1])
        try:
            wire = self._take()
        except Exception as error:
            raise _translate(calls[0], error) from error
        try:
            packed = _packed(calls)
            if waits:
                packed += hiredis.pack_command(self._wait)
            replies = wire.call(packed, len(calls) + waits)
            acked = replies.pop() if waits else None
            results: list[Any] = []
            for call, reply in zip(calls, replies):
                if isinstance(reply, redis.exceptions.NoScriptError):
                    # Not cached (a SCRIPT FLUSH, a restart): the script did not run, so EVAL runs it once.
                    again = wire.call(hiredis.pack_command(_eval(call)) + (hiredis.pack_command(self._wait)
                                                                           if waits else b""), 1 + waits)
                    reply = again[0]
                    if waits:
                        acked = again[1]
                results.append(_result(call, reply))
            hints = _lease_hints(calls, results)
            if hints:
                # Sent without waiting (the next call on this wire reads the replies): a handler starts no later.
                try:
                    wire.send(b"".join(hiredis.pack_command(hint) for hint in hints), len(hints))
                except Exception as error:
                    _hint_failed(error)
        except Exception as error:
            raise _translate(calls[0], error) from error
        finally:
            if wire.usable:
                self._idle.append(wire)
        if waits:
            return _replicated(calls, results, acked, self._wait[1], self._wait[2])
        return results

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for wire in idle:
            wire.close()


@dataclass(frozen=True, slots=True)
class KnownQueues:
    names: list[str]
    stale: str  # why the list is the last one read, or '' when it was read just now
    # Registry entries that are not queue names, exact (bytes that are not UTF-8 kept by surrogateescape):
    # show them through queues.visible, which writes those bytes as \\xNN.
    odd: list[str] = field(default_factory=list)


def registered_name(entry: bytes | str) -> str | None:
    """The queue a registry entry names, or None when it is not a valid name ('bad name', bytes not UTF-8)."""
    try:
        return validate_queue_name(entry.decode() if isinstance(entry, bytes) else entry)
    except (UnicodeDecodeError, InvalidInput):
        return None


def _registry(entries: Iterable[bytes | str]) -> tuple[list[str], list[str]]:
    """The registry's queue names, and its other entries as text, both sorted."""
    names, odd = [], []
    for entry in set(entries):
        name = registered_name(entry)
        if name is None:
            odd.append(entry.decode(errors="surrogateescape") if isinstance(entry, bytes) else entry)
        else:
            names.append(name)
    return sorted(names), sorted(odd)


def _wrong_type(error: BaseException) -> bool:
    return isinstance(error, ResponseError) and str(error).startswith("WRONGTYPE")


def _registry_refused(kind: object) -> Refused:
    return Refused("queues", "", "wrongtype", QUEUE_REGISTRY, _text(kind))


P = ParamSpec("P")


class sends(Generic[P, T]):
    """A read or move described once, as the :class:`Call` it sends: :class:`EchoMQ` runs the call and
    returns its result, :class:`AsyncEchoMQ` returns the coroutine that runs it."""

    def __init__(self, describe: Callable[Concatenate[Any, P], Call[T]]) -> None:
        self.describe = describe
        self.__doc__ = describe.__doc__
        self.__name__ = describe.__name__

    @overload
    def __get__(self, client: None, owner: type) -> sends[P, T]: ...
    @overload
    def __get__(self, client: EchoMQ, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, client: AsyncEchoMQ, owner: type) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, client: Any, owner: type) -> Any:
        if client is None:
            return self
        describe = self.describe

        def send(*args: P.args, **kwargs: P.kwargs) -> Any:
            return client.run(describe(client, *args, **kwargs))

        bound = _bound(send, describe)
        # Kept on the client, as a method bound once: a move sent one by one looked it up on every call.
        vars(client)[self.__name__] = bound
        return bound


def _bound(send: Callable[..., Any], describe: Callable[..., Any]) -> Callable[..., Any]:
    """``send`` named, documented and signed as ``describe`` without its first argument (the client)."""
    send.__name__ = send.__qualname__ = describe.__name__
    send.__doc__ = describe.__doc__
    send.__signature__ = _signature_without_client(describe)  # type: ignore[attr-defined]
    return send


@functools.cache
def _signature_without_client(describe: Callable[..., Any]) -> inspect.Signature:
    # Worked out once per move, not on every call: a move sent one by one paid for inspect each time.
    signature = inspect.signature(describe)
    return signature.replace(parameters=list(signature.parameters.values())[1:])


@dataclass(frozen=True, slots=True)
class Command:
    """A plain Redis command a plan sends (SSCAN, XRANGE, a pipeline of EXISTS, ...): ``send(redis)`` asks the
    client's redis-py connection; the async client awaits what it returns. Its errors are redis-py's, for the
    plan to translate."""

    send: Callable[[Any], Any]


# One step of a plan: a call (run: its error raised), calls in one round trip (each result or its error), a command.
Step = Call[Any] | list[Call[Any]] | Command
Plan = Generator[Step, Any, T]


class plans(Generic[P, T]):
    """A read or move of several steps, described once as a plan: a generator that yields each step and is
    sent its answer (or has its error raised where it yielded). :class:`EchoMQ` drives it to its end and
    returns its value, :class:`AsyncEchoMQ` returns the coroutine that does."""

    def __init__(self, describe: Callable[Concatenate[Any, P], Plan[T]]) -> None:
        self.describe = describe
        self.__doc__ = describe.__doc__
        self.__name__ = describe.__name__

    @overload
    def __get__(self, client: None, owner: type) -> plans[P, T]: ...
    @overload
    def __get__(self, client: EchoMQ, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, client: AsyncEchoMQ, owner: type) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, client: Any, owner: type) -> Any:
        if client is None:
            return self
        describe = self.describe

        def send(*args: P.args, **kwargs: P.kwargs) -> Any:
            return client.drive(describe(client, *args, **kwargs))

        return _bound(send, describe)


class Described:
    """Every read and move, described once for both clients (each sends it its way): one call (``sends``),
    or a plan of several steps (``plans``)."""

    actor: str
    redis: Any
    # The registry as this client read it last (None: never), and the entries of it that are not queue names.
    _last_queues: list[str] | None
    _odd_queues: list[str]

    # Moves -----------------------------------------------------------------

    @sends
    def enqueue(self, queue: str, payload: object, *, job_id: str | None = None, delay_ms: int = 0,
                max_attempts: int = moves.DEFAULT_MAX_ATTEMPTS) -> Call[str]:
        return moves.enqueue(queue, payload, job_id=job_id, delay_ms=delay_ms, max_attempts=max_attempts,
                             actor=self.actor)

    @sends
    def claim(self, queue: str, *, lease_ms: int = moves.DEFAULT_LEASE_MS, count: int = 1) -> Call[list[ClaimedJob]]:
        return moves.claim(queue, lease_ms=lease_ms, worker=self.actor, count=count)

    @sends
    def extend(self, queue: str, job_id: str, token: object, *, lease_ms: int = moves.DEFAULT_LEASE_MS) -> Call[int]:
        return moves.extend(queue, job_id, token, lease_ms=lease_ms, actor=self.actor)

    @sends
    def complete(self, queue: str, job_id: str, token: object) -> Call[int]:
        return moves.complete(queue, job_id, token, actor=self.actor)

    @sends
    def fail(self, queue: str, job_id: str, token: object, *, error: str = "",
             backoff_ms: int = moves.DEFAULT_BACKOFF_MS) -> Call[str]:
        return moves.fail(queue, job_id, token, error=error, backoff_ms=backoff_ms, actor=self.actor)

    @sends
    def release(self, queue: str, job_id: str, token: object) -> Call[int]:
        return moves.release(queue, job_id, token, actor=self.actor)

    @sends
    def pause(self, queue: str, *, reason: str = "") -> Call[moves.PauseResult]:
        return moves.pause(queue, reason=reason, actor=self.actor)

    @sends
    def resume(self, queue: str) -> Call[moves.PauseResult]:
        return moves.resume(queue, actor=self.actor)

    @sends
    def operator_move(self, move: str, queue: str, job_id: str, *, expect_state: str | None = None,
                      expect_attempts: int | str | None = None, extra_attempts: int = 1,
                      arguments: Mapping[str, object] | None = None) -> Call[MoveResult]:
        """``arguments``: the move's own (edit: payload, max_attempts, retry; restore: version)."""
        return moves.operator_move(move, queue, job_id, expect_state=expect_state, expect_attempts=expect_attempts,
                                   actor=self.actor, extra_attempts=extra_attempts, arguments=arguments)

    @sends
    def retry(self, queue: str, job_id: str, *, expect_state: str | None = None,
              expect_attempts: int | str | None = None, extra_attempts: int = 1) -> Call[MoveResult]:
        return moves.operator_move("retry", queue, job_id, expect_state=expect_state, expect_attempts=expect_attempts,
                                   actor=self.actor, extra_attempts=extra_attempts)

    @sends
    def recover(self, queue: str, job_id: str, *, expect_state: str | None = None,
                expect_attempts: int | str | None = None) -> Call[MoveResult]:
        return moves.operator_move("recover", queue, job_id, expect_state=expect_state,
                                   expect_attempts=expect_attempts, actor=self.actor)

    @sends
    def promote(self, queue: str, job_id: str, *, expect_state: str | None = None,
                expect_attempts: int | str | None = None) -> Call[MoveResult]:
        return moves.operator_move("promote", queue, job_id, expect_state=expect_state,
                                   expect_attempts=expect_attempts, actor=self.actor)

    @sends
    def cancel(self, queue: str, job_id: str, *, expect_state: str | None = None,
               expect_attempts: int | str | None = None) -> Call[MoveResult]:
        return moves.operator_move("cancel", queue, job_id, expect_state=expect_state,
                                   expect_attempts=expect_attempts, actor=self.actor)

    @sends
    def delete(self, queue: str, job_id: str, *, expect_state: str | None = None,
               expect_attempts: int | str | None = None) -> Call[MoveResult]:
        return moves.operator_move("delete", queue, job_id, expect_state=expect_state,
                                   expect_attempts=expect_attempts, actor=self.actor)

    # Reads -----------------------------------------------------------------

    @sends
    def server_time_ms(self, queue: str) -> Call[int]:
        """The clock of the server that holds ``queue`` (the one its scripts read)."""
        return reads.clock(queue)

    @sends
    def stats(self, queue: str) -> Call[reads.QueueStats]:
        return reads.stats(queue)

    @sends
    def count_older(self, queue: str, state: str, *, older_than_ms: int = 0) -> Call[int]:
        return reads.count_older(queue, state, older_than_ms)

    @sends
    def page(self, queue: str, state: str, **where: Any) -> Call[reads.Page]:
        """A page of a state's set; ``where`` as :func:`queues.reads.page` takes it (offset, after, limit, ...)."""
        return reads.page(queue, state, **where)

    @sends
    def job(self, queue: str, job_id: str, *, payload_bytes: int = reads.JOB_PAYLOAD_BYTES) -> Call[reads.JobView]:
        return reads.job(queue, job_id, payload_bytes=payload_bytes)

    @sends
    def payload(self, queue: str, job_id: str, *, max_bytes: int = reads.PAYLOAD_READ_MAX) -> Call[bytes]:
        """The whole payload, for a download; :class:`Refused` (``too_large``) above ``max_bytes``."""
        return reads.payload(queue, job_id, max_bytes=max_bytes)

    @sends
    def job_events(self, queue: str, job_id: str) -> Call[list[reads.Event]]:
        """A job's history, newest first, from its own hash: O(its length) however busy the queue is."""
        return reads.history(queue, job_id)

    @plans
    def stats_many(self, queues: list[str]) -> Plan[list[reads.QueueStats | Exception]]:
        """Each queue's stats or the error its read met, in order (one round trip per node)."""
        results: list[reads.QueueStats | Exception] = yield [reads.stats(q) for q in queues]
        return results

    @plans
    def events(self, queue: str, *, count: int = 100, after: str | None = None, up_to: str | None = None,
               since_ms: int | None = None) -> Plan[list[reads.Event]]:
        """The newest ``count`` events, newest first (none newer than the id ``up_to``, none older than
        ``since_ms``); or, with ``after``, the ones after that id, oldest first."""
        span = _EventsRange.of(queue, count, after, up_to, since_ms)
        try:
            if span.forward:
                entries = yield Command(lambda r: r.xrange(span.key, span.start, span.end, count=span.count))
            else:
                entries = yield Command(lambda r: r.xrevrange(span.key, span.start, span.end, count=span.count))
        except Exception as error:
            raise span.translate(error) from error
        return [reads.parse_event(entry_id, data) for entry_id, data in entries]

    def _registry_read(self) -> Plan[list[str]]:
        entries: list[bytes | str] = []
        cursor: Any = 0
        try:
            while True:
                cursor, found = yield Command(partial(_registry_scan, cursor=cursor))
                entries += found
                if int(cursor) == 0:
                    break
            names, self._odd_queues = _registry(entries)
        except Exception as error:
            if _wrong_type(error):
                raise _registry_refused((yield Command(lambda r: r.type(QUEUE_REGISTRY)))) from error
            raise translate(error, "reading the queue registry") from error
        self._last_queues = names
        return names

    @plans
    def queues(self) -> Plan[list[str]]:
        """The registered queue names, sorted (``emq:queues``; see :meth:`EchoMQ.discover_queues`).

        An entry that is not a queue name (another writer's 'bad name', bytes that are not UTF-8) is
        left out; :meth:`known_queues` lists those too. A registry of another type is :class:`Refused`.
        """
        return (yield from self._registry_read())

    @plans
    def known_queues(self) -> Plan[KnownQueues]:
        """The registered queues or, when the registry cannot be read, the list this client read last.

        On a cluster the registry lives on one master: while that master is
        down, the queues on the others must still be listed and served.
        """
        try:
            return KnownQueues((yield from self._registry_read()), "", self._odd_queues)
        except Unavailable as error:
            if self._last_queues is None:
                raise
            return KnownQueues(list(self._last_queues), f"the queue list could not be read ({error}); "
                                                        "showing the one read last")
        except Refused as refused:
            return KnownQueues(list(self._last_queues or []), f"the queue list could not be read: {refused}")

    @plans
    def queue_count(self) -> Plan[int]:
        """How many queues are registered (``SCARD emq:queues``, O(1)): a cheap look for a list that changed."""
        try:
            return int((yield Command(lambda r: r.scard(QUEUE_REGISTRY))))
        except Exception as error:
            raise translate(error, "SCARD") from error

    @plans
    def key_count(self) -> Plan[int]:
        """How many keys the Redis (every master of a cluster) holds, of any owner: DBSIZE, O(1)."""
        try:
            return int((yield Command(lambda r: r.dbsize())))
        except Exception as error:
            raise translate(error, "DBSIZE") from error

    @plans
    def find_job(self, job_id: str, queues: Iterable[str]) -> Plan[list[str]]:
        """The queues (of ``queues``) that hold a job with this id: one pipelined EXISTS per queue."""
        job_id = validate_job_id(job_id)
        names = list(queues)
        found: list[str] = []
        try:
            for start in range(0, len(names), _FIND_CHUNK):
                chunk = names[start:start + _FIND_CHUNK]
                keys = [QueueKeys(name).job(job_id) for name in chunk]
                hits = yield Command(partial(_exists, keys=keys))
                found += [name for name, hit in zip(chunk, hits) if hit]
        except Exception as error:
            raise translate(error, "looking for a job") from error
        return found

    @plans
    def ping(self) -> Plan[None]:
        """Raises :class:`Unavailable` unless the server (or the cluster node the client asks) answers PING."""
        try:
            yield Command(lambda r: r.ping())
        except Exception as error:
            raise translate(error, "PING") from error

    # Why a queue or a job is not moving (queues.why decides from the evidence) ---------

    @plans
    def sweeper_lock(self, queue: str | None = None) -> Plan[why.Sweeper]:
        """Who holds the sweeper's lock on this Redis (the default lock; with ``EMQ_LOCK_URLS`` it lives on those
        masters: ask :func:`queues.sweeper.sweeper_holder` instead). On a cluster, the lock of ``queue``'s shard,
        or without a queue the first shard's lock that is held. A read that failed says why (unknown), never raises."""
        return (yield from _sweeper_read(queue))

    @plans
    def queue_why(self, queue: str, *, sweeper: why.Sweeper | None = None) -> Plan[why.Why]:
        """Why ``queue`` is (not) draining: two round trips (one with ``sweeper`` given), a fixed number of commands."""
        try:
            evidence = yield why.queue_evidence(queue)
        except EmqError as error:
            return why.unknown(error)
        return why.decide_queue(evidence, sweeper if sweeper is not None else (yield from _sweeper_read(queue)))

    @plans
    def job_why(self, queue: str, job_id: str, *, sweeper: why.Sweeper | None = None) -> Plan[why.Why]:
        """Why the job is (not) moving, as :meth:`queue_why` reads it."""
        try:
            evidence = yield why.job_evidence(queue, job_id)
        except EmqError as error:
            return why.unknown(error)
        return why.decide_job(evidence, sweeper if sweeper is not None else (yield from _sweeper_read(queue)))

    # Moves of many jobs ------------------------------------------------------

    @plans
    def enqueue_many(self, queue: str, payloads: list[object], *, delay_ms: int = 0,
                     max_attempts: int = moves.DEFAULT_MAX_ATTEMPTS, chunk: int = 1000) -> Plan[list[str]]:
        """Enqueue with one ``enqueue_many`` script per ``chunk`` jobs, pipelined; returns the new ids."""
        chunk = moves._int(chunk, "chunk", 1, moves.MAX_BATCH)
        calls = [moves.enqueue_many(queue, payloads[start:start + chunk], delay_ms=delay_ms,
                                    max_attempts=max_attempts, actor=self.actor)
                 for start in range(0, len(payloads), chunk)]
        ids: list[str] = []
        for start in range(0, len(calls), 10):
            for result in (yield calls[start:start + 10]):
                if isinstance(result, BaseException):
                    raise result
                for entry in result:
                    if isinstance(entry, BaseException):
                        raise entry
                    ids.append(entry)
        return ids

    def _batches(self, make: Callable[[int], Call[BatchResult]]) -> Plan[list[BatchResult]]:
        done: list[BatchResult] = []
        skipped = 0
        while True:
            result: BatchResult = yield make(skipped)
            skipped += result.skipped
            done.append(result)
            if not result.more:
                return done

    @plans
    def batches(self, make: Callable[[int], Call[BatchResult]]) -> Plan[list[BatchResult]]:
        """Calls a batch move again and again while it reports more; each batch's tally, in order.

        ``make(skip)`` builds the call; ``skip`` counts the inconsistent ids
        skipped so far, which stay at the head of the set.
        """
        return (yield from self._batches(make))

    @plans
    def recover_expired(self, queue: str, *, limit: int = 200) -> Plan[BatchResult]:
        return _total((yield from self._batches(
            lambda skip: moves.recover_expired(queue, limit=limit, actor=self.actor, skip=skip))))

    @plans
    def retry_failed(self, queue: str, *, limit: int = 200, extra_attempts: int = 1) -> Plan[BatchResult]:
        cutoff: int = yield reads.clock(queue)
        return _total((yield from self._batches(lambda skip: moves.retry_failed(
            queue, limit=limit, extra_attempts=extra_attempts, actor=self.actor, failed_before_ms=cutoff + 1,
            skip=skip))))

    @plans
    def purge(self, queue: str, state: str, *, older_than_ms: int = 0, limit: int = 200) -> Plan[BatchResult]:
        return _total((yield from self._batches(lambda skip: moves.purge(
            queue, state, older_than_ms=older_than_ms, limit=limit, actor=self.actor, skip=skip))))

    # Where a queue lives -----------------------------------------------------

    @property
    def is_cluster(self) -> bool:
        return is_cluster_client(self.redis)

    def location(self, queue: str) -> QueueLocation:
        """Where the queue's slot lives (a cluster's node; the one server otherwise)."""
        return queue_location(self.redis, queue)

    def keyslot(self, queue: str) -> int:
        return key_slot(QueueKeys(queue).prefix.encode())


def _sweeper_read(queue: str | None) -> Plan[why.Sweeper]:
    try:
        return why.first_held((yield Command(partial(why.lock_replies, queue=queue))))
    except Exception as error:
        return why.Sweeper("", None, str(error) or type(error).__name__)


def _registry_scan(redis_client: Any, cursor: Any) -> Any:
    return redis_client.sscan(QUEUE_REGISTRY, cursor, count=1000)


def _exists(redis_client: Any, keys: list[str]) -> Any:
    """EXISTS of each key, pipelined (redis-py's pipeline; the async one's ``execute`` is awaited)."""
    pipe = redis_client.pipeline(transaction=False)
    for key in keys:
        pipe.exists(key)
    return pipe.execute()


class EchoMQ(Described):
    """The sync client. ``EchoMQ.from_url()`` reads ``EMQ_REDIS_URL``.

    With ``wait_replicas=N`` every move is followed, on the same connection
    to the queue's master, by ``WAIT N wait_timeout_ms``; a move fewer than N
    replicas acknowledged raises :class:`NotReplicated` (it did run).
    """

    def __init__(self, client: SyncClient, *, actor: str | None = None, wait_replicas: int = 0,
                 wait_timeout_ms: int = 1000) -> None:
        self.redis: SyncClient = client
        self.actor = actor or default_actor()
        self._registered: set[str] = set()
        self._last_queues: list[str] | None = None
        self._odd_queues: list[str] = []
        self.wait_replicas = moves._int(wait_replicas, "wait_replicas", 0, 100)
        self.wait_timeout_ms = moves._int(wait_timeout_ms, "wait_timeout_ms", 0, 3_600_000)
        # Scripts go on lean blocking connections (as the asyncio client's do on its wire): redis-py's own
        # path costs about as much Python per call as Redis spends on the script. A cluster, TLS, RESP3 or
        # decoded replies stay on redis-py's path.
        pool = getattr(client, "connection_pool", None)
        options = wire_options(pool.connection_class, pool.connection_kwargs) \
            if pool is not None and not is_cluster_client(client) else None
        self._runner = BlockingRunner(options, wait_replicas=self.wait_replicas,
                                      wait_timeout_ms=self.wait_timeout_ms) if options is not None else None

    @classmethod
    def from_url(cls, url: str | None = None, *, actor: str | None = None, wait_replicas: int = 0,
                 wait_timeout_ms: int = 1000, **options: Any) -> EchoMQ:
        return cls(connect(url, **options), actor=actor, wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms)

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
        self.redis.close()

    def run(self, call: Call[T]) -> T:
        if self._runner is not None:
            result = self._runner.run_many([call])[0]
            if isinstance(result, Exception):
                if isinstance(result, NotReplicated) and call.registers:
                    self._register(call.registers)
                raise result
            if call.registers:
                self._register(call.registers)
            return result  # type: ignore[no-any-return]
        if self.wait_replicas and script(call.script).writes:
            return self._run_replicated(call)
        s = script(call.script)
        try:
            try:
                reply = self.redis.evalsha(s.sha, len(call.keys), *call.keys, *call.args)
            except redis.exceptions.NoScriptError:
                reply = self.redis.eval(s.source, len(call.keys), *call.keys, *call.args)
            result = call.parse(reply)
        except Exception as error:
            raise _translate(call, error) from error
        if call.registers:
            self._register(call.registers)
        self._hint_leases([call], [result])
        return result

    def drive(self, plan: Plan[T]) -> T:
        """Runs a plan (see :class:`plans`) to its end: each step sent as it is yielded, its answer sent back."""
        answer: Any = None
        error: Exception | None = None
        while True:
            try:
                step = plan.send(answer) if error is None else plan.throw(error)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            answer, error = None, None
            try:
                if isinstance(step, Command):
                    answer = step.send(self.redis)
                elif isinstance(step, list):
                    answer = self.run_many(step)
                else:
                    answer = self.run(step)
            except Exception as failed:
                error = failed

    def _hint_leases(self, calls: list[Call[Any]], results: list[Any]) -> None:
        for hint in _lease_hints(calls, results, self.redis):
            try:
                self.redis.execute_command(*hint)
            except Exception as error:
                _hint_failed(error)

    def run_many(self, calls: list[Call[Any]]) -> list[Any]:
        """Pipelines the calls (one round trip per node); each is still its own atomic script.

        Returns, in order, each call's result or the exception it raised.
        """
        if not calls:
            return []
        if self._runner is not None:
            results = self._runner.run_many(calls)
            for call, result in zip(calls, results):
                if call.registers and (not isinstance(result, Exception) or isinstance(result, NotReplicated)):
                    self._register(call.registers)
            return results
        if self.wait_replicas:
            return [self._result_or_error(call) for call in calls]
        if is_cluster_client(self.redis):
            return self._run_many_on_cluster(calls)
        return self._pipelined(self.redis, calls)

    def _pipelined(self, client: Any, calls: list[Call[Any]]) -> list[Any]:
        try:
            pipe = client.pipeline(transaction=False)
            for call in calls:
                s = script(call.script)
                pipe.evalsha(s.sha, len(call.keys), *call.keys, *call.args)
            replies = pipe.execute(raise_on_error=False)
        except Exception as error:
            if client is not self.redis:
                # A node pipeline bypasses the cluster client, which would have
                # refreshed its slot map on this error (a failover, say).
                self._refresh_slots()
            raise _translate(calls[0], error) from error
        results: list[Any] = []
        registers: list[str] = []
        for call, reply in zip(calls, replies):
            if isinstance(reply, _NOT_RUN):
                # The script did not run (not cached, or the slot lives elsewhere
                # now): send it again alone, through the redirect-following path.
                try:
                    results.append(self.run(call))
                except Exception as error:
                    results.append(error)
                continue
            try:
                if isinstance(reply, Exception):
                    raise reply
                results.append(call.parse(reply))
                if call.registers and call.registers not in self._registered:
                    registers.append(call.registers)
            except Exception as error:
                results.append(_translate(call, error))
        if registers:
            # One SADD for the batch, not one round trip per queue; when it fails, the calls that
            # needed it say so (as one SADD each did before).
            try:
                self.redis.sadd(QUEUE_REGISTRY, *dict.fromkeys(registers))
                self._registered.update(registers)
            except Exception as error:
                failed = set(registers)
                results = [_translate(call, error) if call.registers in failed and not isinstance(result, Exception)
                           else result for call, result in zip(calls, results)]
        self._hint_leases(calls, results)
        return results

    def _run_many_on_cluster(self, calls: list[Call[Any]]) -> list[Any]:
        # redis-py's cluster pipeline refuses EVALSHA, so group the calls by the
        # node that owns their slot and pipeline each group on that node.
        groups: dict[str, tuple[Any, list[int]]] = {}
        for index, call in enumerate(calls):
            node = self.redis.get_node_from_key(call.keys[0])  # type: ignore[union-attr]
            groups.setdefault(node.name, (node, []))[1].append(index)
        results: list[Any] = [None] * len(calls)
        for node, indexes in groups.values():
            connection = self.redis.get_redis_connection(node)  # type: ignore[union-attr]
            try:
                group = self._pipelined(connection, [calls[i] for i in indexes])
            except Unavailable as error:
                # One master down must not hide the queues of the others (the console keeps serving them).
                group = [error] * len(indexes)
            for index, result in zip(indexes, group):
                results[index] = result
        return results

    def _result_or_error(self, call: Call[Any]) -> Any:
        try:
            return self.run(call)
        except Exception as error:
            return error

    def _run_replicated(self, call: Call[T]) -> T:
        """The move and ``WAIT`` pipelined on one connection to the queue's master.

        WAIT counts the replicas that acknowledged this connection's writes,
        so it must follow the script on the same connection; the cluster
        client could send it elsewhere, hence a pipeline on the node itself,
        following MOVED and ASK by hand (the script did not run on either).
        """
        s = script(call.script)
        node = self._node_client(call.keys[0])
        asking = use_eval = False
        for _ in range(5):
            pipe = node.pipeline(transaction=False)
            if asking:
                pipe.execute_command("ASKING")
            if use_eval:
                pipe.eval(s.source, len(call.keys), *call.keys, *call.args)
            else:
                pipe.evalsha(s.sha, len(call.keys), *call.keys, *call.args)
            pipe.execute_command("WAIT", self.wait_replicas, self.wait_timeout_ms)
            try:
                *_, reply, acked = pipe.execute(raise_on_error=False)
            except _UNREACHABLE as error:
                self._refresh_slots()
                raise _translate(call, error) from error
            if isinstance(reply, redis.exceptions.NoScriptError):
                use_eval = True
            elif isinstance(reply, redis.exceptions.AskError):
                moved = isinstance(reply, redis.exceptions.MovedError)
                if moved:
                    self._refresh_slots()
                node, asking = self._node_client_at(reply.host, reply.port), not moved
            else:
                break
        else:
            raise Unavailable(f"redis kept redirecting {call.script}; try again")
        try:
            if isinstance(reply, Exception):
                raise reply
            result = call.parse(reply)
        except Exception as error:
            raise _translate(call, error) from error
        if call.registers:
            self._register(call.registers)
        self._hint_leases([call], [result])
        if isinstance(acked, Exception) or int(acked) < self.wait_replicas:
            raise NotReplicated(call.script, result, 0 if isinstance(acked, Exception) else int(acked),
                                self.wait_replicas, self.wait_timeout_ms)
        return result

    def _node_client(self, key: str | bytes) -> redis.Redis:
        if not is_cluster_client(self.redis):
            return self.redis  # type: ignore[return-value]
        return self.redis.get_redis_connection(self.redis.get_node_from_key(key))  # type: ignore[union-attr]

    def _node_client_at(self, host: str, port: int) -> redis.Redis:
        node = self.redis.get_node(host=host, port=port)  # type: ignore[union-attr]
        if node is None:
            self._refresh_slots()
            node = self.redis.get_node(host=host, port=port)  # type: ignore[union-attr]
        if node is None:
            raise Unavailable(f"redis redirected to {host}:{port}, a node this client does not know")
        return self.redis.get_redis_connection(node)  # type: ignore[union-attr]

    def _refresh_slots(self) -> None:
        if is_cluster_client(self.redis):
            try:
                self.redis.nodes_manager.initialize()  # type: ignore[union-attr]
            except Exception:  # the next call refreshes again; this one already failed
                pass

    def _register(self, queue: str) -> None:
        if queue not in self._registered:
            try:
                self.redis.sadd(QUEUE_REGISTRY, queue)
            except ResponseError as error:
                # A registry of another type (another writer's): the move must not fail for it; the
                # console and `emq queues` say what the registry holds.
                if not _wrong_type(error):
                    raise
            self._registered.add(queue)

    def discover_queues(self, *, step: int = 1000) -> list[str]:
        """Finds queues written by runtimes that did not register them, and registers them.

        SCANs every primary in steps of ``step`` keys (never KEYS), so it is
        bounded per call but walks the whole keyspace: run it in the background.
        """
        found: set[str] = set()
        for node in _primaries(self.redis):
            for key in node.scan_iter(match=ANY_QUEUE_KEY_PATTERN, count=step, _type="zset"):
                name = queue_of_key(_text(key))
                if name:
                    found.add(name)
        known = set(self.queues())
        new = sorted(found - known)
        if new:
            self.redis.sadd(QUEUE_REGISTRY, *new)
        return sorted(found | known)


def _primaries(client: SyncClient) -> list[Any]:
    if is_cluster_client(client):
        return [client.get_redis_connection(node) for node in client.get_primaries()]  # type: ignore[union-attr]
    return [client]


@dataclass(frozen=True, slots=True)
class _EventsRange:
    """What an events read sends: XRANGE from after an id (``forward``), else XREVRANGE from the newest."""

    key: str
    forward: bool
    start: str
    end: str
    count: int

    @classmethod
    def of(cls, queue: str, count: int, after: str | None, up_to: str | None, since_ms: int | None) -> _EventsRange:
        key, count = QueueKeys(queue).events, moves._int(count, "count", 1, 10_000)
        if after is not None:
            return cls(key, True, f"({after}", "+", count)
        oldest = "-" if since_ms is None else f"{moves._int(since_ms, 'since_ms', 0)}-0"
        return cls(key, False, "+" if up_to is None else up_to, oldest, count)

    def translate(self, error: BaseException) -> BaseException:
        if isinstance(error, ResponseError):
            given = self.start.removeprefix("(") if self.forward else self.start
            return InvalidInput(f"bad event id {given!r}: {error}")
        return translate(error, "reading events")


def _total(batches: Iterable[BatchResult]) -> BatchResult:
    moved = missing = skipped = to_failed = next_deadline_ms = 0
    for batch in batches:
        moved += batch.moved
        missing += batch.missing
        skipped += batch.skipped
        to_failed += batch.to_failed
        next_deadline_ms = batch.next_deadline_ms
    return BatchResult(moved, missing, skipped, False, to_failed, next_deadline_ms)


class AsyncEchoMQ(Described):
    """The asyncio client, used by the worker runner and the console's live parts."""

    def __init__(self, client: AsyncClient, *, actor: str | None = None, wait_replicas: int = 0,
                 wait_timeout_ms: int = 1000) -> None:
        self.redis: AsyncClient = client
        self.actor = actor or default_actor()
        self.wait_replicas = moves._int(wait_replicas, "wait_replicas", 0, 100)
        self.wait_timeout_ms = moves._int(wait_timeout_ms, "wait_timeout_ms", 0, 3_600_000)
        self._registered: set[str] = set()
        self._last_queues: list[str] | None = None
        self._hints: set[asyncio.Task[None]] = set()
        self._odd_queues: list[str] = []
        pool = getattr(client, "connection_pool", None)
        self._wire_options = wire_options(pool.connection_class, pool.connection_kwargs) if pool else None
        # One lean connection per node ("" when standalone) and event loop, opened on first use: the
        # console's follower and its pages may share a client from different loops.
        self._wires: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Future[Wire]] = {}

    @classmethod
    def from_url(cls, url: str | None = None, *, actor: str | None = None, wait_replicas: int = 0,
                 wait_timeout_ms: int = 1000, **options: Any) -> AsyncEchoMQ:
        return cls(connect_async(url, **options), actor=actor, wait_replicas=wait_replicas,
                   wait_timeout_ms=wait_timeout_ms)

    async def close(self) -> None:
        running = asyncio.get_running_loop()
        await asyncio.gather(*(task for task in self._hints if task.get_loop() is running), return_exceptions=True)
        wires, self._wires = self._wires, {}
        for (loop, _), opening in wires.items():
            if opening.done() and not opening.cancelled() and opening.exception() is None and not loop.is_closed():
                if loop is running:
                    opening.result().close()
                else:
                    loop.call_soon_threadsafe(opening.result().close)
        await self.redis.aclose()

    async def run(self, call: Call[T]) -> T:
        if self.wait_replicas and script(call.script).writes:
            return await self._run_replicated(call)
        if self._wire_options is not None and not is_cluster_client(self.redis):
            # On the lean wire, as run_many and the sync client's runner: redis-py's pool, encoder and hooks
            # cost more than the script's own round trip.
            result = (await self.run_many([call]))[0]
            if isinstance(result, Exception):
                raise result
            await self._register(call)
            return result  # type: ignore[no-any-return]
        return await self._run_on_pool(call)

    async def _run_on_pool(self, call: Call[T]) -> T:
        """One call through redis-py's client (a cluster's follows its redirects), EVAL when not cached."""
        s = script(call.script)
        try:
            try:
                reply = await self.redis.evalsha(s.sha, len(call.keys), *call.keys, *call.args)
            except redis.exceptions.NoScriptError:
                reply = await self.redis.eval(s.source, len(call.keys), *call.keys, *call.args)
            result = call.parse(reply)
        except Exception as error:
            raise _translate(call, error) from error
        await self._register(call)
        await self._hint_leases([call], [result])
        return result

    async def _register(self, call: Call[Any]) -> None:
        if call.registers and call.registers not in self._registered:
            try:
                await self.redis.sadd(QUEUE_REGISTRY, call.registers)
            except ResponseError as error:  # as in EchoMQ._register
                if not _wrong_type(error):
                    raise
            self._registered.add(call.registers)

    async def drive(self, plan: Plan[T]) -> T:
        """As :meth:`EchoMQ.drive`, each step awaited."""
        answer: Any = None
        error: Exception | None = None
        while True:
            try:
                step = plan.send(answer) if error is None else plan.throw(error)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            answer, error = None, None
            try:
                if isinstance(step, Command):
                    answer = await step.send(self.redis)
                elif isinstance(step, list):
                    answer = await self.run_many(step)
                else:
                    answer = await self.run(step)
            except Exception as failed:
                error = failed

    async def _hint_leases(self, calls: list[Call[Any]], results: list[Any]) -> None:
        """Sends the lease index writes without waiting for them, so that the claim's jobs start no later: on
        the lean wire when it is open (one write, as the blocking runner does), else in a task of their own."""
        hints = _lease_hints(calls, results, self.redis)
        if not hints:
            return
        wire = self._open_wire()
        if wire is not None:
            try:
                wire.send(b"".join(hiredis.pack_command(hint) for hint in hints), len(hints), _hints_answered)
            except Exception as error:
                _hint_failed(error)
            return
        task = asyncio.create_task(self._send_hints(hints))
        self._hints.add(task)
        task.add_done_callback(self._hints.discard)

    async def _send_hints(self, hints: list[tuple[Any, ...]]) -> None:
        for hint in hints:
            try:
                await self.redis.execute_command(*hint)
            except Exception as error:
                _hint_failed(error)

    async def run_many(self, calls: list[Call[Any]]) -> list[Any]:
        """As :meth:`EchoMQ.run_many`: one round trip per node, each call still its own atomic script.

        With ``wait_replicas`` each node's batch is followed by ``WAIT`` on the same connection, and a move
        fewer replicas acknowledged comes back as :class:`NotReplicated` (it ran; its result is in it).
        """
        if not calls:
            return []
        if is_cluster_client(self.redis):
            return await self._run_many_on_cluster(calls)
        try:
            replies, acked = await self._pipelined("", self._wire_options, calls)
        except Exception as error:
            raise _translate(calls[0], error) from error
        return await self._results(calls, replies, acked)

    async def _results(self, calls: list[Call[Any]], replies: list[Any], acked: Any) -> list[Any]:
        results: list[Any] = []
        for call, reply in zip(calls, replies):
            if isinstance(reply, _NOT_RUN):
                # The script did not run (not cached, or its slot lives elsewhere
                # now): send it again alone, through the redirect-following path.
                try:
                    results.append(await self._run_on_pool(call))
                except Exception as error:
                    results.append(_translate(call, error))
                continue
            results.append(_result(call, reply))
        await self._hint_leases(calls, results)
        if acked is None:
            return results
        return _replicated(calls, results, acked, self.wait_replicas, self.wait_timeout_ms)

    def blocking_runner(self) -> BlockingRunner | None:
        """A runner of this client's server for one thread, on a blocking wire of its own;
        None when the client is a cluster or not a plain connection (TLS, RESP3, ...)."""
        if self._wire_options is None or is_cluster_client(self.redis):
            return None
        return BlockingRunner(self._wire_options, wait_replicas=self.wait_replicas,
                              wait_timeout_ms=self.wait_timeout_ms)

    async def _run_many_on_cluster(self, calls: list[Call[Any]]) -> list[Any]:
        """Groups the calls by the node that owns their slot and pipelines each group on that node.

        A node that cannot be reached fails its own calls (as ``Unavailable``,
        their outcome unknown) and makes the cluster client refresh its slot map.
        """
        cluster: Any = self.redis
        try:
            await cluster.initialize()
            groups: dict[str, tuple[Any, list[int]]] = {}
            for index, call in enumerate(calls):
                node = cluster.get_node_from_key(call.keys[0])
                groups.setdefault(node.name, (node, []))[1].append(index)
        except Exception as error:
            raise _translate(calls[0], error) from error
        results: list[Any] = [None] * len(calls)

        async def on_node(node: Any, indexes: list[int]) -> None:
            group = [calls[i] for i in indexes]
            options = wire_options(node.connection_class, node.connection_kwargs)
            if options is None and not self.wait_replicas:
                # Not a plain connection (TLS, say): each call alone through the cluster client.
                outcomes = await asyncio.gather(*(self.run(call) for call in group), return_exceptions=True)
            else:
                try:
                    replies, acked = await self._pipelined(node.name, options, group)
                except Exception as error:
                    await self._refresh_slots()
                    replies, acked = [_translate(call, error) for call in group], None
                outcomes = await self._results(group, replies, acked)
            for index, result in zip(indexes, outcomes):
                results[index] = result

        await asyncio.gather(*(on_node(node, indexes) for node, indexes in groups.values()))
        return results

    async def _run_replicated(self, call: Call[T]) -> T:
        """The move and ``WAIT`` pipelined on one connection to the queue's master.

        WAIT counts the replicas that acknowledged this connection's writes, so it must follow the script
        on the same connection; on a cluster this follows MOVED and ASK by hand (the script did not run on
        either), as the sync client does.
        """
        wait = ("WAIT", self.wait_replicas, self.wait_timeout_ms)
        cluster: Any = self.redis if is_cluster_client(self.redis) else None
        try:
            if cluster is not None:
                await cluster.initialize()
                node = cluster.get_node_from_key(call.keys[0])
                where, options = node.name, wire_options(node.connection_class, node.connection_kwargs)
            else:
                where, options = "", self._wire_options
            asking = use_eval = False
            for _ in range(5):
                commands: list[tuple[Any, ...]] = [("ASKING",)] if asking else []
                commands += [_eval(call) if use_eval else _evalsha(call), wait]
                try:
                    *_, reply, acked = await self._send(where, options, commands)
                except Exception:
                    await self._refresh_slots()
                    raise
                if isinstance(reply, redis.exceptions.NoScriptError):
                    use_eval = True
                elif isinstance(reply, redis.exceptions.AskError) and cluster is not None:
                    moved = isinstance(reply, redis.exceptions.MovedError)
                    if moved:
                        await self._refresh_slots()
                    node = cluster.get_node(host=reply.host, port=reply.port)
                    if node is None:
                        raise Unavailable(f"redis redirected to {reply.host}:{reply.port}, a node this client "
                                          "does not know")
                    where, options = node.name, wire_options(node.connection_class, node.connection_kwargs)
                    asking = not moved
                else:
                    break
            else:
                raise Unavailable(f"redis kept redirecting {call.script}; try again")
            if isinstance(reply, Exception):
                raise reply
            result = call.parse(reply)
        except Exception as error:
            raise _translate(call, error) from error
        await self._register(call)
        await self._hint_leases([call], [result])
        count = 0 if isinstance(acked, Exception) else int(acked)
        if count < self.wait_replicas:
            raise NotReplicated(call.script, result, count, self.wait_replicas, self.wait_timeout_ms)
        return result

    async def _refresh_slots(self) -> None:
        if not is_cluster_client(self.redis):
            return
        try:
            await self.redis.nodes_manager.initialize()  # type: ignore[union-attr]
        except Exception:  # the next call refreshes again; this one already failed
            pass

    async def _pipelined(self, where: str, options: dict[str, Any] | None,
                         calls: list[Call[Any]]) -> tuple[list[Any], Any]:
        """Sends every EVALSHA in one write to ``where`` (a node's name; "" when standalone) and returns the
        replies in order, an error reply in its place, and what the ``WAIT`` after them answered (None when
        none was sent)."""
        commands = [_evalsha(call) for call in calls]
        waits = _waits_for(calls, self.wait_replicas)
        if waits:
            commands.append(("WAIT", self.wait_replicas, self.wait_timeout_ms))
        replies = await self._send(where, options, commands)
        return (replies[:-1], replies[-1]) if waits else (replies, None)

    async def _send(self, where: str, options: dict[str, Any] | None, commands: list[tuple[Any, ...]]) -> list[Any]:
        """The commands in one write on the lean :class:`~queues.wire.Wire` to ``where`` (or, when the
        connection is not a plain one, on one pooled connection of a standalone client); their replies."""
        packed = b"".join(hiredis.pack_command(command) for command in commands)
        if options is not None:
            return await (await self._wire(where, options)).call(packed, len(commands))
        if is_cluster_client(self.redis):
            raise InvalidInput("wait_replicas needs plain TCP or unix connections to every master (not TLS)")
        return await self._pipelined_on_pool(packed, len(commands))

    def _open_wire(self) -> Wire | None:
        """This loop's lean wire to a standalone server when it is open and usable, else None (a cluster's
        index shard may live on another node than the one a wire reaches)."""
        if self._wire_options is None or is_cluster_client(self.redis):
            return None
        opening = self._wires.get((asyncio.get_running_loop(), ""))
        if opening is None or not opening.done() or opening.cancelled() or opening.exception() is not None:
            return None
        wire = opening.result()
        return wire if wire.usable else None

    async def _wire(self, where: str, options: dict[str, Any]) -> Wire:
        loop = asyncio.get_running_loop()
        opening = self._wires.get((loop, where))
        if opening is not None:
            if not opening.done():
                # Callers that arrive while it opens share the one connection.
                return await asyncio.shield(opening)
            if not opening.cancelled() and opening.exception() is None and opening.result().usable:
                return opening.result()
        for known in [key for key in self._wires if key[0].is_closed()]:
            del self._wires[known]
        opening = asyncio.ensure_future(Wire.open(options))
        self._wires[(loop, where)] = opening
        return await asyncio.shield(opening)

    async def _pipelined_on_pool(self, packed: bytes, count: int) -> list[Any]:
        """One write on one pooled connection, the replies read in order; a connection that
        fails or is cancelled half-way is dropped, never reused with replies left unread."""
        pool = self.redis.connection_pool  # type: ignore[union-attr]  # _send refused a cluster client
        connection = await pool.get_connection()
        try:
            await connection.send_packed_command(packed)
            replies: list[Any] = []
            for _ in range(count):
                try:
                    replies.append(await connection.read_response())
                except redis.exceptions.ResponseError as error:
                    replies.append(error)
            return replies
        except BaseException:
            await connection.disconnect()
            raise
        finally:
            await pool.release(connection)
