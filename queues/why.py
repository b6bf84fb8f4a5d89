"""Why a queue is not draining, and why a job is not moving: reasons in words, each with its evidence.

One read gathers the evidence (``why_queue`` or ``why_job``, read-only scripts of a fixed number of
commands whatever the queue holds, see ``lua/why_evidence.lua``) and one more asks who holds the
sweeper's lock (outside every queue's slot). :func:`decide_queue` and :func:`decide_job` turn that
evidence into ordered reasons, most decisive first; they never guess: a cause the evidence cannot
decide is named as such (``no_cause_found``), and a read that failed answers ``unknown``, never a zero.
Both clients send the reads the same way: ``mq.queue_why``, ``mq.job_why`` and ``mq.sweeper_lock``
(described once in :class:`queues.client.Described`).

The answer's shape, wherever it is served::

    {"reasons": [{"code": ..., "text": ..., "evidence": {...}}, ...], "as_of_ms": ...}

Every figure in an evidence is marked in ``evidence["marks"]``: ``exact`` (read at ``as_of_ms``),
``estimated`` (a rate or a time to drain, from the per-minute history) or ``stale`` (a worker's own
report, as of its last heartbeat; ``evidence["ages_ms"]`` says how old).
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from .keys import SWEEPER_LOCK, QueueKeys, validate_job_id
from .lease_index import shard_of, shards_of
from .moves import Call, _text, digits, refused_whole
from .visible import visible

if TYPE_CHECKING:
    from .reads import QueueStats

# The codes, most severe first: the overview sorts by this order, so queues that do not drain come first.
QUEUE_CODES: Final = (
    "unknown", "paused", "claims_refused", "no_live_worker", "arrivals_outpace_service", "at_capacity",
    "sweeper_not_running", "no_cause_found", "draining", "running", "not_due", "idle",
)
JOB_CODES: Final = (
    "unknown", "missing", "integrity", "worker_gone", "lease_lapsed", "paused", "claims_refused", "no_live_worker",
    "arrivals_outpace_service", "at_capacity", "sweeper_not_running", "no_cause_found", "waiting_behind", "leased",
    "retrying_later", "delayed", "attempts_exhausted", "corrupt", "cancelled", "failed", "done",
)
# The queue codes that mean "this queue is not draining".
NOT_DRAINING: Final = frozenset(QUEUE_CODES[:QUEUE_CODES.index("no_cause_found") + 1])
WORKERS_READ: Final = 20  # as WHY_WORKERS in why_evidence.lua
MINUTES_READ: Final = 6  # as WHY_MINUTES
# A worker that has missed this many heartbeats is gone, even while its entry and its leases still run.
MISSED_BEATS: Final = 2
# Arrivals go on while the newest due job is younger than this: a minute's counts cannot tell a burst that
# is over from a steady stream, the newest due time can.
ARRIVALS_ONGOING_MS: Final = 5_000
# Python workers beat every third of their entry's life (PROTOCOL.md, "Workers").
BEATS_PER_TTL: Final = 3


def census_severity(stats: QueueStats) -> tuple[int, int]:
    """What the census's counts alone say of a queue's reason, for the overview's "why" sort (worst first):
    paused, then lapsed leases waiting, then due jobs by how long the oldest has waited, then the rest.
    The exact reason (workers, rates, refusals) needs the why read, which costs what is on screen only."""
    if stats.paused:
        return (3, stats.due)
    if stats.lapsed:
        return (2, stats.lapsed)
    if stats.due:
        return (1, -(stats.oldest_due_ms or 0))
    return (0, 0)


def severity(code: str) -> int:
    """A sort key: the smaller, the more this queue needs a look."""
    return QUEUE_CODES.index(code) if code in QUEUE_CODES else len(QUEUE_CODES)


@dataclass(frozen=True, slots=True)
class Reason:
    code: str
    text: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "text": self.text, "evidence": self.evidence}


@dataclass(frozen=True, slots=True)
class Why:
    reasons: list[Reason]
    as_of_ms: int | None  # the server's time of the read; None when Redis did not answer

    @property
    def top(self) -> Reason:
        return self.reasons[0]

    @property
    def not_draining(self) -> bool:
        return self.top.code in NOT_DRAINING

    def as_dict(self) -> dict[str, Any]:
        return {"reasons": [r.as_dict() for r in self.reasons], "as_of_ms": self.as_of_ms}


@dataclass(frozen=True, slots=True)
class Sweeper:
    """Who holds the sweeper's lock, as read beside the evidence; ``error`` when that read failed (unknown)."""

    holder: str
    ttl_ms: int | None
    error: str = ""

    @property
    def known(self) -> bool:
        return not self.error

    @property
    def held(self) -> bool:
        return bool(self.holder)

    def as_dict(self) -> dict[str, Any]:
        if self.error:
            return {"sweeper": "unknown", "sweeper_error": self.error}
        return {"sweeper_holder": self.holder or None, "sweeper_lock_ttl_ms": self.ttl_ms}


