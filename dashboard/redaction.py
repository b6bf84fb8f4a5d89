"""Who sees a queue's masked payload values: decided here alone, for every page, fragment, push and answer."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final

from queues import reads, redaction
from queues.redaction import Masker, RedactionConfig
from queues.search import Match, Query

from .actions.access import refusal
from .actions.models import QueueGrant
from .services import read

# The longest payload a text search reads whole, for a reader who may not see some of its values, to tell whether
# the text is found outside them (a longer one is not reported as matching).
VERIFY_MAX_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class Reader:
    """Who reads, as masking needs to know it, read once per request or socket (a role is a database read)."""

    may_unmask: bool
    # The operator's queue grants (glob patterns; none: every queue).
    grants: tuple[str, ...] = ()


# For what no person reads (an unknown reader is shown what a viewer is).
MASKED_READER = Reader(False)


def reader_for(user: Any) -> Reader:
    """The reader ``user`` is on the current deployment (synchronous: it reads the user's groups and grants).

    Unmasking is for whoever may change the payloads (``edit_payloads``) everywhere; a grant of it on some
    queues does not unmask (the reader carries only the queue restriction)."""
    if refusal(user, "edit_payloads") is not None:
        return MASKED_READER
    return Reader(True, tuple(QueueGrant.objects.filter(user=user).values_list("pattern", flat=True)))


def sees_unmasked(reader: Reader, config: RedactionConfig) -> bool:
    """Those who may act on the queue (operators, within their grants and the deployment's) see masked values,
    unless the queue masks them for everyone; viewers never do."""
    granted = not reader.grants or any(fnmatchcase(config.queue, pattern) for pattern in reader.grants)
    return reader.may_unmask and granted and not config.mask_all


def masker_for(reader: Reader, config: RedactionConfig) -> Masker | None:
    """How ``reader`` is shown the queue's payloads: None when as stored."""
    return None if sees_unmasked(reader, config) else config.masker()


def read_masker(reader: Reader, queue: str) -> Masker | None:
    """The queue's masking for ``reader``, read now (for a download or an answer that reads no page)."""
    return masker_for(reader, read(lambda mq: mq.run(redaction.config(queue))))


def maskers_read(mq: Any, reader: Reader, queues: list[str]) -> dict[str, Masker | None]:
    """Each queue's masking for ``reader``, read in one round trip; a queue whose paths cannot be read is
    masked as if for everyone."""
    found = mq.run_many([redaction.config(name) for name in queues])
    return {name: Masker(strict=True) if isinstance(config, Exception) else masker_for(reader, config)
            for name, config in zip(queues, found)}


def read_maskers(reader: Reader, queues: list[str]) -> dict[str, Masker | None]:
    """:func:`maskers_read` with the console's client."""
    return read(lambda mq: maskers_read(mq, reader, queues))


def search_problem(query: Query, maskers: dict[str, Masker | None]) -> str:
    """Why the reader may not run ``query`` ('' when they may): it finds jobs by a value masked for them."""
    if query.field is None:
        return ""
    return next((problem for m in maskers.values() if m is not None and (problem := m.field_filter_problem(query.field))),
                "")


def masked_matches(matches: Iterable[Match], maskers: dict[str, Masker | None]) -> list[Match]:
    """The matches as the reader is shown them (each payload head masked by its queue's masking)."""
    shown = []
    for match in matches:
        masker = maskers.get(match.queue, Masker(strict=True))
        shown.append(match if masker is None else masker.match(match))
    return shown


def masked_text_keeper(query: Query, maskers: dict[str, Masker | None]) -> Callable[[Any, list[Match]], list[Match]] | None:
    """For a payload-text search by a reader who may not see some values (None: nothing to check): a match is
    kept only when the text is found in the payload as the reader is shown it, so a search never tells them that
    a masked value holds it. The match's head decides when it can; else the payload is read whole (up to
    VERIFY_MAX_BYTES, all of a step's in one round trip)."""
    if not query.payload or all(m is None for m in maskers.values()):
        return None
    needle = query.payload.encode(errors="surrogateescape")

    def shown_by(match: Match) -> Masker | None:
        return maskers.get(match.queue, Masker(strict=True))

    def keep(mq: Any, matches: list[Match]) -> list[Match]:
        verdicts: list[bool | None] = []
        for match in matches:
            masker = shown_by(match)
            if masker is None or needle in masker.head(match.payload_head, match.payload_length):
                verdicts.append(True)
            else:
                verdicts.append(False if len(match.payload_head) >= match.payload_length else None)
        unread = [m for m, verdict in zip(matches, verdicts) if verdict is None]
        if unread:
            found = iter(mq.run_many([reads.payload(m.queue, m.id, max_bytes=VERIFY_MAX_BYTES) for m in unread]))
            for index, verdict in enumerate(verdicts):
                if verdict is None:
                    data, masker = next(found), shown_by(matches[index])
                    verdicts[index] = (isinstance(data, bytes) and masker is not None
                                       and needle in masker.payload(data))
        return [m for m, verdict in zip(matches, verdicts) if verdict]

    return keep
