"""What each kind of rule watches, read through ``queues`` at a bounded cost per rule and round.

Each reader answers an :class:`Observation`: the condition holds, does not
hold, or cannot be decided now (Redis did not answer, the view is gone): an
undecided rule keeps its state, so a Redis outage neither fires nor resolves
anything. What one rule costs Redis each round:

- a queue's why state: one read-only script (the why evidence) and a GET and PTTL of the sweeper lock, shared by
  the round;
- a failure group: one read-only script, O(1) (the group's count from the index the moves keep);
- a burn rate: two read-only histogram scripts (60 minutes and 6 hours of buckets), and the objectives' hash
  once per round;
- a saved view: a search of at most ``VIEW_RULE_REDIS_S`` of Redis time that stops at the rule's count
  (a queue page's view: one ZCARD-bounded page read; failures by cause: one groups read);
- a schedule (the dead-man's switch): the server's clock and one ``schedules`` read per 100 schedules of the queue
  listed before it (its next and last ticks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from dashboard.saved_views.models import SavedView
from dashboard.saved_views.services import view_count
from queues import EchoMQ, EmqError, Refused, why
from queues.failures import groups
from queues.schedules import LATE_AFTER_MS, get_schedule
from queues.slo import Slos, burn_calls, burn_rates, slos

from .models import AlertRule

# What "not draining" means for a rule (why's own set, without "unknown": Redis not answering is not the queue's
# state), and what "no consumer" means.
NOT_DRAINING_CODES: Final = tuple(code for code in why.QUEUE_CODES if code in why.NOT_DRAINING and code != "unknown")
NO_CONSUMER_CODES: Final = ("no_live_worker",)
BURN_WINDOWS: Final = ("5m", "30m", "1h", "6h")
DEFAULT_BURN: Final = 14.4
VIEW_RULE_REDIS_S: Final = 0.2


@dataclass(frozen=True, slots=True)
class Observation:
    holds: bool | None  # None: cannot be decided now (the rule keeps its state)
    text: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Round:
    """What every rule of one round shares: the client, the sweeper lock's holder, the objectives (read once)."""

    mq: EchoMQ
    _sweeper: why.Sweeper | None = None
    _slos: Slos | None = None

    @property
    def sweeper(self) -> why.Sweeper:
        if self._sweeper is None:
            self._sweeper = self.mq.sweeper_lock()
        return self._sweeper

    @property
    def objectives(self) -> Slos:
        if self._slos is None:
            self._slos = self.mq.run(slos())
        return self._slos


def _why(round_: Round, rule: AlertRule) -> Observation:
    codes = set(rule.parameters.get("codes") or NOT_DRAINING_CODES)
    answer = round_.mq.queue_why(rule.queue, sweeper=round_.sweeper)
    if answer.top.code == "unknown":
        return Observation(None, answer.top.text)
    matched = [r for r in answer.reasons if r.code in codes]
    if matched:
        return Observation(True, matched[0].text, {"code": matched[0].code, "as_of_ms": answer.as_of_ms})
    return Observation(False, answer.top.text, {"code": answer.top.code, "as_of_ms": answer.as_of_ms})


def _failure_group(round_: Round, rule: AlertRule) -> Observation:
    group = str(rule.parameters.get("group", ""))
    at_least = int(rule.parameters.get("at_least") or 1)
    found = round_.mq.run(groups(rule.queue, limit=1, group=group))
    if found.problem:
        return Observation(None, found.problem)
    count = found.groups[0].count if found.groups else 0
    signature = found.groups[0].signature if found.groups else ""
    text = f"failure group {group} of {rule.queue} holds {count} failed job(s)" + (f": {signature}" if signature else "")
    return Observation(count >= at_least, text, {"group": group, "count": count, "signature": signature})


