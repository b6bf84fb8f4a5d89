"""A snapshot as Prometheus text (``prometheus_client``), in base units and with bounded labels.

Series (one per queue where labelled ``queue``):

- ``emq_queue_jobs{queue,state}``: state is ``due`` and ``delayed`` (together: pending), ``active``,
  ``done``, ``failed``; their sum is the queue's jobs.
- ``emq_queue_oldest_due_age_seconds{queue}``: how long the oldest due job has waited (0: none due).
- ``emq_queue_active_leases{queue}``: leases held whose deadline has not passed;
  ``emq_queue_lapsed_leases{queue}``: leases past their deadline, waiting for the sweeper. Together
  they are ``emq_queue_jobs{state="active"}``.
- ``emq_queue_paused{queue}``: 1 while the queue is paused.
- ``emq_jobs_total{queue,outcome}`` (completed, failed, retried, recovered, cancelled),
  ``emq_jobs_enqueued_total{queue}``, ``emq_jobs_claimed_total{queue}``: counters the moves keep in
  each queue's slot (``emq:{Q}:counts``, one HINCRBY in the shared ``emit`` of common.lua), so every
  console process reports the same totals and a console restart loses none. Counted by the moves
  rather than derived from the event stream because the stream is capped (10,000 entries) and read by
  each process on its own: a process that started late, or fell behind the cap, would count differently.
- ``emq_job_wait_seconds{queue}`` and ``emq_job_run_seconds{queue}``: histograms (due -> claimed, claimed ->
  complete or fail) with buckets 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600 s, from the same counters.
- ``emq_workers{queue}``: workers alive in the queue's registry (``emq:{Q}:workers``).
- For each queue with a latency objective (``queues.slo``): ``emq_slo_objective_ratio``,
  ``emq_slo_threshold_seconds``, ``emq_slo_window_seconds``, ``emq_slo_attainment_ratio``,
  ``emq_slo_error_budget_remaining_ratio`` ``{queue,metric}`` and ``emq_slo_burn_rate{queue,metric,window}``
  (window 5m, 30m, 1h, 6h), from the histograms the moves keep; absent where nothing was measured.
- ``emq_queues_by_reason{reason}``: how many queues have each why code as their first reason
  (``queues.why.QUEUE_CODES``, every code present, 0 included; ``unknown``: the why read failed).
- ``emq_redis_up``, ``emq_redis_used_memory_bytes`` (summed over primaries),
  ``emq_redis_maxmemory_policy_info{policy}`` (1 per policy in use; anything but ``noeviction`` may lose jobs).
- ``emq_metrics_last_walk_timestamp_seconds``, ``emq_metrics_walk_duration_seconds``,
  ``emq_metrics_queues``, ``emq_metrics_unreadable_queues``: how fresh and complete the rest is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Final

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from queues.reads import WAIT_BUCKETS_MS
from queues.why import QUEUE_CODES

from .snapshot import Snapshot

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Each outcome of emq_jobs_total from the moves' own counters (queues.reads.counts).
OUTCOMES: Final = {
    "completed": ("complete",),
    "failed": ("fail:failed",),
    "retried": ("fail:pending", "retry"),
    "recovered": ("recover:pending", "recover:failed"),
    "cancelled": ("cancel",),
}


def _objectives(s: Snapshot) -> Iterator[Metric]:
    labels = ["queue", "metric"]
    objective = GaugeMetricFamily("emq_slo_objective_ratio", "The share of jobs an objective wants under its "
                                  "threshold (0.95: 95 %)", labels=labels)
    threshold = GaugeMetricFamily("emq_slo_threshold_seconds", "The wait or run an objective's jobs should stay "
                                  "under", labels=labels)
    window = GaugeMetricFamily("emq_slo_window_seconds", "The window an objective is judged over", labels=labels)
    attained = GaugeMetricFamily("emq_slo_attainment_ratio", "The share of jobs measured over the window that "
                                 "were under the threshold (absent: nothing measured)", labels=labels)
    budget = GaugeMetricFamily("emq_slo_error_budget_remaining_ratio", "The share of the window's error budget "
                               "not spent yet (negative: overspent)", labels=labels)
    burn = GaugeMetricFamily("emq_slo_burn_rate", "How fast the error budget is spent over a recent window "
                             "(1: exactly over the objective's window; absent: nothing measured)",
                             labels=[*labels, "window"])
    for queue, status in sorted(s.slos.items()):
        key = [queue, status.slo.metric]
        objective.add_metric(key, status.slo.target_ratio)
        threshold.add_metric(key, status.slo.under_ms / 1000)
        window.add_metric(key, status.slo.window_days * 86400)
        if status.attainment is not None and status.budget_left is not None:
            attained.add_metric(key, status.attainment)
            budget.add_metric(key, status.budget_left)
        for name, rate in status.burn.items():
            if rate is not None:
                burn.add_metric([*key, name], rate)
    yield from (objective, threshold, window, attained, budget, burn)


class _SnapshotCollector(Collector):
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self.snapshot
        jobs = GaugeMetricFamily("emq_queue_jobs", "Jobs in a queue by state (pending is due + delayed)",
                                 labels=["queue", "state"])
        oldest = GaugeMetricFamily("emq_queue_oldest_due_age_seconds",
                                   "How long the oldest due job has waited to be claimed (0 when none is due)",
                                   labels=["queue"])
        held = GaugeMetricFamily("emq_queue_active_leases", "Leases held whose deadline has not passed",
                                 labels=["queue"])
        lapsed = GaugeMetricFamily("emq_queue_lapsed_leases", "Leases past their deadline, not yet recovered",
                                   labels=["queue"])
        paused = GaugeMetricFamily("emq_queue_paused", "1 while the queue is paused (claims refuse it)",
                                   labels=["queue"])
        for stats in s.stats:
            q = stats.queue
            for state, value in (("due", stats.due), ("delayed", stats.delayed), ("active", stats.counts["active"]),
                                 ("done", stats.counts["done"]), ("failed", stats.counts["failed"])):
                jobs.add_metric([q, state], value)
            oldest.add_metric([q], (stats.oldest_due_age_ms or 0) / 1000)
            held.add_metric([q], stats.counts["active"] - stats.lapsed)
            lapsed.add_metric([q], stats.lapsed)
            paused.add_metric([q], int(stats.paused))
        yield from (jobs, oldest, held, lapsed, paused)
        outcomes = CounterMetricFamily("emq_jobs", "Jobs that reached each outcome, counted by the moves in Redis "
                                       "(the same from every console process, kept across restarts)",
                                       labels=["queue", "outcome"])
        enqueued = CounterMetricFamily("emq_jobs_enqueued", "Jobs enqueued, counted by the enqueue moves",
                                       labels=["queue"])
        claimed = CounterMetricFamily("emq_jobs_claimed", "Claims (attempts started), counted by the claim move",
                                      labels=["queue"])
        for queue, counted in s.counts.items():
            for outcome, fields in OUTCOMES.items():
                outcomes.add_metric([queue, outcome], sum(counted.get(f, 0) for f in fields))
            enqueued.add_metric([queue], counted.get("enqueue", 0))
            claimed.add_metric([queue], counted.get("claim", 0))
        yield from (outcomes, enqueued, claimed)
        for kind, name, what in (("wait", "emq_job_wait_seconds", "How long claimed jobs had waited since due"),
                                 ("run", "emq_job_run_seconds", "How long jobs ran, claim to complete or fail")):
            histogram = HistogramMetricFamily(name, what + " (counted by the moves in Redis)", labels=["queue"])
            for queue, counted in s.counts.items():
                cumulative, buckets = 0, []
                for n, upper in enumerate(WAIT_BUCKETS_MS):
                    cumulative += counted.get(f"{kind}:{n}", 0)
                    buckets.append((f"{upper / 1000:g}", cumulative))
                cumulative += counted.get(f"{kind}:{len(WAIT_BUCKETS_MS)}", 0)
                buckets.append(("+Inf", cumulative))
                histogram.add_metric([queue], buckets, sum_value=counted.get(f"{kind}:sum", 0) / 1000)
            yield histogram
        alive = GaugeMetricFamily("emq_workers", "Workers whose registry entry is alive (heartbeat within a lease)",
                                  labels=["queue"])
        for queue, live in s.workers.items():
            alive.add_metric([queue], live)
        yield alive
        yield from _objectives(s)
        by_reason = GaugeMetricFamily("emq_queues_by_reason", "Queues whose first why reason is this code "
                                      "(queues not draining: paused, claims_refused, no_live_worker, ...)",
                                      labels=["reason"])
        tally = Counter(s.reasons.values())
        for code in QUEUE_CODES:
            by_reason.add_metric([code], tally.get(code, 0))
        yield by_reason

        yield GaugeMetricFamily("emq_redis_up", "1 when the last walk reached every Redis primary",
                                value=int(s.redis_up))
        if s.health is not None:
            yield GaugeMetricFamily("emq_redis_used_memory_bytes", "Memory used by Redis, summed over primaries",
                                    value=s.health.used_memory_bytes)
            policy = GaugeMetricFamily("emq_redis_maxmemory_policy_info",
                                       "The maxmemory-policy of the Redis primaries (1 per policy in use)",
                                       labels=["policy"])
            for name in s.health.policies:
                policy.add_metric([name], 1)
            yield policy
        yield GaugeMetricFamily("emq_metrics_last_walk_timestamp_seconds",
                                "When this console process last finished reading the queues", value=s.taken_at)
        yield GaugeMetricFamily("emq_metrics_walk_duration_seconds", "How long the last walk over the queues took",
                                value=s.duration_s)
        yield GaugeMetricFamily("emq_metrics_queues", "Queues read by the last walk", value=len(s.stats))
        yield GaugeMetricFamily("emq_metrics_unreadable_queues", "Registered queues the last walk could not read",
                                value=s.unreadable)


def render(snapshot: Snapshot) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snapshot))
    return generate_latest(registry)
