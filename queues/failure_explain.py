"""Failure groups that explain: when each began and how fast it fails now, the releases and hosts behind it,
whether it is new since a release, and the payload field values over-represented in it.

Everything is read in bounded steps (PROTOCOL.md, section 9c):

* the groups themselves (``groups``: the largest :data:`GROUPS_READ`, O(groups)), each with the releases its
  failing attempts ran on as the moves keep them (``rels``, exact, at most 16 releases a group);
* the newest failed jobs, walked newest first by ``failure_sample`` in at most :data:`FAILED_STEPS` calls of
  :data:`STEP_ENTRIES` entries and :data:`STEP_BUDGET_US` of Redis time each (so at most 2000 jobs), with the
  payloads of at most :data:`PAYLOADS_PER_GROUP` jobs of each group, each of at most :data:`PAYLOAD_BYTES`;
* the baseline of "all jobs": the newest :data:`BASELINE_ENTRIES` of done, pending and active (one call each),
  weighed by how many jobs each state holds;
* the newest deploy mark (one ``deploy_marks`` read).

So a page costs Redis at most 7 script calls and about 25 ms, however many jobs the queue holds; what the
sample could not reach is said (``reached_back_ms``, ``whole``) rather than guessed.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from .deploys import DeployMark, deploy_marks
from .errors import InvalidInput, Refused
from .failures import FailureGroup, groups
from .keys import QueueKeys
from .moves import MAX_INT, Call, _int, _text, refused_whole
from .reads import _unescape, attempt_note
from .redaction import Masker
from .search import MAX_NEEDLE, FieldFilter, _utc

if TYPE_CHECKING:
    from .client import EchoMQ

GROUPS_READ: Final = 50
STEP_ENTRIES: Final = 500
STEP_BUDGET_US: Final = 5000
FAILED_STEPS: Final = 4
BASELINE_ENTRIES: Final = 200
PAYLOAD_BYTES: Final = 2048
PAYLOADS_PER_GROUP: Final = 50
HOUR_MS: Final = 3_600_000
# A payload's fields looked at: top-level and nested objects to this depth, at most this many values.
FIELD_DEPTH: Final = 4
FIELDS_PER_PAYLOAD: Final = 64
FIELD_VALUE_CHARS: Final = 64
# Over-represented: at least this many sampled jobs of the group hold the value, at least half of them, and
# clearly more than of all jobs.
FIELD_MIN_JOBS: Final = 3
FIELDS_SHOWN: Final = 3
UNKNOWN_RELEASE: Final = "release unknown"
UNKNOWN_HOST: Final = "host unknown"
NO_ATTEMPT: Final = "no attempt"
# The release filter's value for attempts of a worker that told no release (section 9).
UNKNOWN_RELEASE_VALUE: Final = "-"
Sort = Literal["count", "new"]


@dataclass(frozen=True, slots=True)
class SampledJob:
    id: str
    score: int
    group: str
    claimed: bool
    release: str  # the label; '' for release unknown
    host: str
    payload: bytes | None  # None: not read (too long, or past the step's payload allowance)
    length: int  # -1: the key is gone or not a hash


@dataclass(frozen=True, slots=True)
class SampleStep:
    now_ms: int
    card: int
    looked_at: int
    next_offset: int
    done: bool
    redis_us: int
    releases: dict[str, str]  # number -> label
    jobs: list[SampledJob]


def failure_sample(queue: str, state: str, *, offset: int = 0, entries: int = STEP_ENTRIES,
                   budget_us: int = STEP_BUDGET_US, payload_bytes: int = PAYLOAD_BYTES,
                   payloads_per_group: int = PAYLOADS_PER_GROUP, name: tuple[str, ...] = ()) -> Call[SampleStep]:
    """One slice of ``state``'s jobs, newest first, from rank ``offset`` (see ``lua/failure_sample.lua``)."""
    keys = QueueKeys(queue)
    if state not in ("pending", "active", "done", "failed"):
        raise InvalidInput(f"state must be pending, active, done or failed, not {state!r}")
    args: list[Any] = [state, _int(offset, "offset", 0, MAX_INT), _int(entries, "entries", 1, 1000),
                       _int(budget_us, "budget_us", 100, 20000), _int(payload_bytes, "payload_bytes", 0, 4096),
                       _int(payloads_per_group, "payloads_per_group", 0, 1000),
                       *[n for n in name if n.isascii() and n.isdigit()][:64]]

    def parse(reply: list[Any]) -> SampleStep:
        refused_whole("failure_sample", reply)
        _, now, card, looked, next_offset, done, redis_us, names, *rest = reply
        pairs, flat = rest[:2 * int(names)], rest[2 * int(names):]
        releases = {_text(pairs[i]): _text(pairs[i + 1]) for i in range(0, len(pairs), 2)}
        jobs = []
        for i in range(0, len(flat), 8):
            job_id, score, group, claimed, actor, note, payload, length = flat[i:i + 8]
            actor_text = _unescape(actor) if isinstance(actor, bytes) else _text(actor)
            release, host = attempt_note(note if isinstance(note, bytes) else _text(note).encode(), actor_text,
                                         releases)
            size = int(length)
            read = payload if isinstance(payload, bytes) else _text(payload).encode()
            jobs.append(SampledJob(_text(job_id), _score_ms(score), _text(group), _text(claimed) == "1",
                                   release, host, read if (read or size == 0) else None, size))
        return SampleStep(int(now), int(card), int(looked), int(next_offset), bool(int(done)), int(redis_us),
                          releases, jobs)

    return Call("failure_sample", keys.script_keys(None), args, parse)


