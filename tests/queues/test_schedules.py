"""Schedules: each tick enqueued once by one script, whoever sends it and however often; pause, resume, run now,
edits and bad input."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from queues import EchoMQ, QueueKeys
from queues.errors import Duplicate, InvalidInput, Refused
from queues.keys import SCHEDULE_INDEX
from queues.scheduler import Ticker, plan_tick
from queues.schedules import (
    PAUSED_SCORE,
    Definition,
    When,
    add_schedule,
    delete_schedule,
    get_schedule,
    pause_schedule,
    resume_schedule,
    run_now,
    schedule_set,
    schedule_statuses,
    schedule_tick,
    update_schedule,
)
from tests.support.keyspace import keyspace_dump
from tests.support.why import scripts_usec

SECOND = 1000
DAY = 86_400_000


def every_second(payload: str = '{"n": 1}', **options: Any) -> Definition:
    return Definition.of(every_ms=SECOND, payload=payload, **options)


def past(mq: EchoMQ) -> int:
    """Ten minutes before the server's now: schedules added as of then have ticks due that the tests step through."""
    return mq.server_time_ms("mail") - 600 * SECOND


def jobs_of(mq: EchoMQ, queue: str, name: str) -> list[str]:
    prefix = QueueKeys(queue).job(f"{name}:")
    return sorted(k.decode()[len(prefix):] for k in mq.redis.scan_iter(match=prefix + "*", count=1000))


def test_an_interval_ticks_at_multiples_of_it_from_the_epoch_and_a_cron_in_its_time_zone() -> None:
    every = When(every_ms=300_000)
    nightly = When(cron="0 2 * * *", tz="Europe/Berlin")
    # 2026-03-28 12:00 UTC; the night after is the change to summer time (02:00 does not exist, cronsim
    # runs it at 03:00 local, 01:00 UTC).
    noon = 1_774_699_200_000

    assert every.next_after(noon) == noon + 300_000 and every.latest_at(noon) == noon
    assert every.latest_at(noon + 299_999) == noon
    assert nightly.next_after(noon) == 1_774_746_000_000
    assert nightly.latest_at(noon) == noon - 11 * 3_600_000  # 02:00 Berlin (CET) is 01:00 UTC


def test_a_tick_is_enqueued_once_as_name_colon_tick_and_the_schedule_moves_on(mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "nightly", every_second(), now_ms=past(mq))
    found = get_schedule(mq, "mail", "nightly")
    now = mq.server_time_ms("mail")
    ticker = Ticker(mq)
    assert found.next_ms is not None

    report = ticker.run_round(now_ms=found.next_ms + 5)
    again = ticker.run_round(now_ms=found.next_ms + 5)

    assert report.enqueued == [f"nightly:{found.next_ms}"] and again.enqueued == []
    job = mq.job("mail", f"nightly:{found.next_ms}")
    assert job.state == "pending" and job.payload == b'{"n": 1}'
    after = get_schedule(mq, "mail", "nightly")
    assert (after.last_tick_ms, after.next_ms, after.ticks) == (found.next_ms, found.next_ms + SECOND, 1)
    assert after.last_outcome == "pending" and found.next_ms < now


def test_the_same_tick_sent_by_eight_schedulers_at_once_is_enqueued_once(redis_url: str, mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "s", every_second(), now_ms=past(mq))
    tick = get_schedule(mq, "mail", "s").next_ms
    assert tick is not None
    start = threading.Barrier(8)
    results: list[Any] = []

    def send() -> None:
        call = schedule_tick("mail", "s", what="tick", tick_ms=tick, next_ms=tick + SECOND, version=1, actor="t")
        client = EchoMQ.from_url(redis_url)
        start.wait()
        try:
            results.append(client.run(call).outcome)
        except Refused as refused:
            results.append(refused.reason)
        client.close()

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(results) == ["enqueued"] + ["ticked"] * 7
    assert jobs_of(mq, "mail", "s") == [str(tick)]


