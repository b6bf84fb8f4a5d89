from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from queues import AsyncEchoMQ, ClaimedJob, EchoMQ, InvalidInput
from queues.keys import LEASE_INDEX, STATES, QueueKeys
from queues.worker import HandlerThreads, Worker, WorkerStats, load_handler
from tests.support.redis_servers import RedisServer
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


async def _serve_until(worker: Worker, done: Callable[[], bool], timeout: float = 20.0) -> WorkerStats:
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the worker did not get there in time"
        assert not serving.done(), f"the worker stopped early: {serving.exception() if serving.done() else ''}"
        await asyncio.sleep(0.02)
    stop.set()
    return await asyncio.wait_for(serving, 15)


def _memberships(mq: EchoMQ, queue: str, job_id: str) -> list[str]:
    keys = QueueKeys(queue)
    return [state for state in STATES if mq.redis.zscore(keys.state_set(state), job_id) is not None]


def _assert_each_job_in_exactly_one_state(mq: EchoMQ, queue: str, ids: list[str]) -> Counter[str]:
    states: Counter[str] = Counter()
    for job_id in ids:
        sets = _memberships(mq, queue, job_id)
        view = mq.job(queue, job_id)
        assert len(sets) == 1, f"job {job_id} is in {sets}"
        assert view.state == sets[0], f"job {job_id} says {view.state} but is in {sets[0]}"
        states[view.state] += 1
    return states


@pytest.mark.parametrize("concurrency", [1, 8])
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_it_processes_a_batch_exactly_once(mq: EchoMQ, redis_url: str, kind: str, concurrency: int) -> None:
    ids = mq.enqueue_many("mail", [f"job {i}" for i in range(300)])
    seen: list[str] = []
    lock = threading.Lock()

    def handle(job: ClaimedJob) -> None:
        with lock:
            seen.append(job.id)

    async def handle_async(job: ClaimedJob) -> None:
        await asyncio.sleep(0.001)
        seen.append(job.id)

    worker = Worker(queue="mail", handler=handle if kind == "sync" else handle_async, concurrency=concurrency,
                    url=redis_url, batch=5)
    stats = await _serve_until(worker, lambda: mq.stats("mail").counts["done"] == 300)

    assert sorted(seen) == sorted(ids)
    assert (stats.claimed, stats.completed, stats.failed, stats.lost) == (300, 300, 0, 0)
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 300}
    completes = Counter(e.job_id for e in mq.events("mail", count=5000) if e.move == "complete")
    assert set(completes.values()) == {1} and len(completes) == 300
    assert {mq.job("mail", i).attempts for i in ids} == {"1"}


async def test_a_failing_handler_is_retried_then_failed_with_its_last_error(mq: EchoMQ, redis_url: str) -> None:
    job_id = mq.enqueue("mail", "x", max_attempts=3)
    calls: list[int] = []

    def explode(job: ClaimedJob) -> None:
        calls.append(job.attempts)
        raise ValueError(f"mailbox full on try {job.attempts}")

    worker = Worker(queue="mail", handler=explode, url=redis_url, backoff_ms=10, poll_ms=20)
    stats = await _serve_until(worker, lambda: mq.stats("mail").counts["failed"] == 1)

    view = mq.job("mail", job_id)
    assert calls == [1, 2, 3]
    assert (view.state, view.attempts) == ("failed", "3")
    assert view.text("last_error").startswith("ValueError: mailbox full on try 3 (at test_worker.py:")
    assert (stats.failed, stats.completed) == (3, 0)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_long_job_outlives_its_lease_through_the_heartbeat(mq: EchoMQ, redis_url: str, kind: str) -> None:
    job_id = mq.enqueue("reports", "big")
    runs: list[int] = []

    async def slow(job: ClaimedJob) -> None:
        runs.append(job.attempts)
        await asyncio.sleep(1.5)

    def slow_sync(job: ClaimedJob) -> None:
        runs.append(job.attempts)
        time.sleep(1.5)

    worker = Worker(queue="reports", handler=slow if kind == "async" else slow_sync, url=redis_url, lease_ms=300)
    stats = await _serve_until(worker, lambda: mq.stats("reports").counts["done"] == 1)

    view = mq.job("reports", job_id)
    assert runs == [1]
    assert (view.state, view.attempts) == ("done", "1")
    assert (stats.completed, stats.lost) == (1, 0)
    moves = [e.move for e in reversed(mq.events("reports"))]
    # Every heartbeat is an event (pages follow the deadline), but only the moves are the job's history.
    assert [m for m in moves if m != "extend"] == ["enqueue", "claim", "complete"] and "extend" in moves
    assert [e.move for e in reversed(mq.job_events("reports", job_id))] == ["enqueue", "claim", "complete"]