def unknown(error: BaseException | str, *, as_of_ms: int | None = None) -> Why:
    """The answer when the evidence could not be read: it says so, and no figure stands in for the truth."""
    text = str(error) or type(error).__name__
    return Why([Reason("unknown", f"unknown: Redis did not answer the why read ({text})", {"error": text})], as_of_ms)


# Reads -----------------------------------------------------------------------------------------------------


def _evidence(name: str, reply: Any) -> dict[str, Any]:
    refused_whole(name, reply)
    now, text = reply[0], reply[1]
    raw = text.decode("utf-8", "surrogateescape") if isinstance(text, bytes) else str(text)
    evidence: dict[str, Any] = json.loads(raw)
    evidence["now_ms"] = int(now)
    return evidence


def queue_evidence(queue: str) -> Call[dict[str, Any]]:
    keys = QueueKeys(queue)
    return Call("why_queue", keys.script_keys(None), [], lambda reply: _evidence("why_queue", reply))


def job_evidence(queue: str, job_id: str) -> Call[dict[str, Any]]:
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)
    return Call("why_job", keys.script_keys(job_id), [job_id], lambda reply: _evidence("why_job", reply))


def _sweeper(reply: list[Any]) -> Sweeper:
    token, ttl = reply
    holder = _text(token).partition("/")[2] or _text(token) if token else ""
    return Sweeper(holder, int(ttl) if token and int(ttl) >= 0 else None)


def _lock_keys(client: Any, queue: str | None) -> list[str]:
    # On a cluster the lock is cut like the lease index: the queue's shard, or (no queue) each shard's.
    if queue is not None:
        return [shard_of(client, queue).lock_key]
    return [shard.lock_key for shard in shards_of(client)]


def lock_replies(client: Any, queue: str | None) -> list[Any] | Awaitable[list[Any]]:
    """GET and PTTL of the sweeper's lock (``queue``'s shard's, or every shard's), pipelined on ``client``: what
    :func:`first_held` reads (the asyncio client's ``execute`` is awaited)."""
    pipe = client.pipeline(transaction=False)
    for key in _lock_keys(client, queue):
        pipe.get(key)
        pipe.pttl(key)
    replies: list[Any] | Awaitable[list[Any]] = pipe.execute()
    return replies


def first_held(replies: list[Any]) -> Sweeper:
    """The first lock of :func:`lock_replies` that is held, or the first when none is."""
    pairs = [replies[i:i + 2] for i in range(0, len(replies), 2)]
    return next((_sweeper(pair) for pair in pairs if pair[0]), _sweeper(pairs[0]))


# Deciding --------------------------------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        magnitude = digits(value.removeprefix("-"), 15)
        return None if magnitude is None else -magnitude if value.startswith("-") else magnitude
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []  # cjson writes an empty array as {}


def ago(ms: int | float | None) -> str:
    """``1.2 s``, ``45 s``, ``3 min``, ``2.5 h``: how long, for a sentence."""
    if ms is None:
        return "?"
    seconds = max(float(ms), 0.0) / 1000
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _name(text: str) -> str:
    return visible(text, backslashes=False)