@dataclass(frozen=True, slots=True)
class FieldShare:
    """A payload field value and how often it occurs: in the group's sampled payloads, and in all jobs'."""

    field: FieldFilter
    in_group: int
    group_payloads: int
    all_share: float

    @property
    def group_share(self) -> float:
        return self.in_group / self.group_payloads if self.group_payloads else 0.0

    @property
    def text(self) -> str:
        """As the field filter reads it (``tenant="acme"``): what a slice of the group is restricted by."""
        return self.field.text()

    def describe(self) -> str:
        return (f"{round(100 * self.group_share)} % have {self.field.text()} against "
                f"{round(100 * self.all_share)} % of all jobs")

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field.text(), "in_group": self.in_group, "group_payloads": self.group_payloads,
                "group_share": round(self.group_share, 4), "all_share": round(self.all_share, 4),
                "text": self.describe()}


@dataclass(frozen=True, slots=True)
class ExplainedGroup:
    group: FailureGroup
    # Every release its failing attempts ran on (exact, from the moves; labels, "release unknown" for '-').
    releases_ever: tuple[str, ...]
    # The release it is new since: no attempt of it ran before that release ('' when it is not, or cannot tell).
    new_since: str
    # Whether it began after the newest deploy mark.
    new_since_mark: bool
    # Of its jobs in the sample of the newest failed jobs:
    sampled: int
    last_hour: int
    hour_before: int
    releases: tuple[tuple[str, int], ...]
    hosts: tuple[tuple[str, int], ...]
    fields: tuple[FieldShare, ...]

    def as_dict(self) -> dict[str, Any]:
        return {**self.group.as_dict(), "releases_ever": list(self.releases_ever), "new_since": self.new_since,
                "new_since_mark": self.new_since_mark, "sampled": self.sampled, "last_hour": self.last_hour,
                "hour_before": self.hour_before,
                "releases": [{"release": r, "jobs": n} for r, n in self.releases],
                "hosts": [{"host": h, "jobs": n} for h, n in self.hosts],
                "fields": [f.as_dict() for f in self.fields]}