async def test_an_operator_cancel_stops_an_async_handler_and_nothing_is_reported(mq: EchoMQ, redis_url: str) -> None:
    job_id = mq.enqueue("reports", "big")
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(job: ClaimedJob) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    worker = Worker(queue="reports", handler=slow, url=redis_url, lease_ms=300)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await asyncio.wait_for(started.wait(), 10)
    mq.cancel("reports", job_id, expect_state="active")
    await asyncio.wait_for(cancelled.wait(), 5)
    stop.set()
    stats = await asyncio.wait_for(serving, 10)

    view = mq.job("reports", job_id)
    assert (view.state, view.text("last_error")) == ("failed", "cancelled")
    assert (stats.lost, stats.completed, stats.failed, stats.refused_reports) == (1, 0, 0, 0)
    assert [e.move for e in reversed(mq.events("reports"))] == ["enqueue", "claim", "cancel"]


async def test_a_recovered_job_is_not_reported_by_the_worker_that_lost_it(mq: EchoMQ, redis_url: str) -> None:
    job_id = mq.enqueue("reports", "big")
    attempts: list[int] = []
    lapse = threading.Event()

    def slow(job: ClaimedJob) -> None:
        attempts.append(job.attempts)
        if job.attempts == 1:
            lapse.set()
            time.sleep(1.0)

    worker = Worker(queue="reports", handler=slow, url=redis_url, lease_ms=300, poll_ms=20)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await asyncio.to_thread(lapse.wait, 10)
    # The worker stalls: its lease deadline passes and an operator recovers the job.
    mq.redis.zadd(QueueKeys("reports").active, {job_id: 1})
    mq.recover("reports", job_id, expect_state="active", expect_attempts=1)
    deadline = time.monotonic() + 10
    while mq.job("reports", job_id).state != "done":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    stop.set()
    stats = await asyncio.wait_for(serving, 10)

    assert attempts == [1, 2]
    assert mq.job("reports", job_id).attempts == "2"
    assert [(e.move, e.attempts) for e in reversed(mq.events("reports"))] == [
        ("enqueue", "0"), ("claim", "1"), ("recover", "1"), ("claim", "2"), ("complete", "2")]
    assert (stats.lost, stats.completed, stats.refused_reports) == (1, 1, 0)


async def test_a_lapsed_lease_whose_note_the_lease_index_lost_is_recovered_by_the_queues_own_worker(
        mq: EchoMQ, redis_url: str) -> None:
    # A claimer whose connection closed after its claim ran: its note never reached the index, and it never
    # reports. No sweeper runs here; the index knows nothing of the queue.
    job_id = mq.enqueue("reports", "orphan")
    claimer = EchoMQ.from_url(redis_url, actor="claimer-gone")
    assert [job.id for job in claimer.claim("reports", lease_ms=100)] == [job_id]
    claimer.close()
    mq.redis.zrem(LEASE_INDEX, "reports")
    assert mq.redis.zscore(LEASE_INDEX, "reports") is None
    attempts: list[int] = []

    worker = Worker(queue="reports", handler=lambda job: attempts.append(job.attempts), url=redis_url,
                    lease_ms=300, poll_ms=20, actor="worker-1")
    stats = await _serve_until(worker, lambda: mq.job("reports", job_id).state == "done")

    # Its heartbeat's recover_expired reads the queue's active set by lease deadline, not the index.
    assert attempts == [2]
    assert [(e.move, e.actor) for e in reversed(mq.events("reports")) if e.move != "extend"] == [
        ("enqueue", "test"), ("claim", "claimer-gone"), ("recover", "worker-1"), ("claim", "worker-1"),
        ("complete", "worker-1")]
    assert (stats.completed, stats.lost) == (1, 0)