def test_a_tick_that_is_not_ahead_of_the_last_one_or_not_due_yet_is_refused_with_nothing_written(mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "s", every_second(), now_ms=past(mq))
    tick = get_schedule(mq, "mail", "s").next_ms
    assert tick is not None
    Ticker(mq).run_round(now_ms=tick)
    before = keyspace_dump(mq.redis)
    now = mq.server_time_ms("mail")

    def refused(**args: Any) -> str:
        call: dict[str, Any] = dict(what="tick", tick_ms=tick, next_ms=tick + SECOND, version=1, actor="t") | args
        with pytest.raises(Refused) as caught:
            mq.run(schedule_tick("mail", "s", **call))
        return caught.value.reason

    assert refused() == "ticked"
    assert refused(tick_ms=tick - SECOND, next_ms=tick) == "ticked"
    assert refused(tick_ms=now + DAY, next_ms=now + DAY + SECOND) == "not_due"
    assert refused(tick_ms=tick + SECOND, next_ms=tick + 2 * SECOND, version=7) == "changed"
    assert keyspace_dump(mq.redis) == before


def test_a_paused_schedule_enqueues_nothing_and_resumes_from_the_next_tick_after_now(mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "s", every_second(), now_ms=past(mq))
    pause_schedule(mq, "mail", "s")
    paused = get_schedule(mq, "mail", "s")
    assert paused.next_ms is not None
    ticker = Ticker(mq)

    reports = [ticker.run_round(now_ms=paused.next_ms + i * SECOND) for i in range(5)]
    assert [r.enqueued for r in reports] == [[]] * 5 and jobs_of(mq, "mail", "s") == []
    assert mq.redis.zscore(QueueKeys("mail").schedules, "s") == PAUSED_SCORE
    assert pause_schedule(mq, "mail", "s").already

    now = mq.server_time_ms("mail") // SECOND * SECOND
    resume_schedule(mq, "mail", "s", now_ms=now - 100 * SECOND)
    resumed = get_schedule(mq, "mail", "s")
    assert resumed.next_ms == now - 99 * SECOND and not resumed.paused
    assert ticker.run_round(now_ms=resumed.next_ms).enqueued == [f"s:{resumed.next_ms}"]


def test_run_now_enqueues_one_job_outside_the_ticks_even_while_paused(mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "s", every_second())
    pause_schedule(mq, "mail", "s")

    job_id = run_now(mq, "mail", "s", stamp_ms=1_796_140_800_123)
    with pytest.raises(Duplicate):
        run_now(mq, "mail", "s", stamp_ms=1_796_140_800_123)

    assert job_id == "s:run:1796140800123" and jobs_of(mq, "mail", "s") == ["run:1796140800123"]
    found = get_schedule(mq, "mail", "s")
    assert (found.runs, found.ticks, found.last_outcome, found.last_tick_ms) == (1, 0, "pending", None)


def test_missed_ticks_are_not_made_up_a_late_tick_is_enqueued_once_or_skipped(mq: EchoMQ) -> None:
    ten_minutes = 600 * SECOND
    since = mq.server_time_ms("mail") - 3_600 * SECOND
    add_schedule(mq, "mail", "once", Definition.of(every_ms=ten_minutes, payload="x", missed="once"), now_ms=since)
    add_schedule(mq, "mail", "skip", Definition.of(every_ms=ten_minutes, payload="x", missed="skip"), now_ms=since)
    first = get_schedule(mq, "mail", "once").next_ms
    assert first is not None
    ticker = Ticker(mq)
    # Two ticks pass unseen; the scheduler comes 30 s after the third: on time, and only the third is enqueued.
    on_time = ticker.run_round(now_ms=first + 2 * ten_minutes + 30 * SECOND)
    # The next tick passes; the scheduler comes 61 s after it: late.
    late = first + 3 * ten_minutes
    report = ticker.run_round(now_ms=late + 61 * SECOND)

    assert sorted(on_time.enqueued) == [f"once:{first + 2 * ten_minutes}", f"skip:{first + 2 * ten_minutes}"]
    assert report.enqueued == [f"once:{late}"] and report.skipped == 1
    assert jobs_of(mq, "mail", "skip") == [str(first + 2 * ten_minutes)]
    skipped = get_schedule(mq, "mail", "skip")
    assert (skipped.next_ms, skipped.skipped, skipped.last_tick_ms) == (late + ten_minutes, 1, first + 2 * ten_minutes)