def _slo_burn(round_: Round, rule: AlertRule) -> Observation:
    objective = round_.objectives.for_queue(rule.queue)
    if objective is None:
        return Observation(None, f"{rule.queue} has no latency objective")
    threshold = float(rule.parameters.get("threshold") or DEFAULT_BURN)
    windows = [w for w in rule.parameters.get("windows") or ("1h", "5m") if w in BURN_WINDOWS]
    burn = burn_rates(objective, round_.mq.run_many(burn_calls(rule.queue)))
    rates = {w: burn.get(w) for w in windows}
    said = ", ".join(f"{w} {'-' if r is None else f'{r:.1f}'}" for w, r in rates.items())
    holds = all(r is not None and r >= threshold for r in rates.values())
    return Observation(holds, f"{rule.queue} burns its error budget at {said} (alert at {threshold:g} over "
                              f"{' and '.join(windows)}; {objective.describe()})",
                       {"burn_rate": rates, "threshold": threshold})


def _view(round_: Round, rule: AlertRule) -> Observation:
    view: SavedView | None = rule.view
    if view is None:
        return Observation(None, "its saved view was deleted")
    at_least = int(rule.parameters.get("at_least") or 1)
    count = view_count(round_.mq, view, at_most=at_least, redis_s=VIEW_RULE_REDIS_S)
    shown = f"{count}" if count < at_least else f"at least {count}"
    return Observation(count >= at_least, f"saved view {view.name!r} finds {shown} job(s) (alert at {at_least})",
                       {"count": count, "at_least": at_least, "view": view.pk})


def _utc(ms: int | None) -> str:
    if ms is None:
        return "never"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def schedule_grace_ms(rule: AlertRule, period_ms: int | None) -> int:
    """How late a tick may be before the switch fires: the rule's ``grace_s``, else the scheduler's own idea of
    late (60 s) or half the schedule's period when that is shorter, so a missed tick fires within one interval."""
    given = rule.parameters.get("grace_s")
    if given not in (None, ""):
        return int(float(given) * 1000)
    return min(LATE_AFTER_MS, period_ms // 2) if period_ms else LATE_AFTER_MS


def _schedule(round_: Round, rule: AlertRule) -> Observation:
    name = str(rule.parameters.get("schedule", ""))
    try:
        found = get_schedule(round_.mq, rule.queue, name)
    except Refused as refused:
        if refused.reason == "missing":
            return Observation(None, f"{rule.queue} has no schedule {name!r} (deleted?)")
        raise
    now_ms = int(round_.mq.server_time_ms(rule.queue))
    if found.paused:
        return Observation(False, f"schedule {name} of {rule.queue} is paused", {"schedule": name, "paused": True})
    period = found.when.next_after(found.next_ms) - found.next_ms if found.when and found.next_ms else None
    grace_ms = schedule_grace_ms(rule, period)
    overdue = found.overdue_ms(now_ms)
    details = {"schedule": name, "expected_ms": found.next_ms, "last_tick_ms": found.last_tick_ms,
               "overdue_ms": overdue, "grace_ms": grace_ms, "last_outcome": found.last_outcome}
    if overdue > grace_ms:
        return Observation(True, f"schedule {name} of {rule.queue}: a tick was expected by {_utc(found.next_ms)}, "
                                 f"not seen ({overdue // 1000} s late; the last tick {_utc(found.last_tick_ms)})",
                           details)
    return Observation(False, f"schedule {name} of {rule.queue} ticks next at {_utc(found.next_ms)} (last "
                              f"{_utc(found.last_tick_ms)})", details)


READERS: Final[dict[str, Callable[[Round, AlertRule], Observation]]] = {
    AlertRule.Kind.WHY: _why,
    AlertRule.Kind.FAILURE_GROUP: _failure_group,
    AlertRule.Kind.SLO_BURN: _slo_burn,
    AlertRule.Kind.VIEW: _view,
    AlertRule.Kind.SCHEDULE: _schedule,
}


def observe(round_: Round, rule: AlertRule) -> Observation:
    """The rule's condition now; never raises for Redis or odd data (undecided, in words)."""
    reader = READERS.get(rule.kind)
    if reader is None:
        return Observation(None, f"rules of kind {rule.kind!r} are not evaluated by this console")
    try:
        return reader(round_, rule)
    except EmqError as error:
        return Observation(None, f"cannot read it now: {error}")