async def test_it_keeps_working_when_redis_goes_away_and_comes_back() -> None:
    server = RedisServer().start()
    try:
        done: list[str] = []
        worker = Worker(queue="mail", handler=lambda job: done.append(job.id), url=server.url, poll_ms=20)
        stop = asyncio.Event()
        serving = asyncio.create_task(worker.serve(stop))
        await asyncio.sleep(0.2)
        server.kill()
        await asyncio.sleep(0.5)
        server.start()
        mq = EchoMQ.from_url(server.url)
        ids = mq.enqueue_many("mail", ["a", "b", "c"])
        deadline = time.monotonic() + 15
        while mq.stats("mail").counts["done"] < 3:
            assert time.monotonic() < deadline and not serving.done()
            await asyncio.sleep(0.05)
        stop.set()
        stats = await asyncio.wait_for(serving, 10)
        mq.close()
        assert sorted(done) == sorted(ids)
        assert stats.connection_errors > 0
    finally:
        server.cleanup()


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_it_reloads_its_scripts_after_a_script_flush(mq: EchoMQ, redis_url: str, concurrency: int) -> None:
    ids = mq.enqueue_many("mail", [str(i) for i in range(200)])
    flushed = threading.Event()

    def handle(job: ClaimedJob) -> None:
        if not flushed.is_set():
            flushed.set()
            mq.redis.script_flush()

    worker = Worker(queue="mail", handler=handle, url=redis_url, concurrency=concurrency)
    stats = await _serve_until(worker, lambda: mq.stats("mail").counts["done"] == 200)

    assert flushed.is_set()
    assert (stats.completed, stats.refused_reports) == (200, 0)
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 200}


async def test_stopping_lets_running_handlers_finish_within_the_grace_period(mq: EchoMQ, redis_url: str) -> None:
    ids = mq.enqueue_many("mail", [str(i) for i in range(10)])
    started = asyncio.Event()

    async def handle(job: ClaimedJob) -> None:
        started.set()
        await asyncio.sleep(0.3)

    worker = Worker(queue="mail", handler=handle, url=redis_url, concurrency=2, batch=2, grace_ms=5000)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await asyncio.wait_for(started.wait(), 10)
    stop.set()
    stats = await asyncio.wait_for(serving, 10)

    assert (stats.completed, stats.released) == (2, 0)
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 2, "pending": 8}


def _sigterm_when_active(mq: EchoMQ, code: str, tmp_path: Path, *, active: int, settle: float) -> tuple[int, str]:
    """Runs ``code`` in a worker process, SIGTERMs it once ``active`` jobs of "mail" are held; its status and stderr."""
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    worker = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while mq.stats("mail").counts["active"] < active:
            assert time.monotonic() < deadline and worker.poll() is None, worker.stderr.read() if worker.stderr else ""
            time.sleep(0.05)
        time.sleep(settle)
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=15)
    finally:
        if worker.poll() is None:
            worker.kill()
    return worker.returncode, err


HANDLERS = '''
import time

def sleepy(job):
    time.sleep(30 if job.payload == b"slow" else 0.05)
'''


def test_sigterm_hands_back_the_jobs_a_worker_process_holds(mq: EchoMQ, redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "sigterm_handlers.py").write_text(HANDLERS)
    ids = mq.enqueue_many("mail", ["slow"] * 4 + ["fast"] * 2 + ["slow"] * 6)
    code = textwrap.dedent(f"""
        import logging
        from queues.worker import Worker
        logging.basicConfig(level=logging.INFO)
        Worker(queue="mail", handler="sigterm_handlers:sleepy", url={redis_url!r}, concurrency=4,
               batch=4, grace_ms=300).run()
    """)
    returncode, err = _sigterm_when_active(mq, code, tmp_path, active=4, settle=0.3)
    assert returncode == 0, err
    assert "SIGTERM" in err
    states = _assert_each_job_in_exactly_one_state(mq, "mail", ids)
    assert states["active"] == 0
    assert states["pending"] + states["done"] == 12
    released = [e for e in mq.events("mail", count=1000) if e.move == "release"]
    assert len(released) == 4 and "released=4" in err
    assert all(mq.job("mail", e.job_id).payload == b"slow" for e in released)


MODULE = '''
def handle(job):
    return None

class Jobs:
    @staticmethod
    def send(job):
        return None

NOT_CALLABLE = 42
'''


