"""What a search may cost Redis: each step its budget (a long payload searched a slice at a time), each search
its Redis time in all, and a pause after each step in proportion to its cost."""

from __future__ import annotations

import time
from typing import Any

import pytest

from queues import EchoMQ, InvalidInput, moves
from queues.search import MAX_NEEDLE, Limits, Pacer, Query, Search, search_call
from tests.support.why import scripts_usec

SLICE = 65536


def test_a_text_in_a_long_payload_is_found_wherever_the_steps_cut_the_payload(mq: EchoMQ) -> None:
    needle = b"NEEDLE-" + b"n" * 40
    size = moves.MAX_PAYLOAD_BYTES
    mq.enqueue("q", b"x" * (SLICE - 10) + needle + b"x" * (size - SLICE - len(needle) + 10), job_id="straddles")
    mq.enqueue("q", b"x" * (size - len(needle)) + needle, job_id="at-the-end")
    mq.enqueue("q", b"x" * (3 * SLICE) + needle + b"x" * SLICE, job_id="inside")
    mq.enqueue("q", b"x" * size, job_id="without")
    # The smallest budget the script takes: every step runs out inside a payload after its first slice.
    engine = Search(Query("pending", payload=needle.decode()), ["q"], Limits(step_budget_us=100, duty=1.0))

    steps = list(engine.steps(mq))

    assert sorted(m.id for step in steps for m in step.matches) == ["at-the-end", "inside", "straddles"]
    assert engine.scanned == 4 and len(steps) > 4


def test_a_step_that_runs_out_inside_a_payload_says_where_the_next_one_resumes(mq: EchoMQ) -> None:
    mq.enqueue("q", b"x" * moves.MAX_PAYLOAD_BYTES, job_id="long")
    query = Query("pending", payload="a" * 200 + "b")

    first = mq.run(search_call("q", query, budget_us=100))
    second = mq.run(search_call("q", query, budget_us=100, cursor=first.cursor, resume=first.resume))

    assert first.looked_at == 0 and first.resume.endswith(":long") and int(first.resume.split(":")[0]) > 1
    assert second.resume == "" or int(second.resume.split(":")[0]) > int(first.resume.split(":")[0])
    assert first.redis_us > 0


def test_a_search_stops_when_its_redis_time_is_spent(mq: EchoMQ) -> None:
    mq.enqueue_many("q", [b"x" * 20_000 for _ in range(300)])
    engine = Search(Query("pending", payload="absent"), ["q"],
                    Limits(redis_seconds=0.000_5, step_entries=10, duty=1.0))

    list(engine.steps(mq))

    assert engine.stopped == "stopped after 0.0005 s of Redis time"
    assert engine.scanned < 300


def test_after_a_step_the_pacer_holds_the_next_in_proportion_to_its_cost() -> None:
    pacer = Pacer(0.25)

    assert pacer.begin() == 0.0
    assert pacer.begin() == Pacer.BUSY_POLL_S  # another step is in Redis: never two at once
    pacer.end(1.0)
    wait = pacer.begin()

    # A step of 1 s at a duty of 25 % is followed by 3 s without one.
    assert 2.0 < wait <= 3.0


class RecordingPacer(Pacer):
    """A pacer that notes when each step was let go and when it ended, with its cost."""

    def __init__(self, duty: float) -> None:
        super().__init__(duty)
        self.turns: list[tuple[str, float, float]] = []

    def begin(self) -> float:
        wait = super().begin()
        if wait == 0.0:
            self.turns.append(("go", time.monotonic(), 0.0))
        return wait

    def end(self, redis_s: float) -> None:
        self.turns.append(("end", time.monotonic(), redis_s))
        super().end(redis_s)


def test_searches_sharing_a_pacer_wait_for_each_other(mq: EchoMQ) -> None:
    mq.enqueue_many("q", [f"job {n}" for n in range(50)])
    shared = RecordingPacer(0.05)
    one, two = (Search(Query("pending", payload="job"), ["q"], Limits(step_entries=5), pacer=shared)
                for _ in range(2))

    for _ in zip(one.steps(mq), two.steps(mq), strict=True):
        pass

    # Steps of either search take turns, never two at once, and each step's cost is followed by 19 times it
    # without a step of either search (however slow the machine, a sleep never ends early).
    kinds = [kind for kind, _, _ in shared.turns]
    assert kinds == ["go", "end"] * (len(kinds) // 2) and len(kinds) >= 8
    for (_, ended, cost), (_, went, _) in zip(shared.turns[1::2], shared.turns[2::2]):
        assert went - ended >= 19 * cost * 0.99


@pytest.mark.parametrize("query", [
    {"payload": "a" * (MAX_NEEDLE + 1)},
    {"error": "e" * (MAX_NEEDLE + 1)},
    {"worker": "w" * (MAX_NEEDLE + 1)},
    {"field": "name=" + "v" * (MAX_NEEDLE + 1)},
])
def test_a_text_longer_than_the_needle_cap_is_refused_in_words(query: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput, match=f"at most {MAX_NEEDLE} bytes"):
        Query.parse(state="failed", **query)


def test_the_script_refuses_a_needle_longer_than_its_cap_whoever_sends_it(mq: EchoMQ) -> None:
    mq.enqueue("q", "x")
    query = Query("pending", payload="ok")
    call = search_call("q", query)
    call.args[call.args.index(b"ok")] = b"a" * (MAX_NEEDLE + 1)

    with pytest.raises(InvalidInput, match="at most 256 bytes"):
        mq.run(call)


def test_a_worker_field_of_megabytes_is_not_searched_for_the_worker_text(mq: EchoMQ) -> None:
    # Another writer's worker fields of 4 MB and a text that almost matches everywhere in them: each find took
    # 55 ms, and the clock was looked at every 32 entries: 1.8 s of Redis for one step of a 100 ms budget.
    # Such a field is not read at all now (its length first), so the whole search takes milliseconds.
    for n in range(32):
        mq.enqueue("q", "x", job_id=f"j{n}")
        mq.redis.hset(f"emq:{{q}}:job:j{n}", "worker", "a" * 4_000_000)
    mq.enqueue("q", "x", job_id="short")
    mq.redis.hset("emq:{q}:job:short", "worker", "a" * 255 + "b")
    mq.redis.config_resetstat()

    engine = Search(Query("pending", worker="a" * 255 + "b"), ["q"], Limits(step_budget_us=100_000, duty=1.0))
    steps = list(engine.steps(mq))

    assert [m.id for step in steps for m in step.matches] == ["short"] and engine.scanned == 33
    usec = scripts_usec(mq)
    assert 0 < usec < 1_000_000
