"""The overview's moves chart (the follower's last five minutes) draws the deploy marks of its window, live."""

from __future__ import annotations

import asyncio
import time

import pytest

from dashboard.live import OverviewPage
from dashboard.presenters import spark_for
from queues import EchoMQ
from queues.deploys import DeployMark, deploy_mark
from queues.follower import Follower, Throughput

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_mark_is_drawn_where_its_moment_falls_in_the_window_and_one_outside_it_is_not() -> None:
    throughput = Throughput(bucket_s=5, buckets=60)
    now = 1_800_000_000_000  # a bucket's start: the window is the 60 buckets up to and with this one
    start = now - 59 * 5_000

    spark = spark_for(throughput, None, now, [DeployMark(start, "first"), DeployMark(now - 150_000, "v9"),
                                              DeployMark(start - 1, "before")], width=600, height=48)

    assert spark is not None
    assert [(x, title.split(" at ")[0]) for x, title in spark.marks] == [(0.0, "deploy first"), (290.0, "deploy v9")]


async def test_the_live_overview_draws_a_mark_of_its_window_and_not_an_older_one(
        console_mq: EchoMQ, redis_url: str, stop_followers: None) -> None:
    console_mq.enqueue("mail", "{}")
    now = console_mq.server_time_ms("mail")
    console_mq.run(deploy_mark("v9", at_ms=now - 30_000))
    console_mq.run(deploy_mark("old", at_ms=now - 600_000))
    follower = Follower(redis_url, poll_interval_s=0.05, publish_interval_s=0.02, block_ms=50)
    follower.start()
    follower.subscribe(None)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not follower.now_ms:
            await asyncio.sleep(0.02)
        assert follower.now_ms, "the follower read the server's clock"
        [summary, _] = await OverviewPage().full(follower)
    finally:
        await follower.stop()

    assert summary.count('class="deploy"') == 1
    assert "<title>deploy v9 at" in summary and "deploy old" not in summary