@pytest.fixture
def handler_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "emq_test_handlers.py").write_text(MODULE)
    (tmp_path / "emq_broken_handlers.py").write_text("import no_such_dependency_xyz\n")
    (tmp_path / "emq_raising_handlers.py").write_text("raise RuntimeError('settings missing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "emq_test_handlers"


def test_load_handler_finds_a_function_and_a_dotted_attribute(handler_module: str) -> None:
    assert load_handler(f"{handler_module}:handle").__name__ == "handle"
    assert load_handler(f"{handler_module}:Jobs.send").__name__ == "send"


@pytest.mark.parametrize(("spec", "message"), [
    ("emq_test_handlers", "must be written module:callable"),
    ("emq_test_handlers:", "must be written module:callable"),
    (":handle", "must be written module:callable"),
    ("a:b:c", "must be written module:callable"),
    ("emq_no_such_module:handle", "no module named 'emq_no_such_module'"),
    ("emq_test_handlers:missing", "'emq_test_handlers' has no attribute 'missing'"),
    ("emq_test_handlers:Jobs.missing", "'emq_test_handlers:Jobs' has no attribute 'missing'"),
    ("emq_test_handlers:NOT_CALLABLE", "is not callable (it is a int)"),
    ("emq_broken_handlers:handle", "importing 'emq_broken_handlers' failed: No module named 'no_such_dependency_xyz'"),
    ("emq_raising_handlers:handle", "importing 'emq_raising_handlers' failed: RuntimeError: settings missing"),
])
def test_load_handler_says_clearly_what_is_wrong(handler_module: str, spec: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_handler(spec)
    assert message in str(caught.value)


def test_a_worker_refuses_bad_settings(redis_url: str) -> None:
    with pytest.raises(InvalidInput, match="concurrency must be between 1 and 10000"):
        Worker(queue="mail", handler=lambda job: None, concurrency=0, url=redis_url)
    with pytest.raises(InvalidInput, match="prefetch must be between 0 and 10000"):
        Worker(queue="mail", handler=lambda job: None, prefetch=-1, url=redis_url)
    with pytest.raises(InvalidInput, match="queue name"):
        Worker(queue="a{b}", handler=lambda job: None, url=redis_url)
    with pytest.raises(InvalidInput, match="handler must be callable"):
        Worker(queue="mail", handler=42, url=redis_url)  # type: ignore[arg-type]


async def test_an_idle_worker_picks_up_a_delayed_job_when_it_falls_due(mq: EchoMQ, redis_url: str) -> None:
    job_id = mq.enqueue("mail", "later", delay_ms=400)
    done_at: list[int] = []
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")

    def handle(job: ClaimedJob) -> None:
        done_at.append(int(time.time() * 1000))

    due_ms = mq.job("mail", job_id).scores["pending"]  # the server's clock is this machine's
    worker = Worker(queue="mail", handler=handle, client=client, poll_ms=2000)
    await _serve_until(worker, lambda: mq.stats("mail").counts["done"] == 1)
    await client.close()

    assert mq.job("mail", job_id).state == "done"
    # Not before it is due, and well before the 2 s poll: the worker slept until the due time EMPTY named.
    assert due_ms - 2 <= done_at[0] < due_ms + 1100


async def test_prefetch_holds_at_most_concurrency_plus_prefetch_leases_and_runs_at_most_concurrency_handlers(
        mq: EchoMQ, redis_url: str) -> None:
    ids = mq.enqueue_many("mail", [str(i) for i in range(30)])
    running: list[int] = [0]
    most_running = 0
    leases: list[int] = []

    async def handle(job: ClaimedJob) -> None:
        nonlocal most_running
        running[0] += 1
        most_running = max(most_running, running[0])
        await asyncio.sleep(0.03)
        running[0] -= 1

    async def watch_leases() -> None:
        while True:
            leases.append(mq.stats("mail").counts["active"])
            await asyncio.sleep(0.005)

    watching = asyncio.create_task(watch_leases())
    worker = Worker(queue="mail", handler=handle, url=redis_url, concurrency=2, prefetch=3)
    stats = await _serve_until(worker, lambda: mq.stats("mail").counts["done"] == 30)
    watching.cancel()

    assert most_running == 2
    assert max(leases) == 5
    assert (stats.claimed, stats.completed, stats.lost, stats.released) == (30, 30, 0, 0)
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 30}


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_prefetched_job_waiting_for_a_handler_keeps_its_lease_through_the_heartbeat(
        mq: EchoMQ, redis_url: str, kind: str) -> None:
    ids = mq.enqueue_many("reports", ["first", "second"])

    def slow(job: ClaimedJob) -> None:
        time.sleep(1.0)

    async def slow_async(job: ClaimedJob) -> None:
        await asyncio.sleep(1.0)

    worker = Worker(queue="reports", handler=slow if kind == "sync" else slow_async, url=redis_url,
                    lease_ms=300, prefetch=1)
    stats = await _serve_until(worker, lambda: mq.stats("reports").counts["done"] == 2)

    # The second job waited a second, three leases long, and its own worker's sweep never took it back.
    assert [mq.job("reports", i).attempts for i in ids] == ["1", "1"]
    assert [e.move for e in reversed(mq.events("reports")) if e.move != "extend"] == [
        "enqueue", "enqueue", "claim", "claim", "complete", "complete"]
    assert (stats.claimed, stats.completed, stats.lost) == (2, 2, 0)


async def test_stopping_hands_back_prefetched_jobs_at_once_without_starting_them(mq: EchoMQ, redis_url: str) -> None:
    ids = mq.enqueue_many("mail", ["a", "b", "c"])
    started: list[str] = []
    first, finish = asyncio.Event(), asyncio.Event()

    async def handle(job: ClaimedJob) -> None:
        started.append(job.id)
        first.set()
        await finish.wait()

    worker = Worker(queue="mail", handler=handle, url=redis_url, prefetch=2, grace_ms=10_000)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await asyncio.wait_for(first.wait(), 10)
    while mq.stats("mail").counts["active"] < 3:
        await asyncio.sleep(0.01)
    stop.set()
    deadline = time.monotonic() + 10
    while mq.stats("mail").counts["pending"] < 2:
        assert time.monotonic() < deadline, "the prefetched jobs were not handed back"
        await asyncio.sleep(0.01)
    handler_still_running = not serving.done() and len(started) == 1
    finish.set()
    stats = await asyncio.wait_for(serving, 10)

    assert handler_still_running
    assert len(started) == 1 and mq.job("mail", started[0]).state == "done"
    assert (stats.claimed, stats.completed, stats.released) == (3, 1, 2)
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 1, "pending": 2}
    assert [mq.job("mail", i).attempts for i in ids] == ["1", "1", "1"]