def test_an_edit_keeps_the_ticks_done_and_a_stale_version_is_refused(mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "s", every_second(), now_ms=past(mq))
    tick = get_schedule(mq, "mail", "s").next_ms
    assert tick is not None
    Ticker(mq).run_round(now_ms=tick)
    update_schedule(mq, "mail", "s", Definition.of(cron="*/5 * * * *", tz="UTC", payload="v2"), expected_version=1)
    with pytest.raises(Refused) as stale:
        update_schedule(mq, "mail", "s", every_second(), expected_version=1)

    edited = get_schedule(mq, "mail", "s")
    assert stale.value.reason == "changed"
    assert (edited.version, edited.last_tick_ms, edited.when) == (2, tick, When(cron="*/5 * * * *", tz="UTC"))
    assert edited.next_ms is not None and edited.next_ms % 300_000 == 0


def test_bad_input_is_refused_before_anything_is_sent_or_by_the_script_with_nothing_changed(mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "s", every_second(), now_ms=past(mq))
    before = keyspace_dump(mq.redis)
    for bad in (dict(cron="61 * * * *", tz="UTC"), dict(cron="* * * *", tz="UTC"), dict(cron="0 2 * * *", tz="Mars/Base"),
                dict(every_ms=999), dict(cron="0 2 * * *", tz="UTC", every_ms=60_000), dict(every_ms=SECOND, missed="x"),
                dict(every_ms=SECOND, max_attempts=0)):
        with pytest.raises(InvalidInput):
            Definition.of(payload="x", **bad)
    for name in ("", "a b", "{x}", "a:b", "x" * 65, "-x"):
        with pytest.raises(InvalidInput):
            add_schedule(mq, "mail", name, every_second(), now_ms=past(mq))
    with pytest.raises(Refused) as taken:
        add_schedule(mq, "mail", "s", every_second(), now_ms=past(mq))
    # What the script itself refuses, sent by hand as another runtime might.
    keys = QueueKeys("mail")
    raw = [["s", "add", "", "61 * * * * *", "UTC", "", "x", "3", "once", "0", "1", "a"],
           ["s", "add", "", "", "", "999", "x", "3", "once", "0", "1", "a"],
           ["s", "add", "", "", "", "1000", "x", "3", "late", "0", "1", "a"],
           ["s", "update", "", "", "", "1000", "x", "0", "once", "0", "1", "a"]]
    for argv in raw:
        with pytest.raises(redis.ResponseError, match="emq: "):
            mq.redis.eval(_source("schedule_set"), 2, keys.schedule("s"), keys.schedules, *argv)

    assert taken.value.reason == "exists"
    assert keyspace_dump(mq.redis) == before


def _source(name: str) -> str:
    from queues.scripts import script
    return script(name).source


def test_a_schedule_deleted_leaves_its_jobs_and_its_queue_leaves_the_index(mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "s", every_second(), now_ms=past(mq))
    tick = get_schedule(mq, "mail", "s").next_ms
    assert tick is not None
    ticker = Ticker(mq)
    ticker.run_round(now_ms=tick)
    delete_schedule(mq, "mail", "s")
    ticker.run_round(now_ms=tick + SECOND)
    mq.redis.zadd(SCHEDULE_INDEX, {"mail": 0})
    ticker.run_round(now_ms=tick + 2 * SECOND)

    assert jobs_of(mq, "mail", "s") == [str(tick)]
    assert mq.redis.zscore(SCHEDULE_INDEX, "mail") is None
    with pytest.raises(Refused):
        delete_schedule(mq, "mail", "s")


