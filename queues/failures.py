"""Failed jobs grouped by cause: the groups the moves keep (``lua/grouping.lua``), read in O(groups shown).

A failure's signature is its error with the particulars replaced (numbers,
ids, hex, UUIDs, e-mail addresses, quoted values), computed in Lua by the
move that fails the job, so every runtime groups alike; a failed job's hash
remembers its group, and leaving failed takes it out again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from .errors import EmqError, InvalidInput
from .keys import QueueKeys
from .moves import Call, _int, _text, digits
from .reads import score_int

GROUPS_SHOWN: Final = 50
_GROUP_ID: Final = re.compile(r"^[0-9a-f]{12}$")


def validate_group(group: object) -> str:
    if not isinstance(group, str) or not _GROUP_ID.match(group):
        raise InvalidInput(f"a failure group is 12 lowercase hex digits (as emq failures prints it), not {group!r}")
    return group


@dataclass(frozen=True, slots=True)
class FailureGroup:
    id: str
    count: int
    signature: str
    first_ms: int | None
    last_ms: int | None
    sample_id: str
    sample_error: str
    # The releases its jobs' failing attempts ran on, as the moves keep them: numbers in the queue's
    # releases hash and '-' for release unknown, in the order first seen (grouping.lua).
    release_numbers: tuple[str, ...] = ()
    # Values another writer made longer than any script writes, not read: (field, its length in bytes).
    unread: tuple[tuple[str, int], ...] = ()

    @property
    def unread_note(self) -> str:
        """What was not read, for a person ('' when every value was)."""
        if not self.unread:
            return ""
        return "not read, longer than any script writes (another writer's): " + ", ".join(
            f"{name} ({length} bytes)" for name, length in self.unread)

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.id, "count": self.count, "signature": self.signature, "first_ms": self.first_ms,
                "last_ms": self.last_ms, "sample_id": self.sample_id, "sample_error": self.sample_error,
                "unread": dict(self.unread)}


@dataclass(frozen=True, slots=True)
class FailureGroups:
    queue: str
    now_ms: int
    failed: int
    group_count: int
    groups: list[FailureGroup]
    # Why the groups cannot be read ('' when they can): an index key of another type.
    problem: str = ""

    @property
    def grouped(self) -> int:
        """Failed jobs in the groups listed."""
        return sum(g.count for g in self.groups)


def _ms(value: Any) -> int | None:
    return digits(value)


def groups(queue: str, *, limit: int = GROUPS_SHOWN, group: str | None = None) -> Call[FailureGroups]:
    """The largest ``limit`` failure groups of ``queue`` (or only ``group``)."""
    keys = QueueKeys(queue)
    limit = _int(limit, "limit", 1, 200)
    only = validate_group(group) if group is not None else ""

    def parse(reply: list[Any]) -> FailureGroups:
        if _text(reply[0]) == "REFUSED":
            return FailureGroups(keys.queue, 0, 0, 0, [], f"the key {_text(reply[2])} is a {_text(reply[3])}, "
                                                           "not the failure index: the groups cannot be read")
        _, now, failed, count, *flat = reply
        found = [_group(flat[i:i + 8]) for i in range(0, len(flat), 8)]
        return FailureGroups(keys.queue, int(now), int(failed), int(count), found)

    return Call("groups", keys.script_keys(None), [limit, only], parse)


def signatures(queue: str, texts: list[str]) -> Call[list[tuple[str, str]]]:
    """(group id, signature) for each error text, as the moves compute them (any queue's slot will do)."""
    if not 1 <= len(texts) <= 100:
        raise InvalidInput("give between 1 and 100 texts")

    def parse(reply: list[Any]) -> list[tuple[str, str]]:
        return [(_text(reply[i]), _bytes_text(reply[i + 1])) for i in range(0, len(reply), 2)]

    return Call("signature", QueueKeys(queue).script_keys(None), [t.encode() for t in texts], parse)


@dataclass(frozen=True, slots=True)
class GroupingStep:
    grouped: int
    looked_at: int
    next_start: int
    more: bool


def group_failed(queue: str, *, start: int = 0, limit: int = 500) -> Call[GroupingStep]:
    """One step of putting failed jobs that are in no group into their error's group (see group_failed.lua)."""
    keys = QueueKeys(queue)
    args = [_int(start, "start", 0), _int(limit, "limit", 1, 1000)]

    def parse(reply: list[Any]) -> GroupingStep:
        if _text(reply[0]) == "REFUSED":
            raise EmqError(f"the key {_text(reply[2])} is a {_text(reply[3])}: failed jobs cannot be grouped")
        _, grouped, looked, next_start, more = reply
        return GroupingStep(int(grouped), int(looked), int(next_start), bool(int(more)))

    return Call("group_failed", keys.script_keys(None), args, parse)


_GROUP_VALUES: Final = ("signature", "first seen", "last seen", "sample job", "sample error", "releases")


def _group(values: list[Any]) -> FailureGroup:
    """One group's 8 values of the groups read; a value not read (an integer: its length) reads as empty."""
    group_id, count, *fields = values
    unread = tuple((name, value) for name, value in zip(_GROUP_VALUES, fields) if isinstance(value, int))
    sig, first, last, sample, error, rels = (b"" if isinstance(value, int) else value for value in fields)
    return FailureGroup(_text(group_id), score_int(count), _bytes_text(sig), _ms(first), _ms(last), _text(sample),
                        _bytes_text(error), _release_numbers(rels), unread)


def _release_numbers(value: Any) -> tuple[str, ...]:
    return tuple(t for t in _text(value).split(" ") if t == "-" or (t.isascii() and t.isdigit()))


def _bytes_text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


__all__ = ["FailureGroup", "FailureGroups", "GroupingStep", "group_failed", "groups", "signatures", "validate_group",
           "GROUPS_SHOWN"]
