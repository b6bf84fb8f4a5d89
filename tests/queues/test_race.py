"""Many claimers and an operator race over the same jobs, in separate processes.

Afterwards the integrity check must find nothing torn, every job must be in
exactly one place (or deleted by the operator), no job may be completed
twice, and no completion may have come from a stale token.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import time
from pathlib import Path

from queues import EchoMQ, NothingToClaim, Refused
from queues.integrity import check_queue

QUEUE = "race"
JOBS = 300


def _worker(url: str, log: str, seed: int, stop_at: float) -> None:
    rng = random.Random(seed)
    mq = EchoMQ.from_url(url, actor=f"worker-{seed}")
    with open(log, "a") as out:
        while time.monotonic() < stop_at:
            try:
                jobs = mq.claim(QUEUE, lease_ms=150, count=rng.randint(1, 4))
            except NothingToClaim:
                time.sleep(0.01)
                continue
            for job in jobs:
                roll = rng.random()
                if roll < 0.15:
                    time.sleep(0.2)  # stall past the lease: someone may recover and re-claim it
                elif roll < 0.3:
                    try:
                        mq.extend(QUEUE, job.id, job.token, lease_ms=150)
                    except Refused:
                        continue
                try:
                    if rng.random() < 0.1:
                        mq.fail(QUEUE, job.id, job.token, error="flaky", backoff_ms=0)
                        continue
                    mq.complete(QUEUE, job.id, job.token)
                    out.write(json.dumps({"completed": job.id, "attempts": job.attempts, "claim": job.claim_id}) + "\n")
                except Refused:
                    out.write(json.dumps({"refused": job.id}) + "\n")
                out.flush()


def _operator(url: str, log: str, seed: int, stop_at: float) -> None:
    rng = random.Random(seed)
    mq = EchoMQ.from_url(url, actor="operator")
    with open(log, "a") as out:
        while time.monotonic() < stop_at:
            mq.recover_expired(QUEUE, limit=50)
            job_id = f"job-{rng.randrange(JOBS)}"
            view = mq.job(QUEUE, job_id)
            if not view.exists:
                continue
            move = rng.choice(["retry", "cancel", "delete", "recover", "retry"])
            if move == "delete" and rng.random() < 0.7:
                continue  # keep most jobs alive so the race has material
            try:
                mq.operator_move(move, QUEUE, job_id, expect_state=view.state, expect_attempts=view.attempts)
            except Refused:
                continue
            if move == "delete":
                out.write(json.dumps({"deleted": job_id}) + "\n")
                out.flush()
            time.sleep(0.002)


def test_concurrent_claimers_and_operators_never_tear_lose_or_double_complete(mq: EchoMQ, redis_url: str,
                                                                               tmp_path: Path) -> None:
    ids = [f"job-{i}" for i in range(JOBS)]
    for job_id in ids:
        mq.enqueue(QUEUE, json.dumps({"n": job_id}), job_id=job_id, max_attempts=50)
    log = str(tmp_path / "log.jsonl")
    context = multiprocessing.get_context("fork")
    stop_at = time.monotonic() + 4.0
    actors = [context.Process(target=_worker, args=(redis_url, log, seed, stop_at)) for seed in range(4)]
    actors.append(context.Process(target=_operator, args=(redis_url, log, 99, stop_at - 1.0)))
    for actor in actors:
        actor.start()
    for actor in actors:
        actor.join(30)
        assert actor.exitcode == 0

    # Drain: whatever is left gets recovered and worked off without stalls.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        mq.recover_expired(QUEUE)
        try:
            for job in mq.claim(QUEUE, lease_ms=5_000, count=100):
                mq.complete(QUEUE, job.id, job.token)
                with open(log, "a") as out:
                    out.write(json.dumps({"completed": job.id, "attempts": job.attempts, "claim": job.claim_id}) + "\n")
        except NothingToClaim as empty:
            if mq.stats(QUEUE).counts["active"] == 0 and getattr(empty, "next_due_ms", None) is None:
                break
            time.sleep(0.05)

    records = [json.loads(line) for line in Path(log).read_text().splitlines()]
    completions: dict[str, list[dict[str, object]]] = {}
    for record in records:
        if "completed" in record:
            completions.setdefault(str(record["completed"]), []).append(record)
    deleted = {r["deleted"] for r in records if "deleted" in r}

    report = check_queue(mq, QUEUE)
    assert report.ok, report.problems
    stats = mq.stats(QUEUE)
    assert stats.counts["pending"] == stats.counts["active"] == 0
    assert all(len(c) == 1 for c in completions.values()), "a job was completed twice"
    assert any(r.get("refused") for r in records), "the race never produced a stale token to refuse"
    for job_id in ids:
        view = mq.job(QUEUE, job_id)
        if not view.exists:
            assert job_id in deleted, f"{job_id} was lost"
            continue
        assert view.state in ("done", "failed")
        if view.state == "done":
            [winner] = completions[job_id]
            # The completion that won held the job's final token: no stale token ever won.
            assert (view.attempts, view.text("claim_id")) == (str(winner["attempts"]), winner["claim"])
        else:
            assert job_id not in completions
    assert stats.counts["done"] + stats.counts["failed"] + len(deleted) == JOBS
