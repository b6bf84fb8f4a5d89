"""Latency objectives: set, replaced, listed, deleted, and how a queue stands against its own."""

from __future__ import annotations

import pytest

from queues import EchoMQ, Refused
from queues.errors import InvalidInput
from queues.slo import SLO_KEY, slo_delete, slo_set, slo_status, slos
from tests.support.latency import early_in_a_minute, record_latencies

MINUTE = 60_000


def test_an_objective_is_set_replaced_listed_and_deleted(mq: EchoMQ) -> None:
    first = mq.run(slo_set("mail", metric="wait", under_ms=30_000, target=95, actor="alice"))
    second = mq.run(slo_set("mail", metric="run", under_ms=2_000, target="99.9", window_days=7, actor="bob"))
    mq.run(slo_set("mail-*", metric="wait", under_ms=1_000, target=90))

    found = mq.run(slos())
    assert first.previous is None
    assert second.previous is not None and (second.previous.metric, second.previous.set_by) == ("wait", "alice")
    assert [(s.name, s.metric, s.under_ms, s.target, s.window_days) for s in found.slos] == [
        ("mail", "run", 2_000, "99.9", 7), ("mail-*", "wait", 1_000, "90", 30)]
    assert found.for_queue("mail-eu").name == "mail-*"  # type: ignore[union-attr]
    assert found.for_queue("mail").name == "mail"  # type: ignore[union-attr]
    assert found.for_queue("billing") is None

    assert mq.run(slo_delete("mail")).previous is not None
    with pytest.raises(Refused):
        mq.run(slo_delete("mail"))
    assert [s.name for s in mq.run(slos()).slos] == ["mail-*"]


@pytest.mark.parametrize("target", [0, 100, "abc", "1e2", -5])
def test_a_target_that_is_not_a_percent_between_0_and_100_is_refused(target: object) -> None:
    with pytest.raises(InvalidInput):
        slo_set("mail", metric="wait", under_ms=1000, target=target)  # type: ignore[arg-type]


def test_the_script_checks_its_arguments_itself(mq: EchoMQ) -> None:
    from queues.moves import Call

    for args in (["mail", "latency", 1000, "95", 30, "x"], ["mail", "wait", 1000, "100", 30, "x"],
                 ["mail", "wait", 0, "95", 30, "x"], ["mail", "wait", 1000, "95", 91, "x"]):
        with pytest.raises(InvalidInput):
            mq.run(Call("slo_set", [SLO_KEY], args, lambda r: r))
    assert not mq.redis.exists(SLO_KEY)


def test_attainment_and_burn_rates_come_from_the_measured_jobs(mq: EchoMQ) -> None:
    now = early_in_a_minute(mq, "mail")
    # This hour: 1,000 waits, 980 under 30 s (2 % over: twice the 1 % a 99 % objective allows).
    record_latencies(mq, "mail", now - 2 * MINUTE, "W", [5_000] * 980 + [60_000] * 20)
    # Twenty days ago: 9,000 waits all under the bound.
    record_latencies(mq, "mail", now - 20 * 86_400_000, "W", [1_000] * 9_000)
    mq.run(slo_set("mail", metric="wait", under_ms=30_000, target=99))
    slo = mq.run(slos()).for_queue("mail")
    assert slo is not None

    status = slo_status(mq, "mail", slo)

    assert status.measured == 10_000
    assert status.attainment == pytest.approx(0.998)
    assert status.burn["5m"] == pytest.approx(2.0) and status.burn["1h"] == pytest.approx(2.0)
    assert status.burn["6h"] == pytest.approx(2.0)
    assert status.budget_left == pytest.approx(0.8)
    assert not status.burning_fast


def test_a_queue_with_nothing_measured_has_no_attainment_rather_than_a_perfect_one(mq: EchoMQ) -> None:
    mq.run(slo_set("idle", metric="run", under_ms=1000, target=95))
    slo = mq.run(slos()).for_queue("idle")
    assert slo is not None

    status = slo_status(mq, "idle", slo)

    assert status.attainment is None and status.measured == 0 and status.burn["1h"] is None