def test_handler_threads_return_outcomes_and_drop_jobs_not_started_at_shutdown() -> None:
    release = threading.Event()

    def handle(job: ClaimedJob) -> str:
        if job.payload == b"boom":
            raise ValueError("boom")
        if job.payload == b"block":
            release.wait(10)
        return job.id

    def job(job_id: str, payload: bytes) -> ClaimedJob:
        return ClaimedJob("mail", job_id, 1, "claim", payload, 0)

    async def scenario() -> tuple[str, BaseException | None, bool, bool, bool]:
        threads = HandlerThreads(handle, 1, "t", asyncio.get_running_loop())
        done = await threads.submit(job("ok", b""))
        failed = threads.submit(job("bad", b"boom"))
        await asyncio.wait([failed])
        blocked = threads.submit(job("slow", b"block"))
        queued = threads.submit(job("never", b""))
        while not threads.busy():
            await asyncio.sleep(0.01)
        threads.shutdown()
        release.set()
        await asyncio.wait_for(blocked, 10)
        while threads.busy():
            await asyncio.sleep(0.01)
        return done, failed.exception(), queued.cancelled(), blocked.result() == "slow", threads.busy()

    done, error, dropped, finished, busy = asyncio.run(scenario())
    assert (done, str(error), dropped, finished, busy) == ("ok", "boom", True, True, False)


# One handler and no prefetch: the job's whole life in one task (async) or on one thread (sync) -----------


async def test_one_sync_handler_runs_every_job_on_one_thread_of_its_own(mq: EchoMQ, redis_url: str) -> None:
    mq.enqueue_many("mail", [str(i) for i in range(50)])
    threads: set[str] = set()
    worker = Worker(queue="mail", handler=lambda job: threads.add(threading.current_thread().name), url=redis_url)
    stats = await _serve_until(worker, lambda: mq.stats("mail").counts["done"] == 50)

    assert threads == {"emq-mail"}
    assert (stats.claimed, stats.completed) == (50, 50)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_after_losing_a_lease_the_one_handler_goes_on_with_the_next_job(
        mq: EchoMQ, redis_url: str, kind: str) -> None:
    first = mq.enqueue("reports", "slow")
    started = threading.Event()
    finish = threading.Event()

    def handle(job: ClaimedJob) -> None:
        if job.payload == b"slow":
            started.set()
            finish.wait(10)

    async def handle_async(job: ClaimedJob) -> None:
        if job.payload == b"slow":
            started.set()
            await asyncio.sleep(30)

    worker = Worker(queue="reports", handler=handle if kind == "sync" else handle_async, url=redis_url,
                    lease_ms=300, poll_ms=20)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await asyncio.to_thread(started.wait, 10)
    mq.cancel("reports", first, expect_state="active")
    while worker.stats.lost == 0:
        assert not serving.done()
        await asyncio.sleep(0.02)
    finish.set()
    second = mq.enqueue("reports", "fast")
    deadline = time.monotonic() + 10
    while mq.job("reports", second).state != "done":
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.02)
    stop.set()
    stats = await asyncio.wait_for(serving, 10)

    assert (mq.job("reports", first).state, mq.job("reports", first).text("last_error")) == ("failed", "cancelled")
    assert (stats.claimed, stats.lost, stats.completed, stats.failed, stats.refused_reports) == (2, 1, 1, 0, 0)
    assert [e.move for e in reversed(mq.events("reports"))] == [
        "enqueue", "claim", "cancel", "enqueue", "claim", "complete"]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_stopping_lets_the_one_running_handler_finish_within_the_grace_period(
        mq: EchoMQ, redis_url: str, kind: str) -> None:
    ids = mq.enqueue_many("mail", [str(i) for i in range(5)])
    started = threading.Event()

    def handle(job: ClaimedJob) -> None:
        started.set()
        time.sleep(0.3)

    async def handle_async(job: ClaimedJob) -> None:
        started.set()
        await asyncio.sleep(0.3)

    worker = Worker(queue="mail", handler=handle if kind == "sync" else handle_async, url=redis_url,
                    grace_ms=5000)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await asyncio.to_thread(started.wait, 10)
    stop.set()
    stats = await asyncio.wait_for(serving, 10)

    # A lone async handler claims its next job as it starts one: that job goes back unstarted.
    assert (stats.claimed, stats.completed, stats.released) == ((1, 1, 0) if kind == "sync" else (2, 1, 1))
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 1, "pending": 4}


