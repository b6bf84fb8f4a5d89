"""Operators press buttons while workers claim, heartbeat and complete the same jobs in other processes.

Afterwards the integrity check finds nothing torn, no job was completed twice
(the queue's event stream holds every move, and it is never trimmed here), no
job was lost (every job exists, or an operator's delete of it is in the audit
log), and every press is in the audit log.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import threading
import time
from collections import Counter
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client

from dashboard.actions import runner
from dashboard.actions.bulk import Selected
from dashboard.actions.models import AuditEntry
from dashboard.actions.services import selection_act
from queues import EchoMQ, NothingToClaim
from queues.integrity import check_queue
from queues.moves import ClaimedJob
from queues.worker import Worker
from tests.support.confirm import post_confirming
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "race"
JOBS = 200


# Workers hold their first jobs at this gate until the operators have
# cancelled one: on a loaded machine the workers could otherwise finish every
# job before any operator pressed a button, and the race would not happen.
_gate: Any = None


def _handle(job: ClaimedJob) -> None:
    _gate.wait(60)
    time.sleep(random.uniform(0, 0.06))
    if random.random() < 0.15:
        raise RuntimeError("flaky handler")


def _work(url: str, seed: int, gate: Any) -> None:
    global _gate
    _gate = gate
    random.seed(seed)
    Worker(queue=QUEUE, handler=_handle, url=url, concurrency=4, batch=4, lease_ms=300, backoff_ms=0, grace_ms=200,
           actor=f"worker-{seed}").run()


def _press_buttons(user: User, url: str, seed: int, stop: Any, presses: Any) -> None:
    """An operator at a browser: reads a job as its page would show it, presses a button."""
    rng = random.Random(seed)
    mq = EchoMQ.from_url(url, actor="page-reader")
    client = Client()
    client.force_login(user)
    try:
        while not stop.is_set():
            job_id = f"job-{rng.randrange(JOBS)}"
            shown = mq.job(QUEUE, job_id)  # what the page would show
            if not shown.exists:
                continue
            move = rng.choice(["retry", "retry", "cancel", "cancel", "recover", "delete"])
            response = post_confirming(client, "/actions/job/", {"q": QUEUE, "id": job_id, "move": move,
                                                                 "state": shown.state, "attempts": shown.attempts})
            assert response.status_code == 200, response.content
            with presses.get_lock():
                presses.value += 1
            time.sleep(0.003)
    finally:
        mq.close()
        connections.close_all()


def test_operators_racing_workers_in_other_processes_never_tear_lose_or_double_complete(
        operator: User, console_mq: EchoMQ, redis_url: str) -> None:
    mq = console_mq
    for i in range(JOBS):
        mq.enqueue(QUEUE, json.dumps({"n": i}), job_id=f"job-{i}", max_attempts=20)
    context = multiprocessing.get_context("fork")
    gate, stop = context.Event(), context.Event()
    connections.close_all()
    workers = [context.Process(target=_work, args=(redis_url, seed, gate)) for seed in range(3)]
    for worker in workers:
        worker.start()

    presses = context.Value("i", 0)
    # One operator in a process of its own, two in threads of this one.
    operators: list[threading.Thread | multiprocessing.process.BaseProcess] = [
        context.Process(target=_press_buttons, args=(operator, redis_url, 7, stop, presses))]
    connections.close_all()
    operators += [threading.Thread(target=_press_buttons, args=(operator, redis_url, seed, stop, presses))
                  for seed in range(2)]
    for actor in operators:
        actor.start()
    try:
        wait_until(lambda: AuditEntry.objects.filter(action="cancel", outcome="moved").exists(), 60,
                   "an operator to cancel a job the workers hold back")
    finally:
        gate.set()
    wait_until(lambda: mq.stats(QUEUE).counts["done"] >= 20, 60, "the workers to complete jobs under the operators")
    failed_now = [Selected(r.id, r.state, r.attempts) for r in mq.page(QUEUE, "failed", limit=50).rows]
    bulk = selection_act(user=operator, move="retry", queue=QUEUE, selected=failed_now) if failed_now else None
    time.sleep(1.0)
    stop.set()
    for actor in operators:
        actor.join(30)
    assert operators[0].exitcode == 0  # type: ignore[union-attr]
    for worker in workers:
        os.kill(worker.pid, signal.SIGTERM)  # type: ignore[arg-type]
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    if bulk is not None:
        assert runner.wait(bulk.pk, timeout=30)

    # Drain what is left, the way a last worker would.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        mq.recover_expired(QUEUE)
        try:
            for job in mq.claim(QUEUE, lease_ms=5_000, count=100):
                mq.complete(QUEUE, job.id, job.token)
        except NothingToClaim as empty:
            if mq.stats(QUEUE).counts["active"] == 0 and getattr(empty, "next_due_ms", None) is None:
                break
            time.sleep(0.05)

    events = mq.events(QUEUE, count=10_000)
    assert len(events) < 10_000, "the stream may have been trimmed: raise its cap or shorten the race"
    completions = Counter(e.job_id for e in events if e.move == "complete")
    assert completions and max(completions.values()) == 1, "a job was completed twice"
    report = check_queue(mq, QUEUE)
    assert report.ok, report.problems

    deleted = {e.jobs[0]["id"] for e in AuditEntry.objects.filter(action="delete", outcome="moved")}
    stats = mq.stats(QUEUE)
    assert stats.counts["pending"] == stats.counts["active"] == 0
    assert stats.counts["done"] + stats.counts["failed"] + len(deleted) == JOBS
    for i in range(JOBS):
        job_id = f"job-{i}"
        view = mq.job(QUEUE, job_id)
        assert view.exists or job_id in deleted, f"{job_id} was lost"
        assert (view.state == "done") == (completions[job_id] == 1) or not view.exists

    singles = AuditEntry.objects.filter(scope="job")
    assert singles.count() == presses.value, "a press is missing from the audit log"
    assert set(singles.values_list("outcome", flat=True)) <= {"moved", "refused"}
    assert singles.filter(outcome="moved").exists() and singles.filter(outcome="refused").exists()
    cancelled_by_operator = {e.job_id for e in events if e.move == "cancel" and e.actor == "console:otto"}
    assert cancelled_by_operator, "the race never cancelled a job"