@dataclass(frozen=True, slots=True)
class WorkerSeen:
    id: str
    host: str
    pid: str
    concurrency: int | None
    heartbeat_ms: int | None
    expires_ms: int | None
    held: int | None
    refused_kind: str
    refused_ms: int | None
    refused_text: str
    refused_n: int
    now_ms: int

    @property
    def beat_ms(self) -> int | None:
        """How often it beats: a third of its entry's life (the Python worker's rule)."""
        if self.heartbeat_ms is None or self.expires_ms is None or self.expires_ms <= self.heartbeat_ms:
            return None
        return (self.expires_ms - self.heartbeat_ms) // BEATS_PER_TTL

    @property
    def heartbeat_age_ms(self) -> int | None:
        return None if self.heartbeat_ms is None else max(self.now_ms - self.heartbeat_ms, 0)

    @property
    def gone(self) -> bool:
        """Missed two heartbeats (its entry may still run: a stopped process keeps its entry for one TTL)."""
        age, beat = self.heartbeat_age_ms, self.beat_ms
        return age is not None and beat is not None and age > MISSED_BEATS * beat

    @property
    def at_capacity(self) -> bool:
        return bool(self.concurrency) and self.held is not None and self.held >= self.concurrency  # type: ignore[operator]

    @property
    def refusing(self) -> bool:
        """It noted a refused claim within its entry's life: its claims are being refused now."""
        if not self.refused_kind or self.refused_ms is None or self.heartbeat_ms is None or self.expires_ms is None:
            return False
        return self.now_ms - self.refused_ms <= self.expires_ms - self.heartbeat_ms

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "host": self.host, "pid": self.pid, "concurrency": self.concurrency,
                "held": self.held, "heartbeat_ms": self.heartbeat_ms, "heartbeat_age_ms": self.heartbeat_age_ms,
                "expires_ms": self.expires_ms, "gone": self.gone}


def _workers(evidence: dict[str, Any]) -> list[WorkerSeen]:
    now = int(evidence["now_ms"])
    found = []
    for w in _list(evidence.get("workers")):
        if not isinstance(w, dict):
            continue
        found.append(WorkerSeen(
            str(w.get("id", "")), str(w.get("host", "")), str(w.get("pid", "")), _int(w.get("concurrency")),
            _int(w.get("heartbeat_ms")), _int(w.get("expires_ms")), _int(w.get("held")),
            str(w.get("refused_kind", "")), _int(w.get("refused_ms")), str(w.get("refused_text", "")),
            _int(w.get("refused_n")) or 0, now))
    return found


@dataclass(frozen=True, slots=True)
class Rates:
    """Arrivals (enqueued and recovered) and claims per second over the minutes the history holds."""

    arrivals: int
    claims: int
    span_ms: int

    @property
    def arrival_per_s(self) -> float:
        return self.arrivals * 1000 / self.span_ms if self.span_ms else 0.0

    @property
    def claim_per_s(self) -> float:
        return self.claims * 1000 / self.span_ms if self.span_ms else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"arrived": self.arrivals, "claimed": self.claims, "window_ms": self.span_ms,
                "arrival_per_s": round(self.arrival_per_s, 3), "claim_per_s": round(self.claim_per_s, 3)}


def _rates(evidence: dict[str, Any]) -> Rates:
    now = int(evidence["now_ms"])
    minutes = [m for m in _list(evidence.get("minutes")) if isinstance(m, dict)]
    current = now // 60_000
    start = (current - MINUTES_READ + 1) * 60_000
    busy = [int(m["minute"]) for m in minutes if _int(m.get("minute")) is not None]
    if busy:
        start = max(start, min(busy) * 60_000)
    arrivals = sum((_int(m.get("e")) or 0) + (_int(m.get("r")) or 0) for m in minutes)
    claims = sum(_int(m.get("claims")) or 0 for m in minutes)
    return Rates(arrivals, claims, max(now - start, 1000))


_RATE_MARKS: Final = {"arrival_per_s": "estimated", "claim_per_s": "estimated", "arrived": "exact",
                      "claimed": "exact", "window_ms": "exact"}