ONE_HANDLER = '''
import asyncio
import time

def sleepy(job):
    time.sleep(30)

async def sleepy_async(job):
    await asyncio.sleep(30)
'''


@pytest.mark.parametrize("handler", ["sleepy", "sleepy_async"])
def test_sigterm_hands_back_the_job_of_the_one_handler(mq: EchoMQ, redis_url: str, tmp_path: Path,
                                                       handler: str) -> None:
    (tmp_path / "one_handler.py").write_text(ONE_HANDLER)
    ids = mq.enqueue_many("mail", ["a", "b"])
    code = textwrap.dedent(f"""
        import logging
        from queues.worker import Worker
        logging.basicConfig(level=logging.INFO)
        Worker(queue="mail", handler="one_handler:{handler}", url={redis_url!r}, grace_ms=300).run()
    """)
    # The handler sleeps 30 s; the process must exit within the 15 s the helper waits, its job handed back
    # (and, for an async handler, the job claimed ahead of it: two leases).
    held = 1 if handler == "sleepy" else 2
    returncode, err = _sigterm_when_active(mq, code, tmp_path, active=held, settle=0)
    assert returncode == 0, err
    assert f"released={held}" in err
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"pending": 2}
    assert [e.move for e in mq.events("mail") if e.move in ("claim", "release")] == ["release"] * held + ["claim"] * held


async def test_a_worker_claims_past_any_number_of_unclaimable_jobs_and_then_idles_as_on_an_empty_queue(
        mq: EchoMQ, redis_url: str) -> None:
    keys = QueueKeys("mail")
    pipe = mq.redis.pipeline()
    for n in range(300):
        pipe.hset(keys.job(f"bad{n}"), mapping={"state": "done ", "attempts": "x", "payload": "x"})
        pipe.zadd(keys.pending, {f"bad{n}": n})
    pipe.execute()
    mq.enqueue_many("mail", [f"good {n}" for n in range(10)])

    worker = Worker(queue="mail", handler=lambda job: None, url=redis_url, poll_ms=200)
    stats = await _serve_until(worker, lambda: mq.stats("mail").counts["done"] == 10)
    assert stats.completed == 10 and mq.stats("mail").counts["failed"] == 300

    # The queue is empty now: a second worker on it claims once per poll, not in a loop.
    mq.redis.config_resetstat()
    idle = Worker(queue="mail", handler=lambda job: None, url=redis_url, poll_ms=200, lease_ms=60_000)
    started = time.monotonic()
    await _serve_until(idle, lambda: time.monotonic() - started > 1.0)
    calls = int(mq.redis.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))
    assert calls <= 12  # about 5 claims a second, not a spin


# A claim answered after SIGTERM: the fault-injection case, made to happen by construction ----------------------

