"""Every move the scripts record, in one table: what the ``move`` field of an event may say.

A row gives a move's name (the event's ``move``, the script's ``emit``), the states it takes a job
from and to, the one-letter code of the history entry it writes for each state it leads to, whether
it is counted (the fields of ``emq:{Q}:counts``) and which minute/hour chart field it adds to. From
it come:

- ``queues/lua/moves.lua``, included by ``common.lua``: ``move_row`` (a move's history letter, counter
  field and chart field), ``move_known`` and ``counted_fields`` (the fields ``counts.lua`` reads). It is a generated file, checked
  in so that another runtime loads the scripts as they are; ``python -m queues.protocol_moves``
  writes it again, and a test fails while it differs from this table.
- :data:`HISTORY_CODES` (how :func:`queues.reads.parse_history` reads an entry) and
  :data:`COUNT_FIELDS`.

The operator's moves (``queues.operator_moves``) add their words, buttons and audit labels; each
of them on one job has its row here under the same name.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final


@dataclass(frozen=True, slots=True)
class Target:
    # The state the job is in after the move ('' when the hash is gone, or no job moved: pause, resume).
    state: str
    # The history entry's letter ('' when the move writes no entry: the hash is gone, or a heartbeat).
    code: str = ""
    # The minute/hour chart field it adds one to ('' none).
    series: str = ""


@dataclass(frozen=True, slots=True)
class ProtocolMove:
    name: str
    # The states it takes a job from ('' for a new job, or for a move on the queue itself).
    sources: tuple[str, ...]
    targets: tuple[Target, ...]
    # Whether the counts hash counts it (extend, a heartbeat, is not).
    counted: bool = True

    def count_field(self, target: Target) -> str:
        """Its field in the counts hash: the name, or ``name:state`` for a move that leads to more than one state."""
        return self.name if len(self.targets) == 1 else f"{self.name}:{target.state}"


PROTOCOL_MOVES: Final[tuple[ProtocolMove, ...]] = (
    # The moves of producers and workers.
    ProtocolMove("enqueue", ("",), (Target("pending", "e", "e"),)),
    ProtocolMove("claim", ("pending",), (Target("active", "c"),)),
    ProtocolMove("extend", ("active",), (Target("active"),), counted=False),
    ProtocolMove("complete", ("active",), (Target("done", "d", "c"),)),
    ProtocolMove("fail", ("active",), (Target("pending", "f"), Target("failed", "F", "f"))),
    ProtocolMove("release", ("active",), (Target("pending", "r"),)),
    # A claim sets aside a due job whose hash it cannot read as a job.
    ProtocolMove("corrupt", ("pending",), (Target("failed", "k"),)),
    # The operator's moves on one job (queues.operator_moves has their words).
    ProtocolMove("retry", ("failed",), (Target("pending", "R"),)),
    ProtocolMove("recover", ("active",), (Target("pending", "v", "r"), Target("failed", "V", "r"))),
    ProtocolMove("promote", ("pending",), (Target("pending", "p"),)),
    ProtocolMove("cancel", ("pending", "active"), (Target("failed", "x"),)),
    ProtocolMove("delete", ("pending", "active", "done", "failed"), (Target(""),)),
    ProtocolMove("rerun", ("done",), (Target("pending", "u"),)),
    ProtocolMove("edit", ("failed", "pending"), (Target("pending", "E"), Target("failed", "Y"))),
    ProtocolMove("restore", ("failed", "pending"), (Target("pending", "S"), Target("failed", "Z"))),
    # A new job made from another job in any of these states (the event's `from` is '': the new job had none).
    ProtocolMove("clone", ("failed", "done", "pending", "active"), (Target("pending", "l"),)),
    # The operator's moves on a whole queue that record events of their own.
    ProtocolMove("purge", ("done", "failed"), (Target(""),)),
    ProtocolMove("pause", ("",), (Target("paused"),)),
    ProtocolMove("resume", ("paused",), (Target(""),)),
    # A state set of another type than a sorted set, removed by an operator (the event's id names the set).
    ProtocolMove("remove_key", ("",), (Target(""),)),
)

BY_NAME: Final[dict[str, ProtocolMove]] = {move.name: move for move in PROTOCOL_MOVES}
# A history entry's letter -> (move, the state it went to) (PROTOCOL.md, section 9).
HISTORY_CODES: Final[dict[str, tuple[str, str]]] = {
    target.code: (move.name, target.state) for move in PROTOCOL_MOVES for target in move.targets if target.code}
# The move counters' fields of emq:{Q}:counts, in the table's order.
COUNT_FIELDS: Final[tuple[str, ...]] = tuple(
    move.count_field(target) for move in PROTOCOL_MOVES if move.counted for target in move.targets)

MOVES_LUA: Final = Path(__file__).with_name("lua") / "moves.lua"


def _lua_string(text: str) -> str:
    if not all(c.isalnum() or c in ":_" for c in text):
        raise ValueError(f"{text!r}: a move, state or field is letters, digits, '_' and ':' only")
    return f"'{text}'"


def moves_lua() -> str:
    """The text of ``queues/lua/moves.lua``, from :data:`PROTOCOL_MOVES`.

    Functions, not tables: a script's chunk runs whole on every call, and Redis would build every table
    of the move table again each time (about 11 µs a call, measured in BENCHMARKS.md), where a function
    costs one closure and is only walked when asked."""
    rows = []
    for move in PROTOCOL_MOVES:
        for target in move.targets:
            count = move.count_field(target) if move.counted else ""
            rows.append(f"  if move == {_lua_string(move.name)} and to == {_lua_string(target.state)} then "
                        f"return {_lua_string(target.code)}, {_lua_string(count)}, {_lua_string(target.series)} end")
    known = " or\n    ".join(" or ".join(f"move == {_lua_string(m.name)}" for m in PROTOCOL_MOVES[i:i + 4])
                              for i in range(0, len(PROTOCOL_MOVES), 4))
    fields = [_lua_string(field) for field in COUNT_FIELDS]
    fields_lua = ",\n    ".join(", ".join(fields[i:i + 6]) for i in range(0, len(fields), 6))
    return (
        "-- Generated from queues/protocol_moves.py by `python -m queues.protocol_moves`: edit the table there,\n"
        "-- never this file (a test fails while the two differ). Included by common.lua.\n"
        "\n"
        "-- move_row(move, to): for a move the table lets lead to `to`, the letter of its history entry\n"
        "-- (section 9 of PROTOCOL.md), the field of <prefix>counts it adds one to and the field of the minute\n"
        "-- and hour hashes it adds one to, each '' when it has none; nil when the move does not lead there.\n"
        "local function move_row(move, to)\n"
        + "\n".join(rows) + "\n"
        "  return nil\n"
        "end\n"
        "-- Whether the table knows the move.\n"
        "local function move_known(move)\n"
        f"  return {known}\n"
        "end\n"
        "-- Every move counter field, as the counts read returns them.\n"
        "local function counted_fields()\n"
        f"  return {{\n    {fields_lua},\n  }}\n"
        "end\n"
    )


def main(argv: list[str]) -> int:
    """``python -m queues.protocol_moves``: write ``queues/lua/moves.lua``; with ``--check``, only say whether it differs."""
    text = moves_lua()
    if "--check" in argv:
        same = MOVES_LUA.read_text() == text
        print(f"{MOVES_LUA}: {'matches' if same else 'differs from'} queues/protocol_moves.py")
        return 0 if same else 1
    MOVES_LUA.write_text(text)
    print(f"wrote {MOVES_LUA}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
