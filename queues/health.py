"""What the Redis behind the queues says about itself: reachable, memory, eviction policy, scripting.

A Redis whose ``maxmemory-policy`` is anything but ``noeviction`` may delete
keys when memory runs short, and a job whose hash or set entry is evicted is
lost without a trace. Every reader of these facts (the console's banner,
``/readyz``, ``/metrics``, the ``emq`` CLI) asks here, so they agree.

Each function sends a few commands per primary (``INFO memory``, ``PING``,
``SCRIPT LOAD``), never a command per queue or per job.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Final, TextIO

from .client import EchoMQ
from .connection import SyncClient, is_cluster_client
from .errors import EmqError, Unavailable
from .moves import _text
from .redis_errors import ResponseError, translate
from .scripts import _INCLUDE, LUA_DIR, script

NOEVICTION: Final = "noeviction"

@dataclass(frozen=True, slots=True)
class ServerHealth:
    """INFO memory over every primary: memory used in total, and each policy found."""

    used_memory_bytes: int
    policies: tuple[str, ...]  # sorted, distinct; empty when INFO is not allowed

    @property
    def evicting_policies(self) -> tuple[str, ...]:
        return tuple(p for p in self.policies if p != NOEVICTION)

    @property
    def may_evict(self) -> bool:
        return bool(self.evicting_policies)

    @property
    def eviction_warning(self) -> str:
        """A sentence for the operator, or '' when every primary refuses to evict."""
        if not self.may_evict:
            return ""
        return eviction_warning(self.evicting_policies)


def eviction_warning(policies: tuple[str, ...]) -> str:
    named = ", ".join(policies)
    return (f"Redis maxmemory-policy is {named}, not {NOEVICTION}: when memory runs short Redis deletes keys, "
            f"and a deleted job is lost without a trace. Set maxmemory-policy {NOEVICTION}.")


def primaries(client: SyncClient) -> list[Any]:
    """A plain connection to each primary (the client itself when standalone)."""
    if is_cluster_client(client):
        return [client.get_redis_connection(node) for node in client.get_primaries()]  # type: ignore[union-attr]
    return [client]


def server_health(mq: EchoMQ) -> ServerHealth:
    """Raises :class:`Unavailable` when a primary cannot be reached."""
    used = 0
    policies: set[str] = set()
    try:
        for node in primaries(mq.redis):
            try:
                info = node.info("memory")
            except ResponseError:
                continue  # INFO denied (an ACL, a managed Redis): the policy stays unknown
            used += int(info.get("used_memory", 0) or 0)
            policy = _text(info.get("maxmemory_policy", ""))
            if policy:
                policies.add(policy)
    except Exception as error:
        raise translate(error, "INFO memory") from error
    return ServerHealth(used, tuple(sorted(policies)))


def ping(mq: EchoMQ) -> None:
    """Raises :class:`Unavailable` unless every primary answers PING."""
    try:
        for node in primaries(mq.redis):
            node.ping()
    except Exception as error:
        raise translate(error, "PING") from error


def script_names() -> list[str]:
    """Every script a runtime sends: the files no other file includes (``common.lua`` and the like are parts)."""
    files = sorted(LUA_DIR.glob("*.lua"))
    included = {name.removesuffix(".lua") for path in files for name in _INCLUDE.findall(path.read_text())}
    return [path.stem for path in files if path.stem not in included]


def scripts_load(mq: EchoMQ) -> list[str]:
    """SCRIPT LOAD of every script on every primary; returns what went wrong, in words (empty: all loaded).

    Loading is idempotent and caches the scripts, so the first move after a
    restart goes by EVALSHA at once; a script the server refuses to compile,
    or a SHA that does not match ours, is named.
    """
    problems: list[str] = []
    names = script_names()
    try:
        for node in primaries(mq.redis):
            pipe = node.pipeline(transaction=False)
            for name in names:
                pipe.script_load(script(name).source)
            for name, reply in zip(names, pipe.execute(raise_on_error=False)):
                if isinstance(reply, Exception):
                    problems.append(f"{name}: {reply}")
                elif _text(reply) != script(name).sha:
                    problems.append(f"{name}: the server answered SHA {_text(reply)}, not {script(name).sha}")
    except Exception as error:
        raise translate(error, "SCRIPT LOAD") from error
    return problems


_warned: set[int] = set()


def warn_if_evicting(mq: EchoMQ, stream: TextIO | None = None) -> bool:
    """Writes the eviction warning once per client (to stderr); True when it did.

    A Redis that cannot be reached or refuses INFO is not warned about: the
    command that follows reports the first, and the second is unknowable here.
    """
    if id(mq) in _warned:
        return False
    _warned.add(id(mq))
    try:
        health = server_health(mq)
    except Unavailable:
        return False
    if not health.may_evict:
        return False
    print(f"emq: warning: {health.eviction_warning}", file=stream or sys.stderr)
    return True


def warn_if_evicting_at(url: str | None) -> bool:
    """As :func:`warn_if_evicting` on a connection of its own (for the worker, which connects by itself).

    A Redis that cannot be reached is left to the worker, which keeps trying.
    """
    try:
        mq = EchoMQ.from_url(url)
    except EmqError:
        return False
    try:
        return warn_if_evicting(mq)
    finally:
        mq.close()
