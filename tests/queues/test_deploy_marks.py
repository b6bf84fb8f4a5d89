"""Deploy marks: one per label and minute, kept 90 days, made by emq deploy mark and by a worker whose
release is new to its queue."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from queues import EchoMQ, moves
from queues.cli import main
from queues.deploys import deploy_mark, deploy_marks
from queues.moves import MAX_INT
from queues.worker import Worker
from tests.support.why import scripts_usec

DAY_MS = 86_400_000


def marks(mq: EchoMQ) -> list[tuple[int, str]]:
    return [(m.at_ms, m.label) for m in mq.run(deploy_marks(since_ms=0, until_ms=MAX_INT - 1)).marks]


def test_a_second_mark_of_a_label_in_the_same_minute_is_the_same_mark(mq: EchoMQ) -> None:
    minute = 1_796_000_000_000 // 60_000 * 60_000
    first = mq.run(deploy_mark("v1.5.0", at_ms=minute + 1_000))
    again = mq.run(deploy_mark("v1.5.0", at_ms=minute + 59_000))
    other = mq.run(deploy_mark("v1.5.1", at_ms=minute + 2_000))
    later = mq.run(deploy_mark("v1.5.0", at_ms=minute + 60_000))

    assert (first.new, again.new, other.new, later.new) == (True, False, True, True)
    assert again.at_ms == minute + 1_000
    assert marks(mq) == [(minute + 1_000, "v1.5.0"), (minute + 2_000, "v1.5.1"), (minute + 60_000, "v1.5.0")]


def test_marks_older_than_90_days_are_dropped(mq: EchoMQ) -> None:
    now = mq.server_time_ms("q")
    mq.run(deploy_mark("ancient", at_ms=now - 91 * DAY_MS))
    mq.run(deploy_mark("recent", at_ms=now - 89 * DAY_MS))

    assert [label for _, label in marks(mq)] == ["recent"]


def test_emq_deploy_mark_and_list(redis_url: str, mq: EchoMQ, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", redis_url, "deploy", "mark", "2026.12.1"]) == 0
    assert main(["--url", redis_url, "deploy", "mark", "2026.12.1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert main(["--url", redis_url, "deploy", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()

    assert out[0].startswith("deploy 2026.12.1 marked at 20") and "one mark" in out[1]
    assert len(listed) == 1 and listed[0].endswith("\t2026.12.1")


def test_a_label_with_control_characters_is_refused(mq: EchoMQ) -> None:
    with pytest.raises(Exception, match="control characters"):
        mq.run(deploy_mark("v1\n2"))


async def test_a_worker_whose_release_is_new_to_its_queue_marks_the_deploy(redis_url: str, mq: EchoMQ) -> None:
    register: dict[str, Any] = dict(ttl_ms=60_000, host="h", pid=1, runtime="r", concurrency=1, started_ms=1, held=[])
    first = mq.run(moves.register_worker("q", "h:1", release="v7", **register))
    second = mq.run(moves.register_worker("q", "h:2", release="v7", **register))
    assert (first.new_release, second.new_release) == (True, False)

    worker = Worker(queue="q", handler=lambda job: None, url=redis_url, actor="box:1", release="v8", poll_ms=10)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    for _ in range(300):
        if [label for _, label in marks(mq)] == ["v8"]:
            break
        await asyncio.sleep(0.05)
    stop.set()
    await serving

    assert [label for _, label in marks(mq)] == ["v8"]


# Expired marks are also past the cap: each mark drops 100 of them for each rule.
@pytest.mark.parametrize(("old", "dropped_per_mark"), [(True, 200), (False, 100)], ids=["expired", "past-the-cap"])
def test_a_mark_drops_at_most_100_marks_of_a_set_another_writer_filled_per_rule(mq: EchoMQ, old: bool,
                                                                                dropped_per_mark: int) -> None:
    # 200,000 members: dropping them all in one call held Redis for a long moment.
    now = mq.server_time_ms("q")
    at = now - 91 * DAY_MS if old else now - DAY_MS
    for start in range(0, 200_000, 10_000):
        mq.redis.zadd("emq:deploys", {f"{n}\tforeign": at + n for n in range(start, start + 10_000)})
    mq.redis.config_resetstat()

    mq.run(deploy_mark("v2"))
    mq.run(deploy_mark("v3"))

    assert mq.redis.zcard("emq:deploys") == 200_000 + 2 - 2 * dropped_per_mark
    # The oldest went first, and the new marks stay.
    assert mq.redis.zrange("emq:deploys", 0, 0) == [f"{2 * dropped_per_mark}\tforeign".encode()]
    newest = mq.run(deploy_marks(since_ms=0, until_ms=MAX_INT - 1, limit=2, newest=True)).marks
    assert {m.label for m in newest} == {"v2", "v3"}
    # Redis's own time for both marks: far under a second at any load.
    assert 0 < scripts_usec(mq) < 1_000_000