@dataclass(frozen=True, slots=True)
class FailuresExplained:
    queue: str
    now_ms: int
    failed: int
    group_count: int
    groups: list[ExplainedGroup]
    problem: str
    # The sample of failed jobs: how many were looked at, back to when, and whether that was all of them.
    looked_at: int
    reached_back_ms: int | None
    whole: bool
    baseline_payloads: int
    last_mark: DeployMark | None
    redis_us: int
    release: str = ""
    host: str = ""
    sort: Sort = "count"
    # What the filters may choose from: the releases and hosts seen.
    release_choices: tuple[str, ...] = ()
    host_choices: tuple[str, ...] = ()
    hidden: int = 0  # groups read but left out by the filters
    notes: list[str] = field(default_factory=list)

    @property
    def grouped(self) -> int:
        """Failed jobs in the groups shown."""
        return sum(g.group.count for g in self.groups)

    @property
    def rate_whole(self) -> bool:
        """Whether the last two hours' counts are whole (the sample reached back past them)."""
        return self.whole or (self.reached_back_ms is not None and self.reached_back_ms <= self.now_ms - 2 * HOUR_MS)

    def bounds(self) -> str:
        back = "all of them" if self.whole else f"back to {_utc(self.reached_back_ms)}" \
            if self.reached_back_ms is not None else "none"
        return (f"the {GROUPS_READ} largest groups; the newest {self.looked_at} failed jobs ({back}), with up to "
                f"{PAYLOADS_PER_GROUP} payloads of at most {PAYLOAD_BYTES} bytes per group; {self.baseline_payloads} "
                "payloads of done, pending and active jobs as the baseline")

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "now_ms": self.now_ms, "failed": self.failed, "group_count": self.group_count,
                "problem": self.problem, "sampled_failed": self.looked_at, "sample_reached_back_ms": self.reached_back_ms,
                "sample_whole": self.whole, "rate_whole": self.rate_whole, "baseline_payloads": self.baseline_payloads,
                "last_mark": self.last_mark.as_dict() if self.last_mark else None, "release": self.release,
                "host": self.host, "sort": self.sort, "hidden": self.hidden, "redis_us": self.redis_us,
                "notes": list(self.notes), "groups": [g.as_dict() for g in self.groups]}


def payload_fields(payload: bytes, masker: Masker | None = None) -> set[FieldFilter]:
    """The scalar values of a JSON object payload, top-level and nested (at most :data:`FIELDS_PER_PAYLOAD`,
    :data:`FIELD_DEPTH` deep, strings of at most :data:`FIELD_VALUE_CHARS` characters), as field filters;
    none inside a value ``masker`` masks."""
    try:
        document = json.loads(payload.decode())
    except (UnicodeDecodeError, ValueError, RecursionError):
        return set()
    found: set[FieldFilter] = set()

    def walk(value: Any, path: tuple[str | int, ...]) -> None:
        if len(found) >= FIELDS_PER_PAYLOAD or (masker is not None and masker.hits(path)):
            return
        if isinstance(value, dict):
            if len(path) >= FIELD_DEPTH:
                return
            for key in sorted(value)[:FIELDS_PER_PAYLOAD]:
                if "\0" not in key and len(key.encode(errors="surrogatepass")) <= MAX_NEEDLE:
                    walk(value[key], (*path, key))
            return
        if not path or isinstance(value, list):
            return
        if value is None:
            found.add(FieldFilter(path, "null", "null"))
        elif isinstance(value, bool):
            found.add(FieldFilter(path, "bool", "true" if value else "false"))
        elif isinstance(value, int) and abs(value) < 2 ** 53:
            found.add(FieldFilter(path, "any", str(value)))
        elif isinstance(value, float) and math.isfinite(value):
            text = json.dumps(value)
            if "e" not in text and "E" not in text:
                found.add(FieldFilter(path, "any", text))
        elif isinstance(value, str) and len(value) <= FIELD_VALUE_CHARS:
            found.add(FieldFilter(path, "str", value))

    walk(document, ())
    return found


