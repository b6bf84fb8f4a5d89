"""The Lua moves: loaded from ``queues/lua/``, called EVALSHA first.

A script file may start with ``--@include NAME.lua`` lines; they are replaced
by that file's text, so the source sent to Redis (``emq script NAME`` prints
it) is self-contained and any runtime can load it as is.
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

MOVES: Final = (
    "enqueue", "enqueue_many", "claim", "extend", "complete", "complete_many", "fail", "release",
    "retry", "recover", "promote", "cancel", "delete",
    "recover_expired", "retry_failed", "purge",
    "admit_order",
)


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str
    sha: str


def _expand(name: str, seen: tuple[str, ...] = ()) -> str:
    if name in seen:
        raise ValueError(f"include cycle: {' -> '.join(seen + (name,))}")
    text = (LUA_DIR / name).read_text()
    return _INCLUDE.sub(lambda m: _expand(m.group(1), seen + (name,)).rstrip("\n"), text)


@cache
def script(name: str) -> Script:
    source = _expand(f"{name}.lua")
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


def is_noscript(error: BaseException) -> bool:
    return "NOSCRIPT" in str(error)


def evalsha_args(s: Script, keys: list[str], args: list[Any]) -> tuple[Any, ...]:
    return (s.sha, len(keys), *keys, *args)


def eval_args(s: Script, keys: list[str], args: list[Any]) -> tuple[Any, ...]:
    return (s.source, len(keys), *keys, *args)