@dataclass
class _Queue:
    """The queue's facts, read once, that several reasons share."""

    evidence: dict[str, Any]
    sweeper: Sweeper
    now: int = 0
    workers: list[WorkerSeen] = field(default_factory=list)
    live: list[WorkerSeen] = field(default_factory=list)
    gone: list[WorkerSeen] = field(default_factory=list)
    rates: Rates = field(default_factory=lambda: Rates(0, 0, 1000))

    def __post_init__(self) -> None:
        self.now = int(self.evidence["now_ms"])
        self.workers = _workers(self.evidence)
        self.live = [w for w in self.workers if not w.gone]
        self.gone = [w for w in self.workers if w.gone]
        self.rates = _rates(self.evidence)

    def count(self, name: str) -> int:
        return _int(self.evidence.get(name)) or 0

    @property
    def due(self) -> int:
        return self.count("due")

    @property
    def live_count(self) -> int:
        return self.count("live_workers")

    @property
    def read_all_workers(self) -> bool:
        return self.live_count <= len(self.workers)

    def growing(self) -> bool:
        """Arrivals outpace claims over the window, and arrivals go on now (the newest due job came within
        ARRIVALS_ONGOING_MS): a burst that is over leaves a backlog that is not growing."""
        r = self.rates
        if not (self.due and r.claims and r.arrivals > r.claims):
            return False
        newest = _int(self.evidence.get("newest_due_ms"))
        return newest is not None and self.now - newest <= ARRIVALS_ONGOING_MS

    def eta_ms(self, backlog: int, *, growing: bool) -> int | None:
        """When ``backlog`` due jobs are claimed at the current rates, or None when they are not draining."""
        net = self.rates.claim_per_s - (self.rates.arrival_per_s if growing else 0.0)
        if net <= 0:
            return None
        return int(backlog / net * 1000)


def _marks(evidence: dict[str, Any], *, stale: dict[str, int | None] | None = None,
           estimated: tuple[str, ...] = ()) -> dict[str, Any]:
    """The evidence with every figure marked exact, estimated or stale (with its age)."""
    marks: dict[str, str] = {}
    for name, value in evidence.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            marks[name] = "exact"
    for name in estimated:
        marks[name] = "estimated"
    ages: dict[str, int] = {}
    for name, age in (stale or {}).items():
        marks[name] = "stale"
        if age is not None:
            ages[name] = age
    return {**evidence, "marks": marks, **({"ages_ms": ages} if ages else {})}


def _paused(q: _Queue) -> Reason:
    e = q.evidence
    since = _int(e.get("paused_since_ms"))
    by, why = str(e.get("paused_by", "")), str(e.get("paused_reason", ""))
    text = "paused" + (f" by {_name(by)}" if by else "") + (f" {ago(q.now - since)} ago" if since else "")
    text += (f": {_name(why)}" if why else "") + f"; claims refuse it until it is resumed ({q.due} due wait)"
    return Reason("paused", text, _marks({"paused_by": by, "paused_since_ms": since, "paused_reason": why,
                                          "due": q.due}))


def _claims_refused(q: _Queue, refusing: list[WorkerSeen]) -> Reason:
    latest = max(refusing, key=lambda w: w.refused_ms or 0)
    kind = "out of memory" if latest.refused_kind == "oom" else "a script error"
    text = (f"claims refused by Redis ({kind}): {len(refusing)} worker(s) noted it, worker {_name(latest.id)} "
            f"{ago(q.now - (latest.refused_ms or q.now))} ago ({latest.refused_n} times)"
            + (f": {_name(latest.refused_text)}" if latest.refused_text else ""))
    return Reason("claims_refused", text, _marks({
        "kind": latest.refused_kind, "worker": latest.id, "host": latest.host, "refused_ms": latest.refused_ms,
        "refused_times": latest.refused_n, "error": latest.refused_text, "workers": [w.id for w in refusing],
        "due": q.due}))


def _no_live_worker(q: _Queue) -> Reason:
    e = q.evidence
    last_id, last_ms = str(e.get("last_expired_id", "")), _int(e.get("last_expired_ms"))
    if q.gone:
        latest = min(q.gone, key=lambda w: w.heartbeat_age_ms or 0)
        text = (f"no live worker consumes it: {len(q.gone)} registered worker(s) missed {MISSED_BEATS} heartbeats, "
                f"the latest {_name(latest.id)} on {_name(latest.host) or '?'} last beat "
                f"{ago(latest.heartbeat_age_ms)} ago")
    elif last_id:
        text = (f"no live worker consumes it: the last one, {_name(last_id)}, was last seen "
                f"{ago(q.now - (last_ms or q.now))} ago (its entry expired)")
    else:
        text = "no live worker consumes it: no worker has registered for this queue"
    if e.get("workers_wrongtype"):
        text += f" (the workers registry holds a {e['workers_wrongtype']}, not a sorted set)"
    evidence: dict[str, Any] = {"gone": [w.as_dict() for w in q.gone], "last_seen_id": last_id or None,
                                "last_seen_expired_ms": last_ms, "due": q.due, "pending": q.count("pending"),
                                "active": q.count("active")}
    return Reason("no_live_worker", text, _marks(evidence))


