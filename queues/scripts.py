"""The Lua moves: loaded from ``queues/lua/``, called EVALSHA first.

A script's first line is its Redis 7 shebang (``#!lua`` for a move, so that
Redis refuses it whole when over ``maxmemory``; ``#!lua flags=no-writes`` for
a read, so that it also runs on replicas and under memory pressure). A line
that is exactly ``--@include NAME.lua``, anywhere after it, is replaced by
that file's text without its trailing newlines (the line's own newline
stays), recursively; an included file has no shebang. So the source sent to
Redis (``emq script NAME`` prints it) is self-contained, and any runtime can
load it as is.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

LUA_DIR: Final = Path(__file__).with_name("lua")
_INCLUDE = re.compile(r"^--@include ([\w.]+)$", re.MULTILINE)
_SHEBANG = re.compile(r"^#!lua( flags=[a-z-]+(,[a-z-]+)*)?\n")

MOVES: Final = (
    "enqueue", "enqueue_many", "claim", "extend", "complete", "complete_many", "fail", "release",
    "retry", "recover", "promote", "cancel", "delete",
    "recover_expired", "retry_failed", "purge",
    "admit_order", "pause", "resume", "register_worker", "unregister_worker", "group_failed",
)
READS: Final = ("stats", "page", "job", "payload", "history", "clock", "check", "count_older", "states", "counts",
                   "workers", "search", "groups", "signature", "series")


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str
    sha: str


def _expand(name: str, seen: tuple[str, ...] = ()) -> str:
    if name in seen:
        raise ValueError(f"include cycle: {' -> '.join(seen + (name,))}")
    text = (LUA_DIR / name).read_text()
    if seen and text.startswith("#!"):
        raise ValueError(f"{name} is included by {seen[-1]} but starts with a shebang, which only a script's "
                         "first line may hold")
    return _INCLUDE.sub(lambda m: _expand(m.group(1), seen + (name,)).rstrip("\n"), text)


@cache
def script(name: str) -> Script:
    source = _expand(f"{name}.lua")
    if not _SHEBANG.match(source):
        raise ValueError(f"{name}.lua must start with a shebang line such as '#!lua' or '#!lua flags=no-writes'")
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


def is_noscript(error: BaseException) -> bool:
    return "NOSCRIPT" in str(error)


def evalsha_args(s: Script, keys: list[str], args: list[Any]) -> tuple[Any, ...]:
    return (s.sha, len(keys), *keys, *args)


def eval_args(s: Script, keys: list[str], args: list[Any]) -> tuple[Any, ...]:
    return (s.source, len(keys), *keys, *args)
