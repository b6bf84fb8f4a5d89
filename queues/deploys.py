"""Deploy marks: "release R went out at T", drawn on every chart so an operator can see what a deploy did.

Marks live in the sorted set ``emq:deploys`` (``deploy_mark.lua``): one per label and minute (a second mark
of the same label in the same minute is the same mark), kept 90 days. ``emq deploy mark``, the API, the
console's button and a worker that registers a release its queue has not seen make them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from .errors import InvalidInput
from .moves import MAX_INT, Call, _int, _text, refused_whole

DEPLOYS_KEY: Final = "emq:deploys"
MAX_LABEL_BYTES: Final = 64
KEEP_DAYS: Final = 90


@dataclass(frozen=True, slots=True)
class DeployMark:
    at_ms: int
    label: str

    def as_dict(self) -> dict[str, Any]:
        return {"at_ms": self.at_ms, "label": self.label}


@dataclass(frozen=True, slots=True)
class Marked:
    at_ms: int
    new: bool  # False: the same label was marked in that minute already (nothing was written)


def validate_label(label: object) -> str:
    if not isinstance(label, str) or not label.strip() or len(label.encode()) > MAX_LABEL_BYTES \
            or any(ord(c) < 32 or ord(c) == 127 for c in label):
        raise InvalidInput(f"a deploy label is 1..{MAX_LABEL_BYTES} bytes without control characters, not {label!r}")
    return label.strip()


def deploy_mark(label: str, *, at_ms: int | None = None) -> Call[Marked]:
    label = validate_label(label)
    at = "" if at_ms is None else _int(at_ms, "at_ms", 0, MAX_INT - 1)

    def parse(reply: list[Any]) -> Marked:
        refused_whole("deploy_mark", reply)
        return Marked(int(float(_text(reply[1]))), _text(reply[2]) == "new")

    return Call("deploy_mark", [DEPLOYS_KEY], [label, at], parse)


@dataclass(frozen=True, slots=True)
class DeployMarks:
    now_ms: int  # the server's clock at the read
    marks: list[DeployMark]


def deploy_marks(*, since_ms: int, until_ms: int, limit: int = 200, newest: bool = False) -> Call[DeployMarks]:
    """The marks from ``since_ms`` to ``until_ms``, oldest first, at most ``limit`` (1..1000); ``newest``: the
    newest ``limit`` of them, newest first."""
    since, until = _int(since_ms, "since_ms", 0, MAX_INT - 1), _int(until_ms, "until_ms", 0, MAX_INT - 1)
    limit = _int(limit, "limit", 1, 1000)

    def parse(reply: list[Any]) -> DeployMarks:
        flat = reply[2:]
        return DeployMarks(int(reply[0]), [DeployMark(int(float(_text(flat[i]))), _text(flat[i + 1]))
                                           for i in range(0, len(flat) - 1, 2)])

    return Call("deploy_marks", [DEPLOYS_KEY], [since, until, limit, "desc" if newest else "asc"], parse)