def _over_represented(group_payloads: list[set[FieldFilter]], all_share: dict[FieldFilter, float]) -> tuple[FieldShare, ...]:
    counts: Counter[FieldFilter] = Counter()
    for fields in group_payloads:
        counts.update(fields)
    n = len(group_payloads)
    shares = []
    for value, count in counts.items():
        share, base = count / n, all_share.get(value, 0.0)
        if count >= FIELD_MIN_JOBS and share >= 0.5 and share - base >= 0.25 and share >= 1.5 * base:
            shares.append(FieldShare(value, count, n, base))
    shares.sort(key=lambda s: (-(s.group_share - s.all_share), -s.in_group, s.text))
    return tuple(shares[:FIELDS_SHOWN])


def _release_label(token: str, names: dict[str, str]) -> str:
    return UNKNOWN_RELEASE if token == "-" else names.get(token, f"#{token}")


def _new_since(tokens: tuple[str, ...], names: dict[str, str]) -> str:
    """The release a group is new since: the earliest of the releases its attempts ran on, when every one of
    them is known and a release was numbered before it (so attempts ran before it, and none failed so)."""
    if not tokens or "-" in tokens:
        return ""
    first = min(int(t) for t in tokens)
    return _release_label(str(first), names) if first > 1 else ""


def _score_ms(score: Any) -> int:
    # A score an odd writer made infinite (or not a number) sorts first or last; it is no time to compute with.
    try:
        number = float(_text(score))
    except ValueError:
        return 0
    return int(number) if math.isfinite(number) else (MAX_INT if number > 0 else 0)


def _sample(mq: EchoMQ, queue: str, state: str, *, steps: int, entries: int, name: tuple[str, ...] = (),
            payloads_per_group: int, problems: list[str]) -> Iterator[SampleStep]:
    offset = 0
    for _ in range(steps):
        try:
            step = mq.run(failure_sample(queue, state, offset=offset, entries=entries, name=name,
                                         payloads_per_group=payloads_per_group))
        except Refused as refusal:
            # A state's set of another type (an odd writer's) leaves that state out of the sample, said in words.
            problems.append(f"the {state} jobs could not be sampled: {refusal}")
            return
        yield step
        if step.done or not step.looked_at:
            return
        offset = step.next_offset


def _shares(payloads: list[tuple[set[FieldFilter], float]]) -> tuple[dict[FieldFilter, float], float]:
    """Each value's weighted count and the total weight."""
    weight = sum(w for _, w in payloads)
    counts: dict[FieldFilter, float] = defaultdict(float)
    for fields, w in payloads:
        for value in fields:
            counts[value] += w
    return counts, weight


