"""`emq stats` tells wait and run percentiles, rates and the time to drain."""

from __future__ import annotations

import json

import pytest

from queues import EchoMQ
from queues.cli import main
from tests.support.jobs import done_jobs
from tests.support.latency import early_in_a_minute, record_enqueues, record_latencies


def _stats(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["--url", url, "stats", "q", *extra])
    return code, capsys.readouterr().out


def test_stats_json_gives_wait_and_run_percentiles_of_the_last_hour(mq: EchoMQ, redis_url: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    done_jobs(mq, "q", 5)

    code, out = _stats(redis_url, capsys, "--json")
    found = json.loads(out)

    assert code == 0
    assert set(found["wait_ms"]) == set(found["run_ms"]) == {"p50", "p95", "p99"}
    assert all(isinstance(v, int) and v >= 0 for v in (*found["wait_ms"].values(), *found["run_ms"].values()))
    assert found["wait_measured"] == found["run_measured"] == 5
    assert found["time_to_drain_s"] == 0.0  # nothing is due


def test_a_queue_nothing_was_measured_in_says_so_and_gives_no_numbers(mq: EchoMQ, redis_url: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    mq.enqueue("q", "x")

    found = json.loads(_stats(redis_url, capsys, "--json")[1])
    text = _stats(redis_url, capsys)[1]

    assert found["wait_ms"] == {"p50": None, "p95": None, "p99": None} and found["wait_measured"] == 0
    assert found["time_to_drain_s"] is None  # one job due, and nothing claimed in the last ten minutes
    assert "wait (last hour): not measured" in text and "not draining" in text


def test_a_draining_backlog_prints_its_time_to_drain(mq: EchoMQ, redis_url: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    now = early_in_a_minute(mq, "q")
    for minute in range(1, 11):  # 1 arrival/s and 2 claims/s over the ten whole minutes before this one
        record_enqueues(mq, "q", now - minute * 60_000, 60)
        record_latencies(mq, "q", now - minute * 60_000, "W", [1000] * 120)
    mq.enqueue_many("q", ["x"] * 240)

    found = json.loads(_stats(redis_url, capsys, "--json")[1])
    text = _stats(redis_url, capsys)[1]

    assert (found["arrival_per_s"], found["service_per_s"], found["time_to_drain_s"]) == (1.0, 2.0, 240.0)
    assert "~4 min at the last 10 min's rate" in text


def test_slo_set_list_and_delete_through_the_cli(mq: EchoMQ, redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    done_jobs(mq, "q", 3)

    assert main(["--url", redis_url, "slo", "set", "q", "--metric", "wait", "--under-ms", "30000", "--target", "95"]) == 0
    set_out = capsys.readouterr().out
    assert main(["--url", redis_url, "slo", "list", "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main(["--url", redis_url, "slo", "list"]) == 0
    text = capsys.readouterr().out
    assert main(["--url", redis_url, "slo", "delete", "q"]) == 0
    capsys.readouterr()
    assert main(["--url", redis_url, "slo", "delete", "q"]) != 0

    assert "95 % of jobs wait under 30,000 ms over 30 d" in set_out
    assert [(e["queue"], e["metric"], e["under_ms"], e["target"], e["measured"], e["attainment"]) for e in listed] == [
        ("q", "wait", 30_000, 95.0, 3, 1.0)]
    assert set(listed[0]["burn_rate"]) == {"5m", "30m", "1h", "6h"} and listed[0]["burn_rate"]["1h"] == 0.0
    assert "q: 95 % of jobs wait under 30,000 ms over 30 d: attained 100.000 % (3 jobs)" in text