def test_schedule_statuses_pages_every_schedule_of_every_queue(mq: EchoMQ) -> None:
    for queue in ("a", "b", "c"):
        for i in range(3):
            add_schedule(mq, queue, f"s{i}", Definition.of(every_ms=(i + 1) * 60_000, payload="x"))

    seen: list[tuple[str, str]] = []
    after = None
    pages = 0
    while True:
        page = schedule_statuses(mq, limit=4, after=after)
        seen += [(s.queue, s.name) for s in page.schedules]
        pages += 1
        if page.after is None:
            break
        after = page.after

    assert sorted(seen) == [(q, f"s{i}") for q in ("a", "b", "c") for i in range(3)] and len(seen) == 9
    assert pages == 3
    status = schedule_statuses(mq, queue="b", limit=10).schedules[0]
    assert status.overdue_ms(status.next_ms + 5) == 5 and status.last_outcome == ""  # type: ignore[operator]


def test_plan_tick_considers_only_the_latest_due_tick() -> None:
    from queues.schedules import Schedule
    base: dict[str, Any] = dict(queue="q", name="s", key_type="hash", when=When(every_ms=SECOND), missed="once",
                                paused=False, max_attempts=3, version=4, next_ms=10 * SECOND, last_tick_ms=9 * SECOND,
                                last_job="", last_enqueued_ms=None, ticks=0, runs=0, skipped=0, created_ms=None,
                                updated_ms=None, updated_by="", paused_ms=None, paused_by="", payload_length=0,
                                payload_head="")

    assert plan_tick(Schedule(**base), 9_999) is None
    plan = plan_tick(Schedule(**base), 13_500)
    assert plan is not None and (plan.what, plan.tick_ms, plan.next_ms, plan.version) == ("tick", 13_000, 14_000, 4)
    assert plan_tick(Schedule(**base | {"paused": True}), 13_500) is None
    late = plan_tick(Schedule(**base | {"missed": "skip", "when": When(every_ms=DAY), "next_ms": DAY}), DAY + 61_000)
    assert late is not None and (late.what, late.tick_ms, late.next_ms) == ("skip", DAY, 2 * DAY)


def test_schedule_set_refuses_an_add_when_the_queue_holds_1000(mq: EchoMQ) -> None:
    keys = QueueKeys("mail")
    mq.redis.zadd(keys.schedules, {f"x{i}": 1 for i in range(1000)})
    before = keyspace_dump(mq.redis)
    with pytest.raises(Refused) as full:
        mq.run(schedule_set("mail", "s", every_second(), mode="add", now_ms=1))
    assert full.value.reason == "full" and keyspace_dump(mq.redis) == before


