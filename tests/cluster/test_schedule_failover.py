"""Two schedulers tick the same schedules at once on a 3x2 cluster while the queue's master is SIGKILLed:
every tick is enqueued exactly once, a paused schedule enqueues nothing."""

from __future__ import annotations

import threading
import time

from queues import EchoMQ
from queues.cluster import queue_slot
from queues.connection import connect
from queues.errors import EmqError
from queues.integrity import check_queue
from queues.scheduler import Ticker
from queues.schedules import Definition, add_schedule, get_schedule, pause_schedule
from tests.support.cluster_ops import eventually, owner_of, queue_per_master, replica_of, role, wait_cluster_ok
from tests.support.redis_servers import RedisClusterNodes
from tests.support.waiting import wait_until

TICKS = 120
SECOND = 1000


def test_two_schedulers_through_a_failover_enqueue_each_of_120_ticks_exactly_once(ha_cluster: RedisClusterNodes) -> None:
    seed = ha_cluster.servers[0]
    queue = next(q for q in queue_per_master(ha_cluster, "nightly").values()
                 if owner_of(ha_cluster, queue_slot(q)) is not seed)
    victim = owner_of(ha_cluster, queue_slot(queue))
    heir = replica_of(ha_cluster, victim)
    # Moves are followed by WAIT 1 (50 ms): a tick a replica did not acknowledge is sent again next round.
    setup = EchoMQ(connect(seed.url), actor="setup", wait_replicas=1, wait_timeout_ms=2000)
    since = setup.server_time_ms(queue) - (TICKS + 60) * SECOND
    add_schedule(setup, queue, "every-second", Definition.of(every_ms=SECOND, payload='{"job": "tick"}'), now_ms=since)
    add_schedule(setup, queue, "held", Definition.of(every_ms=SECOND, payload="x"), now_ms=since)
    pause_schedule(setup, queue, "held")
    first = get_schedule(setup, queue, "every-second").next_ms
    assert first is not None
    steps = [first + i * SECOND for i in range(TICKS)]
    # Both schedulers follow one clock: neither starts a step before the other has finished the one before.
    step_done = threading.Barrier(2, timeout=90)
    reached = [0, 0]
    failed_rounds = [0, 0]
    failures: list[BaseException] = []

    def scheduler(index: int) -> None:
        mq = EchoMQ(connect(seed.url), actor=f"scheduler-{index}", wait_replicas=1, wait_timeout_ms=50)
        ticker = Ticker(mq)

        def ticked(now: int) -> bool:
            """The clock stands still until the step's tick is enqueued (by either scheduler): rounds repeat."""
            try:
                last = get_schedule(mq, queue, "every-second").last_tick_ms
            except EmqError:
                return False
            return last is not None and last >= now

        try:
            for step, now in enumerate(steps):
                while True:
                    try:
                        report = ticker.run_round(now_ms=now)
                    except EmqError:
                        report = None
                    if report is None or report.errors:
                        failed_rounds[index] += 1
                    if report is not None and report.clean and ticked(now):
                        break
                    time.sleep(0.02)
                reached[index] = step + 1
                step_done.wait()
        except BaseException as error:
            failures.append(error)
            step_done.abort()

    threads = [threading.Thread(target=scheduler, args=(i,), daemon=True) for i in range(2)]
    for thread in threads:
        thread.start()
    wait_until(lambda: min(reached) >= TICKS // 3, 60, "a third of the ticks")
    victim.kill()
    wait_until(lambda: role(heir) == "master", 20, "the replica to take over")
    wait_cluster_ok(ha_cluster)
    for thread in threads:
        thread.join(120)
    assert not failures and not any(t.is_alive() for t in threads)

    mq = EchoMQ(connect(seed.url), actor="check")
    stats = eventually(lambda: mq.stats(queue))
    assert stats.counts["pending"] == TICKS, "one job per tick, none twice"
    states = {t: mq.job(queue, f"every-second:{t}").state for t in steps}
    assert set(states.values()) == {"pending"}, "every tick's job exists"
    schedule = get_schedule(mq, queue, "every-second")
    assert (schedule.last_tick_ms, schedule.next_ms, schedule.ticks) == (steps[-1], steps[-1] + SECOND, TICKS)
    held = get_schedule(mq, queue, "held")
    assert held.ticks == 0 and held.recent == []
    assert check_queue(mq, queue).ok
    assert reached == [TICKS, TICKS]
    assert sum(failed_rounds) > 0, "the failover happened while the schedulers ran"
