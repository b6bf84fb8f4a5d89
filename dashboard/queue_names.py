"""Whether a queue a link names exists, and if not, the names it was likely meant to be.

A queue exists when it is in the registry or its keys hold something (jobs, a
pause, history): a queue another runtime wrote without registering it is still
one to show and act on. Anything else is a misspelling, answered 404 in words.
"""

from __future__ import annotations

import difflib
from typing import Final

from queues.reads import QueueStats

from .census import census_pass
from .services import read

# The registry names a suggestion is looked for among: difflib is O(names), and a page answers at once.
SUGGEST_AMONG: Final = 10_000


def holds_anything(stats: QueueStats) -> bool:
    return any(stats.counts.values()) or stats.paused or bool(stats.last_event_id)


def queue_missing(name: str, stats: QueueStats) -> tuple[str, list[str]]:
    """("", []) when the queue exists; else the sentence that says it does not, and the close names."""
    if holds_anything(stats):
        return "", []
    census = census_pass().census
    read(lambda mq: census.refresh_names(mq, force=False))
    names = census.names or []
    if name in names:
        return "", []
    near = [n for n in names[:SUGGEST_AMONG] if abs(len(n) - len(name)) <= 3]
    close = difflib.get_close_matches(name, near, n=3, cutoff=0.6)
    guess = f" (did you mean {' or '.join(close)}?)" if close else ""
    return f"no queue named {name}{guess}", close