def _capacity(q: _Queue) -> Reason:
    held = sum(w.held or 0 for w in q.live)
    slots = sum(w.concurrency or 0 for w in q.live)
    oldest_beat = max((w.heartbeat_age_ms or 0) for w in q.live)
    of = f"{len(q.live)}" if q.read_all_workers else f"≥ {len(q.live)}"
    text = (f"every live consumer is at capacity: {held} leases held of {slots} slots on {of} worker(s), "
            f"as they reported up to {ago(oldest_beat)} ago; {q.due} due wait")
    return Reason("at_capacity", text, _marks(
        {"held": held, "concurrency": slots, "workers": [w.as_dict() for w in q.live], "due": q.due,
         "live_workers": q.live_count},
        stale={"held": oldest_beat, "concurrency": oldest_beat}))


def _outpace(q: _Queue) -> Reason:
    r = q.rates
    text = (f"arrivals outpace service: ≈{r.arrival_per_s:.1f}/s arrive, ≈{r.claim_per_s:.1f}/s are claimed "
            f"(last {ago(r.span_ms)}); {q.due} due and not draining")
    return Reason("arrivals_outpace_service", text, _marks(
        {**r.as_dict(), "due": q.due, "eta_ms": None}, estimated=("arrival_per_s", "claim_per_s")))


def _sweeper_not_running(q: _Queue) -> Reason:
    e = q.evidence
    oldest = _int(e.get("oldest_lapsed_ms"))
    lapsed = q.count("lapsed")
    text = (f"the sweeper has not run: no console or sweeper process holds {SWEEPER_LOCK}, and {lapsed} lapsed "
            f"lease(s) wait, the oldest {_name(str(e.get('oldest_lapsed_id', '')))} lapsed "
            f"{ago(q.now - (oldest or q.now))} ago")
    return Reason("sweeper_not_running", text, _marks(
        {"lapsed": lapsed, "oldest_lapsed_id": e.get("oldest_lapsed_id"), "oldest_lapsed_ms": oldest,
         "live_workers": len(q.live), "lock": SWEEPER_LOCK}))


def _queue_blockers(q: _Queue) -> list[Reason]:
    """What stops due jobs from being claimed, most decisive first."""
    reasons: list[Reason] = []
    if q.evidence.get("paused"):
        reasons.append(_paused(q))
    refusing = [w for w in q.workers if w.refusing]
    if refusing:
        reasons.append(_claims_refused(q, refusing))
    lapsed_wait = q.count("lapsed") > 0 and q.sweeper.known and not q.sweeper.held
    if lapsed_wait and not q.due:
        reasons.append(_sweeper_not_running(q))
    if not q.live and q.due + q.count("active") > 0:
        reasons.append(_no_live_worker(q))
    if q.live and q.due:
        growing = q.growing()
        full = all(w.at_capacity for w in q.live)
        if growing:
            reasons.append(_outpace(q))
        if full:
            reasons.append(_capacity(q))
    if lapsed_wait and q.due:
        reasons.append(_sweeper_not_running(q))
    return reasons


def _queue_moving(q: _Queue) -> Reason:
    """When nothing blocks it: draining (with a time to drain), running, waiting for due times, or idle."""
    e = q.evidence
    r = q.rates
    if q.due:
        if r.claims:
            eta = q.eta_ms(q.due, growing=False)
            text = (f"draining: {q.due} due, ≈{r.claim_per_s:.1f}/s claimed (last {ago(r.span_ms)})"
                    + (f", ≈{ago(eta)} to drain" if eta is not None else ""))
            return Reason("draining", text, _marks({**r.as_dict(), "due": q.due, "eta_ms": eta},
                                                   estimated=("arrival_per_s", "claim_per_s", "eta_ms")))
        below = sum(w.held or 0 for w in q.live), sum(w.concurrency or 0 for w in q.live)
        return Reason("no_cause_found", (
            f"no cause found: the queue is due ({q.due}), consumers are live ({len(q.live)}) and below capacity "
            f"({below[0]} of {below[1]} slots held), yet nothing was claimed in the last {ago(r.span_ms)}"),
            _marks({"due": q.due, "live_workers": len(q.live), "held": below[0], "concurrency": below[1],
                    **r.as_dict()}, estimated=("arrival_per_s", "claim_per_s")))
    pending, active = q.count("pending"), q.count("active")
    if pending:
        next_due = _int(e.get("next_due_ms"))
        return Reason("not_due", f"nothing is due: {pending} delayed, the next due in {ago((next_due or q.now) - q.now)}",
                      _marks({"delayed": pending, "next_due_ms": next_due}))
    if active:
        return Reason("running", f"{active} job(s) running, nothing waits", _marks({"active": active}))
    return Reason("idle", "idle: nothing pending or running", _marks({"pending": 0, "active": 0}))