def explain_failures(mq: EchoMQ, queue: str, *, release: str = "", host: str = "", sort: Sort = "count",
                     masker: Masker | None = None) -> FailuresExplained:
    """The failure groups of ``queue`` with what explains them; ``release`` (a label, or '-' for release
    unknown) keeps the groups whose failing attempts ran on it, ``host`` those with sampled jobs on it;
    ``sort`` 'new' puts the groups that began after the newest deploy mark first, newest first; no field
    value ``masker`` masks is counted or named."""
    if sort not in ("count", "new"):
        raise InvalidInput(f"sort must be count or new, not {sort!r}")
    read = mq.run(groups(queue, limit=GROUPS_READ))
    if read.problem:
        return FailuresExplained(read.queue, read.now_ms, 0, 0, [], read.problem, 0, None, False, 0, None, 0,
                                 release, host, sort)
    numbers = tuple(sorted({t for g in read.groups for t in g.release_numbers if t != "-"}, key=int))[:64]
    redis_us = 0
    names: dict[str, str] = {}
    failed_jobs: list[SampledJob] = []
    looked, whole, card = 0, False, read.failed
    problems: list[str] = []
    for step in _sample(mq, queue, "failed", steps=FAILED_STEPS, entries=STEP_ENTRIES, name=numbers,
                        payloads_per_group=PAYLOADS_PER_GROUP, problems=problems):
        redis_us += step.redis_us
        names.update(step.releases)
        failed_jobs += step.jobs
        looked += step.looked_at
        whole, card = step.done, step.card
    reached = min((j.score for j in failed_jobs), default=None)

    # The baseline: each state's sampled payloads weighed by how many jobs the state holds per payload.
    baseline: list[tuple[set[FieldFilter], float]] = []
    by_group: dict[str, list[SampledJob]] = defaultdict(list)
    for job in failed_jobs:
        by_group[job.group].append(job)
    for members in by_group.values():
        read_payloads = [j for j in members if j.payload is not None]
        for job in read_payloads:
            assert job.payload is not None
            baseline.append((payload_fields(job.payload, masker), card / max(looked, 1) * len(members) / len(read_payloads)))
    baseline_payloads = 0
    for state in ("done", "pending", "active"):
        for step in _sample(mq, queue, state, steps=1, entries=BASELINE_ENTRIES, payloads_per_group=BASELINE_ENTRIES,
                            problems=problems):
            redis_us += step.redis_us
            names.update(step.releases)
            read_payloads = [j for j in step.jobs if j.payload is not None]
            baseline_payloads += len(read_payloads)
            for job in read_payloads:
                assert job.payload is not None
                baseline.append((payload_fields(job.payload, masker), step.card / len(read_payloads)))
    counts, total = _shares(baseline)
    all_share = {value: n / total for value, n in counts.items()} if total else {}

    marks = mq.run(deploy_marks(since_ms=0, until_ms=MAX_INT - 1, limit=1, newest=True))
    last_mark = marks.marks[0] if marks.marks else None

    explained = []
    for g in read.groups:
        members = by_group.get(g.id, [])
        tokens = g.release_numbers
        payloads = [payload_fields(j.payload, masker) for j in members if j.payload is not None]
        releases = Counter(j.release or (UNKNOWN_RELEASE if j.claimed else NO_ATTEMPT) for j in members)
        hosts = Counter(j.host or UNKNOWN_HOST for j in members if j.claimed)
        explained.append(ExplainedGroup(
            g, tuple(_release_label(t, names) for t in tokens), _new_since(tokens, names),
            last_mark is not None and g.first_ms is not None and g.first_ms >= last_mark.at_ms,
            len(members), sum(1 for j in members if j.score > read.now_ms - HOUR_MS),
            sum(1 for j in members if read.now_ms - 2 * HOUR_MS < j.score <= read.now_ms - HOUR_MS),
            tuple(releases.most_common(10)), tuple(hosts.most_common(10)),
            _over_represented(payloads, all_share) if payloads else ()))

    release_choices = sorted({r for g in explained for r in g.releases_ever} | {r for g in explained for r, _ in g.releases
                                                                               if r != NO_ATTEMPT})
    host_choices = sorted({h for g in explained for h, _ in g.hosts})
    shown = [g for g in explained if _kept(g, release, host)]
    if sort == "new":
        shown.sort(key=lambda g: (not g.new_since_mark, -(g.group.first_ms or 0) if g.new_since_mark else -g.group.count))
    notes = list(problems)
    if not whole:
        notes.append(f"the sample holds the newest {looked} of {card} failed jobs: the rates, releases, hosts and "
                     "fields count those")
    return FailuresExplained(read.queue, read.now_ms, read.failed, read.group_count, shown, "", looked, reached, whole,
                             baseline_payloads, last_mark, redis_us, release, host, sort, tuple(release_choices),
                             tuple(host_choices), len(explained) - len(shown), notes)


def _kept(group: ExplainedGroup, release: str, host: str) -> bool:
    if release:
        wanted = UNKNOWN_RELEASE if release == UNKNOWN_RELEASE_VALUE else release
        if wanted not in group.releases_ever and wanted not in dict(group.releases):
            return False
    return not host or host in dict(group.hosts)


__all__ = ["ExplainedGroup", "FailuresExplained", "FieldShare", "SampleStep", "SampledJob", "explain_failures",
           "failure_sample", "payload_fields", "UNKNOWN_RELEASE", "UNKNOWN_RELEASE_VALUE"]