def test_emq_schedule_add_list_pause_resume_run_delete(redis_url: str, mq: EchoMQ,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from queues.cli import main

    def emq(*args: str) -> tuple[int, str, str]:
        code = main(["--url", redis_url, *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    assert emq("schedule", "add", "mail", "nightly", '{"report": 1}', "--cron", "0 2 * * *", "--tz", "Europe/Berlin")[0] == 0
    assert emq("schedule", "add", "mail", "beat", "x", "--every-ms", "60000", "--missed", "skip")[0] == 0
    code, out, _ = emq("schedule", "list")
    assert code == 0 and [line.split("\t")[1] for line in out.splitlines()] == ["beat", "nightly"]
    assert "cron 0 2 * * * (Europe/Berlin)" in out and "every 1 min" in out
    assert emq("schedule", "pause", "mail", "nightly")[1] == "mail/nightly: paused\n"
    code, out, _ = emq("schedule", "run", "mail", "nightly")
    assert code == 0 and out.startswith("mail/nightly: enqueued nightly:run:")
    assert "resumed, next tick 20" in emq("schedule", "resume", "mail", "nightly")[1]
    code, out, _ = emq("schedule", "list", "mail", "--json")
    listed = {row["name"]: row for row in map(__import__("json").loads, out.splitlines())}
    assert listed["nightly"]["runs"] == 1 and listed["nightly"]["last_outcome"] == "pending"
    assert listed["beat"]["missed"] == "skip" and listed["beat"]["every_ms"] == 60_000
    assert emq("schedule", "add", "mail", "nightly", "x", "--every-ms", "1000")[0] == 4  # refused: exists
    code, _, err = emq("schedule", "add", "mail", "bad", "x", "--cron", "0 25 * * *")
    assert code == 2 and "not valid" in err
    assert emq("schedule", "delete", "mail", "beat")[0] == 0
    assert emq("schedule", "delete", "mail", "beat")[0] != 0
    assert [s.name for s in schedule_statuses(mq).schedules] == ["nightly"]


def test_two_schedulers_with_the_lock_tick_in_one_place_and_the_other_takes_over_when_it_stops(
        redis_url: str, mq: EchoMQ) -> None:
    from queues.scheduler import Scheduler, scheduler_lock
    add_schedule(mq, "mail", "s", every_second(), now_ms=past(mq))
    first = get_schedule(mq, "mail", "s").next_ms
    assert first is not None
    one = Scheduler(EchoMQ.from_url(redis_url), scheduler_lock(url=redis_url, lock_urls=[], holder="one"))
    two = Scheduler(EchoMQ.from_url(redis_url), scheduler_lock(url=redis_url, lock_urls=[], holder="two"))

    held = one.run_once(now_ms=first)
    refused = two.run_once(now_ms=first + SECOND)
    one.lock.release()
    taken = two.run_once(now_ms=first + SECOND)

    assert held is not None and held.enqueued == [f"s:{first}"]
    assert refused is None
    assert taken is not None and taken.enqueued == [f"s:{first + SECOND}"]
    assert jobs_of(mq, "mail", "s") == [str(first), str(first + SECOND)]


def test_a_refusal_says_what_stands_in_the_way_in_words(mq: EchoMQ) -> None:
    add_schedule(mq, "mail", "nightly", every_second())
    with pytest.raises(Refused, match="refused: the queue has a schedule nightly already"):
        add_schedule(mq, "mail", "nightly", every_second())
    with pytest.raises(Refused, match="refused: there is no schedule other"):
        pause_schedule(mq, "mail", "other")


@pytest.mark.parametrize("parts", [25, 2_000_000])
def test_a_recent_list_too_long_keeps_its_newest_and_one_of_megabytes_is_not_read(mq: EchoMQ, parts: int) -> None:
    # 25 short parts (another writer's, under the read bound): the newest 19 and the tick's stay. Two million
    # (4 MB): split by every tick, they held Redis for 0.6 s, so such a list starts again from the tick.
    add_schedule(mq, "mail", "nightly", every_second(), now_ms=past(mq))
    found = get_schedule(mq, "mail", "nightly")
    assert found.next_ms is not None
    mq.redis.hset(QueueKeys("mail").schedule("nightly"), "recent", ",".join(str(n % 10) for n in range(parts)))
    mq.redis.config_resetstat()

    report = Ticker(mq).run_round(now_ms=found.next_ms + 5)

    assert report.enqueued == [f"nightly:{found.next_ms}"]
    recent = mq.redis.hget(QueueKeys("mail").schedule("nightly"), "recent")
    kept = [str(n % 10) for n in range(parts - 19, parts)] if parts < 1000 else []
    assert recent == ",".join([*kept, str(found.next_ms)]).encode()
    # Redis's own time for the tick: far under a second at any load, where splitting the whole list took seconds.
    usec = scripts_usec(mq)
    assert 0 < usec < 1_000_000