def decide_queue(evidence: dict[str, Any], sweeper: Sweeper) -> Why:
    """The reasons ``queue`` is (not) draining, most decisive first (see the module's docstring)."""
    q = _Queue(evidence, sweeper)
    reasons = _queue_blockers(q) or [_queue_moving(q)]
    if reasons[0].code == "not_due" and not q.live:
        reasons.append(_no_live_worker(q))  # nothing is due yet; when it is, nobody will claim it
    for reason in reasons:
        reason.evidence.update(sweeper.as_dict())
    return Why(reasons, q.now)


def _job_reasons(q: _Queue, j: dict[str, Any]) -> list[Reason]:
    now = q.now
    job_id = str(j.get("id", ""))
    scores = _dict(j.get("scores"))
    sets = [name for name in ("pending", "active", "done", "failed") if scores.get(name, "") != ""]
    kind = str(j.get("key_type", "none"))
    state = str(j.get("state", ""))
    attempts, max_attempts = _int(j.get("attempts")), _int(j.get("max_attempts")) or 3
    last_error = str(j.get("last_error", ""))
    base = {"id": job_id, "state": state or None, "attempts": attempts, "max_attempts": max_attempts}
    if kind == "none" and not sets:
        return [Reason("missing", f"no job {_name(job_id)} in this queue (deleted, purged, or never enqueued)",
                       _marks({"id": job_id}))]
    if kind != "hash" or sets != [state]:
        problem = (f"its key holds a {kind}, not a hash" if kind != "hash" else
                   f"its hash says {_name(state)!r} but it is in {', '.join(sets) or 'no set'}")
        repair = "delete" if kind != "hash" or not sets else "check and repair (emq check Q)"
        return [Reason("integrity", f"its hash and sets disagree: {problem}; repair offered: {repair}",
                       _marks({**base, "key_type": kind, "sets": sets, "repair": repair}))]
    score = _int(scores[state]) if state in scores else None
    if state == "pending" and score is not None:
        blockers = _queue_blockers(q)
        if score > now:
            later = "retrying_later" if (attempts or 0) > 0 else "delayed"
            what = (f"retrying later: backoff until {ago(score - now)} from now after attempt {attempts}"
                    + (f" failed: {_name(last_error)}" if last_error else "")) if later == "retrying_later" else \
                f"due later: delayed for {ago(score - now)} more"
            return [Reason(later, what, _marks({**base, "due_ms": score, "due_in_ms": score - now,
                                                 "last_error": last_error or None})), *blockers]
        rank = _int(j.get("rank")) or 0
        eta = q.eta_ms(rank, growing=False) if rank else None
        waiting = Reason("waiting_behind", (
            f"waiting behind {rank} due job(s)" + (f", ≈{ago(eta)} at ≈{q.rates.claim_per_s:.1f}/s claimed"
                                                    if eta is not None else ", and none were claimed lately")),
            _marks({**base, "rank": rank, "due_ms": score, "waited_ms": now - score, "eta_ms": eta,
                    **q.rates.as_dict()}, estimated=("eta_ms", "arrival_per_s", "claim_per_s")))
        if blockers:
            return [*blockers, waiting]
        if rank:
            return [waiting]
        below = sum(w.held or 0 for w in q.live), sum(w.concurrency or 0 for w in q.live)
        return [Reason("no_cause_found", (
            f"no cause found: it is due and first in line, the queue is not paused, consumers are live "
            f"({len(q.live)}) and below capacity ({below[0]} of {below[1]} slots held)"),
            _marks({**base, "rank": 0, "waited_ms": now - score, "live_workers": len(q.live)}))]
    if state == "active" and score is not None:
        worker = str(j.get("worker", ""))
        entry = _dict(j.get("worker_entry"))
        beat, expires = _int(entry.get("heartbeat_ms")), _int(entry.get("expires_ms"))
        listed = _int(entry.get("registered_until"))
        seen = WorkerSeen(worker, str(entry.get("host", "")), str(entry.get("pid", "")),
                          _int(entry.get("concurrency")), beat, expires, _int(entry.get("held")), "", None, "", 0, now)
        alive = entry.get("key_type") == "hash" and listed is not None and listed >= now and not seen.gone
        claim = _dict(j.get("claim_entry"))
        facts = {**base, "worker": worker or None, "host": seen.host or None, "lease_deadline_ms": score,
                 "claimed_ms": _int(claim.get("ts")), "heartbeat_ms": beat, "heartbeat_age_ms": seen.heartbeat_age_ms}
        reasons: list[Reason] = []
        if score < now:
            lapsed = Reason("lease_lapsed", (
                f"its lease lapsed {ago(now - score)} ago and recovery is pending"
                + (f" (the sweeper {_name(q.sweeper.holder)} holds the lock)" if q.sweeper.held else "")),
                _marks({**facts, "lapsed_ms": now - score, **q.sweeper.as_dict()}))
            reasons.append(lapsed)
            if q.sweeper.known and not q.sweeper.held:
                reasons.append(_sweeper_not_running(q))
        if not alive:
            when = (f"no heartbeat for {ago(seen.heartbeat_age_ms)}" if beat is not None
                    else "it has no registry entry")
            reasons.append(Reason("worker_gone", (
                f"its worker {_name(worker) or '(unknown)'} is gone ({when}) while it holds the lease"
                + (f" until {ago(score - now)} from now" if score >= now else "")), _marks(facts)))
        if not reasons:
            reasons.append(Reason("leased", (
                f"leased by worker {_name(worker)} (attempt {attempts}, heartbeat {ago(seen.heartbeat_age_ms)} ago,"
                f" lease ends in {ago(score - now)})"),
                _marks(facts, stale={"heartbeat_age_ms": seen.heartbeat_age_ms})))
        return reasons
    if state == "failed" and score is not None:
        facts = {**base, "failed_ms": score, "last_error": last_error or None}
        cancel, corrupt = _dict(j.get("cancel_entry")), _dict(j.get("corrupt_entry"))
        if last_error == "cancelled" or (cancel and _int(cancel.get("ts")) == score):
            by = str(cancel.get("actor", ""))
            return [Reason("cancelled", f"cancelled by {_name(by) or 'an unknown actor'} {ago(now - score)} ago",
                           _marks({**facts, "cancelled_by": by or None}))]
        if last_error.startswith("corrupt") or corrupt:
            return [Reason("corrupt", f"moved aside as corrupt {ago(now - score)} ago: {_name(last_error)}",
                           _marks(facts))]
        if (attempts or 0) >= max_attempts:
            return [Reason("attempts_exhausted", (
                f"attempts exhausted: failed for good after {attempts} of {max_attempts} {ago(now - score)} ago"
                + (f": {_name(last_error)}" if last_error else "")), _marks(facts))]
        return [Reason("failed", (f"failed with attempts left ({attempts} of {max_attempts}) {ago(now - score)} ago"
                                  + (f": {_name(last_error)}" if last_error else "") + "; retry offered"),
                       _marks(facts))]
    if state == "done" and score is not None:
        return [Reason("done", f"done {ago(now - score)} ago: nothing to move", _marks({**base, "done_ms": score}))]
    return [Reason("integrity", f"its state {_name(state)!r} is none of the four; repair offered: delete",
                   _marks({**base, "key_type": kind, "sets": sets, "repair": "delete"}))]


def decide_job(evidence: dict[str, Any], sweeper: Sweeper) -> Why:
    """The reasons the job is where it is, most decisive first."""
    q = _Queue(evidence, sweeper)
    job = _dict(evidence.get("job"))
    return Why(_job_reasons(q, job), q.now)