SIGNALLED = '''
import asyncio
import logging
import os
import signal
import sys
import time

from queues.client import AsyncEchoMQ, BlockingRunner
from queues.moves import ClaimedJob
from queues.worker import Worker

logging.basicConfig(level=logging.INFO)
fired = []


def claimed_trigger(results):
    """Whether a claim in these results took the job whose payload is "trigger"."""
    for result in results:
        # A claim alone answers a list of jobs; finish_claim carries them in its claim half.
        jobs = getattr(result, "claimed", result)
        jobs = jobs if isinstance(jobs, list) else []
        if any(isinstance(job, ClaimedJob) and job.payload == b"trigger" for job in jobs):
            return True
    return False


def _say_started(what):
    # One write, so that a log line of the loop's thread cannot land inside it.
    sys.stderr.write(f"started {what}\\n")
    sys.stderr.flush()


def handle(job):
    _say_started(job.payload.decode())
    if job.payload == b"slow":
        time.sleep(1.0)


async def handle_async(job):
    _say_started(job.payload.decode())
    if job.payload == b"slow":
        await asyncio.sleep(1.0)


class SignalledRunner(BlockingRunner):
    """The claim's reply arrives, then SIGTERM, then the worker gets the reply."""

    def run_many(self, calls):
        results = super().run_many(calls)
        if not fired and claimed_trigger(results):
            fired.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
        return results


class SignalledClient(AsyncEchoMQ):
    async def run_many(self, calls):
        results = await super().run_many(calls)
        if not fired and claimed_trigger(results):
            fired.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(0.2)
        return results

    def blocking_runner(self):
        return SignalledRunner(self._wire_options)
'''


@pytest.mark.parametrize(("kind", "concurrency", "prefetch"), [
    ("sync", 1, 0), ("async", 1, 0), ("sync", 2, 1), ("async", 2, 1)])
def test_a_claim_answered_after_sigterm_starts_no_handler_and_its_jobs_are_handed_back_at_once(
        mq: EchoMQ, redis_url: str, tmp_path: Path, kind: str, concurrency: int, prefetch: int) -> None:
    (tmp_path / "signalled.py").write_text(SIGNALLED)
    # Claimed in this order: by due time, then by id.
    ids = [mq.enqueue("mail", payload, job_id=f"{n}-{payload}") for n, payload in enumerate(["slow", "trigger", "c", "d"])]
    handler = "handle" if kind == "sync" else "handle_async"
    code = textwrap.dedent(f"""
        from signalled import SignalledClient, {handler}
        from queues.worker import Worker
        client = SignalledClient.from_url({redis_url!r}, actor="w1")
        Worker(queue="mail", handler={handler}, client=client, concurrency={concurrency}, prefetch={prefetch},
               batch=1, grace_ms=30_000).run()
    """)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    worker = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=25)

    assert worker.returncode == 0, worker.stderr
    started = [line.split()[1] for line in worker.stderr.splitlines() if line.startswith("started ")]
    assert started == ["slow"], worker.stderr
    slow, trigger = ids[0], ids[1]
    assert mq.job("mail", slow).state == "done"
    moves = [(e.move, e.job_id) for e in reversed(mq.events("mail", count=100))]
    handed_back = {job_id for move, job_id in moves if move == "release"}
    claimed = {job_id for move, job_id in moves if move == "claim"}
    assert trigger in handed_back and claimed - {slow} == handed_back
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 1, "pending": 3}
    assert {mq.job("mail", job_id).attempts for job_id in ids[1:]} <= {"0", "1"}
    if concurrency > 1:
        # Handed back while the slow handler still ran, not when the grace period ended.
        assert moves.index(("release", trigger)) < moves.index(("complete", slow))


# SIGTERM while a handler is held: the prefetched jobs go back at once, no handler starts -------------------------

HELD = '''
import asyncio
import os
import sys
import time

GO = os.environ["EMQ_TEST_GO"]


def _say_started(what):
    # One write, so that a log line of the loop's thread cannot land inside it.
    sys.stderr.write(f"started {what}\\n")
    sys.stderr.flush()
    # For the test: the worker has read the claim's reply (Redis shows the job active before it has).
    open(GO + ".started", "a").close()


def hold(job):
    _say_started(job.id)
    while not os.path.exists(GO):
        time.sleep(0.01)


async def hold_async(job):
    _say_started(job.id)
    while not os.path.exists(GO):
        await asyncio.sleep(0.01)
'''


def _wait_for_worker(worker: subprocess.Popen[str], mq: EchoMQ, predicate: Callable[[], object], what: str) -> None:
    """:func:`wait_until` for a worker process: on a timeout it is killed, and the failure tells the counts,
    the queue's last moves and the worker's stderr, so that it says what happened."""
    try:
        wait_until(predicate, 20, what)
    except AssertionError as timeout:
        counts = mq.stats("mail").counts
        moves = [(e.move, e.job_id) for e in mq.events("mail", count=100)]
        worker.kill()
        _, err = worker.communicate(timeout=20)
        raise AssertionError(f"{timeout}; counts {counts}; moves {moves}; the worker said:\n{err}") from None


