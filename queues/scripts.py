"""The Lua moves: loaded from ``queues/lua/``, called EVALSHA first.

A script's first line is its Redis 7 shebang (``#!lua`` for a move, so that
Redis refuses it whole when over ``maxmemory``; ``#!lua flags=no-writes`` for
a read, so that it also runs on replicas and under memory pressure). A line
that is exactly ``--@include NAME.lua``, anywhere after it, is replaced by
that file's text without its trailing newlines (the line's own newline
stays), recursively; an included file has no shebang. So the source sent to
Redis (``emq script NAME`` prints it) is self-contained, and any runtime can
load it as is.

Another package may bring scripts of its own, run exactly like the moves: the
script ``PACKAGE:NAME`` is ``PACKAGE/lua/NAME.lua``, and its includes are found
in that folder first, then in ``queues/lua/`` (so it can build on
``common.lua``). ``queues`` knows only where to look, never what it finds.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

from .operator_moves import OPERATOR_MOVES

LUA_DIR: Final = Path(__file__).with_name("lua")
_INCLUDE = re.compile(r"^--@include ([\w.]+)$", re.MULTILINE)
_SHEBANG = re.compile(r"^#!lua( flags=[a-z-]+(,[a-z-]+)*)?\n")
_NAME = re.compile(r"(?:([A-Za-z_][\w.]*):)?(\w+)")

# The operator's moves' scripts follow their table (queue-wide ones that share a script named once).
MOVES: Final = tuple(dict.fromkeys((
    "enqueue", "enqueue_many", "claim", "extend", "complete", "complete_many", "fail", "release",
    "finish_claim",
    *(move.script for move in OPERATOR_MOVES),
    "register_worker", "unregister_worker", "group_failed", "note_refusal",
    # Schedules (recurring jobs), in their queue's slot (see queues/schedules.py).
    "schedule_set", "schedule_pause", "schedule_delete", "schedule_tick",
)))
READS: Final = ("stats", "page", "job", "payload", "history", "clock", "check", "count_older", "states", "counts",
                   "workers", "search", "groups", "signature", "series", "why_queue", "why_job", "histogram",
                   "schedules", "failure_sample",
                   "versions")
# Latency objectives, in one key outside every queue's slot (see queues/slo.py).
SLO_SCRIPTS: Final = ("slo_set", "slo_delete", "slos")
# Deploy marks, in one key outside every queue's slot (see queues/deploys.py).
DEPLOY_SCRIPTS: Final = ("deploy_mark", "deploy_marks")
# A queue's JSON Schema for edits, in emq:{Q}:schema (see queues/payload_versions.py).
SCHEMA_SCRIPTS: Final = ("schema_set", "schema")
# A queue's masked payload paths, in emq:{Q}:redaction (see queues/redaction.py).
REDACTION_SCRIPTS: Final = ("redaction_set", "redaction")


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str
    sha: str

    @property
    def writes(self) -> bool:
        """A move (``#!lua``), not a read (``#!lua flags=no-writes``): with ``wait_replicas``, WAIT follows it."""
        return "no-writes" not in self.source.split("\n", 1)[0]


def lua_dirs(package: str) -> tuple[Path, ...]:
    """Where the scripts of ``package`` and their includes are looked for, in order ("": queues' own)."""
    if not package:
        return (LUA_DIR,)
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"no package {package!r} to load scripts from")
    return (Path(next(iter(spec.submodule_search_locations))) / "lua", LUA_DIR)


def expand(name: str, dirs: tuple[Path, ...], seen: tuple[str, ...] = ()) -> str:
    """The file ``name`` of the first of ``dirs`` that holds it, its includes replaced (recursively)."""
    if name in seen:
        raise ValueError(f"include cycle: {' -> '.join(seen + (name,))}")
    path = next((d / name for d in dirs if (d / name).is_file()), dirs[0] / name)
    text = path.read_text()
    if seen and text.startswith("#!"):
        raise ValueError(f"{name} is included by {seen[-1]} but starts with a shebang, which only a script's "
                         "first line may hold")
    return _INCLUDE.sub(lambda m: expand(m.group(1), dirs, seen + (name,)).rstrip("\n"), text)


@cache
def script(name: str) -> Script:
    """The script ``NAME`` (``queues/lua/NAME.lua``) or ``PACKAGE:NAME`` (``PACKAGE/lua/NAME.lua``), expanded."""
    parts = _NAME.fullmatch(name)
    if parts is None:
        raise ValueError(f"{name!r} is not a script name (NAME or PACKAGE:NAME)")
    package, stem = parts.group(1) or "", parts.group(2)
    source = expand(f"{stem}.lua", lua_dirs(package))
    if not _SHEBANG.match(source):
        raise ValueError(f"{stem}.lua must start with a shebang line such as '#!lua' or '#!lua flags=no-writes'")
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())