@pytest.mark.parametrize("handler", ["hold", "hold_async"])
def test_after_sigterm_the_prefetched_jobs_are_released_while_the_held_handler_runs_and_none_starts(
        mq: EchoMQ, redis_url: str, tmp_path: Path, handler: str) -> None:
    (tmp_path / "held_handler.py").write_text(HELD)
    go, started = tmp_path / "go", tmp_path / "go.started"
    ids = [mq.enqueue("mail", "x", job_id=f"{n}-job") for n in range(5)]
    code = textwrap.dedent(f"""
        import logging
        from queues.worker import Worker
        logging.basicConfig(level=logging.INFO)
        Worker(queue="mail", handler="held_handler:{handler}", url={redis_url!r}, concurrency=1, prefetch=2,
               grace_ms=60_000).run()
    """)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "EMQ_TEST_GO": str(go)}
    worker = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        # The handler holds the first job; the worker holds two more, prefetched. A SIGTERM before the worker
        # has read the claim's reply would hand back all three (a claim answered after SIGTERM starts nothing).
        _wait_for_worker(worker, mq, lambda: started.exists() and mq.stats("mail").counts["active"] == 3,
                         "one job running and two prefetched")
        worker.send_signal(signal.SIGTERM)
        # Released at once: the handler still holds its job (the grace period is a minute).
        _wait_for_worker(worker, mq, lambda: mq.stats("mail").counts == {"pending": 4, "active": 1, "done": 0,
                                                                         "failed": 0},
                         "the prefetched jobs handed back while the handler runs")
        assert worker.poll() is None
        go.touch()
        _, err = worker.communicate(timeout=20)
    finally:
        if worker.poll() is None:
            worker.kill()

    assert worker.returncode == 0, err
    started = [line.split()[1] for line in err.splitlines() if line.startswith("started ")]
    assert started == [ids[0]], err
    assert mq.job("mail", ids[0]).state == "done"
    released = [e.job_id for e in mq.events("mail", count=100) if e.move == "release"]
    assert sorted(released) == ids[1:3]
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 1, "pending": 4}
    assert [mq.job("mail", job_id).attempts for job_id in ids[1:]] == ["1", "1", "0", "0"]


def test_after_sigterm_the_job_a_lone_async_handler_claimed_ahead_goes_back_at_once_unstarted(
        mq: EchoMQ, redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "held_handler.py").write_text(HELD)
    go, started = tmp_path / "go", tmp_path / "go.started"
    ids = [mq.enqueue("mail", "x", job_id=f"{n}-job") for n in range(5)]
    # The default engine for one async handler: no prefetch asked for.
    code = textwrap.dedent(f"""
        import logging
        from queues.worker import Worker
        logging.basicConfig(level=logging.INFO)
        Worker(queue="mail", handler="held_handler:hold_async", url={redis_url!r}, grace_ms=60_000).run()
    """)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "EMQ_TEST_GO": str(go)}
    worker = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        # The handler holds the first job; the claim sent as it started holds the next one (which goes back
        # alike if its reply comes after the SIGTERM).
        _wait_for_worker(worker, mq, lambda: started.exists() and mq.stats("mail").counts["active"] == 2,
                         "one job running and one claimed ahead")
        worker.send_signal(signal.SIGTERM)
        # Released at once: the handler still holds its job (the grace period is a minute).
        _wait_for_worker(worker, mq, lambda: mq.stats("mail").counts == {"pending": 4, "active": 1, "done": 0,
                                                                         "failed": 0},
                         "the job claimed ahead handed back while the handler runs")
        assert worker.poll() is None
        go.touch()
        _, err = worker.communicate(timeout=20)
    finally:
        if worker.poll() is None:
            worker.kill()

    assert worker.returncode == 0, err
    started = [line.split()[1] for line in err.splitlines() if line.startswith("started ")]
    assert started == [ids[0]], err
    assert mq.job("mail", ids[0]).state == "done"
    assert [e.job_id for e in mq.events("mail", count=100) if e.move == "release"] == [ids[1]]
    assert "released=1" in err and "claimed=2" in err
    assert _assert_each_job_in_exactly_one_state(mq, "mail", ids) == {"done": 1, "pending": 4}
    # A release keeps the attempt its claim counted (PROTOCOL.md, "release").
    assert [mq.job("mail", job_id).attempts for job_id in ids[1:]] == ["1", "0", "0", "0"]
