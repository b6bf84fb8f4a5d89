"""``emq search``: one line (or JSON object) per match; exit 0, 3 when nothing matched, 2 on a bad filter."""

from __future__ import annotations

import json
import time

import pytest

from queues import EchoMQ, moves
from queues.cli import main


def emq(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["--url", url, *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


@pytest.fixture
def failures(mq: EchoMQ) -> EchoMQ:
    for n, error in enumerate(["timeout after 3012 ms", "card declined", "Timeout after 2999 ms"]):
        mq.enqueue("q", json.dumps({"user": {"id": n}}), job_id=f"j{n}", max_attempts=1)
        [job] = mq.claim("q")
        mq.run(moves.fail("q", job.id, job.token, error=error, backoff_ms=0))
        time.sleep(0.002)  # a search covers the jobs that ended before the millisecond it began
    return mq


def test_search_prints_one_line_per_match_newest_failure_first(failures: EchoMQ, redis_url: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = emq(redis_url, capsys, "search", "q", "--state", "failed", "--error", "timeout")

    assert code == 0
    assert [line.split("\t")[:3] for line in out] == [["j2", "failed", "1"], ["j0", "failed", "1"]]
    assert "2 matched of 3" in err


def test_search_prints_json_objects_that_carry_what_a_move_expects(failures: EchoMQ, redis_url: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = emq(redis_url, capsys, "search", "q", "--state", "failed", "--field", "user.id=1", "--json")

    [match] = [json.loads(line) for line in out]
    assert code == 0
    assert (match["id"], match["state"], match["attempts"], match["last_error"]) == ("j1", "failed", "1",
                                                                                      "card declined")


def test_search_exits_3_when_nothing_matched(failures: EchoMQ, redis_url: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = emq(redis_url, capsys, "search", "q", "--state", "failed", "--payload", "no such text")

    assert (code, out) == (3, []) and "0 matched" in err


@pytest.mark.parametrize("args", [
    ["--field", "user.=1"], ["--payload", "/a.*b/"], [], ["--finished-after", "soon"], ["--limit", "0", "--error", "x"],
])
def test_search_exits_2_on_a_bad_filter_and_says_why(failures: EchoMQ, redis_url: str,
                                                     capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, out, err = emq(redis_url, capsys, "search", "q", "--state", "failed", *args)

    assert (code, out) == (2, []) and err.startswith("emq: ") and len(err.splitlines()) == 1


def test_failures_prints_the_groups_largest_first(failures: EchoMQ, redis_url: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = emq(redis_url, capsys, "failures", "q", "--json")

    groups = [json.loads(line) for line in out]
    assert code == 0
    assert [(g["count"], g["signature"]) for g in groups] == [(2, "timeout after <n> ms"), (1, "card declined")]
    assert groups[0]["sample_id"] == "j2" and groups[0]["sample_error"] == "Timeout after 2999 ms"
    assert "3 failed jobs, 3 in the 2 largest of 2 groups" in err


def test_bulk_without_yes_says_how_many_and_changes_nothing(failures: EchoMQ, redis_url: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = emq(redis_url, capsys, "bulk", "retry", "q", "--state", "failed", "--error", "timeout")

    assert (code, out) == (2, []) and "would act on the 2 failed jobs whose error contains 'timeout'" in err
    assert failures.stats("q").counts["failed"] == 3


def test_bulk_over_a_group_prints_moved_skipped_and_missing(failures: EchoMQ, redis_url: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = emq(redis_url, capsys, "failures", "q", "--json")
    group = json.loads(out[0])["group"]

    code, out, _ = emq(redis_url, capsys, "bulk", "retry", "q", "--state", "failed", "--group", group, "--yes")

    assert (code, out) == (0, ["moved 2, skipped 0, missing 0"])
    assert failures.stats("q").counts == {"pending": 2, "active": 0, "done": 0, "failed": 1}


def test_bulk_refuses_a_move_the_state_cannot_take(failures: EchoMQ, redis_url: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = emq(redis_url, capsys, "bulk", "promote", "q", "--state", "failed", "--error", "x", "--yes")

    assert code == 2 and "promote applies to pending jobs" in err


@pytest.fixture
def varied(mq: EchoMQ) -> dict[str, str]:
    """Three failed jobs with other ids, payloads, errors and workers, one millisecond mark between each two."""
    marks: dict[str, str] = {}
    jobs = [("acme-1", b'{"user": {"id": 42}, "note": "ACME"}', "host-7", "Timeout after 3012 ms"),
            ("bin-1", b"\xff\x00 binary ACME", "host-8", "card declined"),
            ("acme-2", b'{"user": {"id": "42", "deep": {"list": [{"k": "v"}]}}}', "host-7",
             "\udcff not UTF-8, then a timeout")]
    for n, (job_id, payload, worker, error) in enumerate(jobs):
        mq.enqueue("q", payload, job_id=job_id, max_attempts=1)
        [job] = EchoMQ(mq.redis, actor=worker).claim("q")
        mq.run(moves.fail("q", job.id, job.token, error=error, backoff_ms=0))
        time.sleep(0.002)
        marks[f"t{n + 1}"] = str(mq.server_time_ms("q"))
        time.sleep(0.002)
    return marks


@pytest.mark.parametrize(("args", "ids"), [
    (["--id-prefix", "acme-"], {"acme-1", "acme-2"}),
    (["--payload", "ACME"], {"acme-1", "bin-1"}),
    (["--payload", "\udcff"], {"bin-1"}),  # a byte that is not UTF-8, as a shell passes it
    (["--field", "user.id=42"], {"acme-1", "acme-2"}),
    (["--field", 'user.id="42"'], {"acme-2"}),
    (["--field", "user.deep.list[0].k=v"], {"acme-2"}),
    (["--error", "TIMEOUT"], {"acme-1", "acme-2"}),
    (["--error", "\udcff not"], {"acme-2"}),
    (["--worker", "host-8"], {"bin-1"}),
    (["--enqueued-after", "{t1}"], {"bin-1", "acme-2"}),
    (["--enqueued-before", "{t1}"], {"acme-1"}),
    (["--failed-after", "{t2}"], {"acme-2"}),
    (["--finished-after", "{t1}", "--finished-before", "{t2}"], {"bin-1"}),
    (["--error", "timeout", "--worker", "host-7", "--field", "user.id=42", "--enqueued-after", "{t1}"], {"acme-2"}),
])
def test_search_finds_by_every_filter_and_nothing_else(varied: dict[str, str], redis_url: str,
                                                       capsys: pytest.CaptureFixture[str], args: list[str],
                                                       ids: set[str]) -> None:
    code, out, _ = emq(redis_url, capsys, "search", "q", "--state", "failed", "--json",
                       *[a.format(**varied) for a in args])

    assert {json.loads(line)["id"] for line in out} == ids
    assert code == (0 if ids else 3)


def test_search_needs_a_state_and_says_so(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = emq(redis_url, capsys, "search", "q", "--payload", "x")

    assert (code, out) == (2, []) and "--state" in err


@pytest.mark.parametrize("args", [["--id-prefix", "job*"], ["--worker", "/host-(7|8)/"], ["--error", "/^time/i"],
                                  ["--field", "user.id"], ["--field", "user[x]=1"], ["--enqueued-after", "last week"]])
def test_search_refuses_a_pattern_or_an_unreadable_filter_with_exit_2(varied: dict[str, str], redis_url: str,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      args: list[str]) -> None:
    code, out, err = emq(redis_url, capsys, "search", "q", "--state", "failed", *args)

    assert (code, out) == (2, []) and err.startswith("emq: ") and len(err.splitlines()) == 1


def test_search_of_every_queue_names_each_matchs_queue_and_says_how_many_it_searched(
        mq: EchoMQ, redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    for queue in ("billing", "mail", "sms"):
        mq.enqueue(queue, '{"customer": 42}' if queue != "sms" else "{}", job_id=f"{queue}-1")

    code, out, err = emq(redis_url, capsys, "search", "--all-queues", "--state", "pending", "--payload", "customer")

    assert code == 0 and [line.split("\t")[:2] for line in out] == [["billing", "billing-1"], ["mail", "mail-1"]]
    assert "2 matched of 3 pending jobs of 3 queues looked at" in err


@pytest.mark.parametrize("where", [[], ["q", "--all-queues"]])
def test_search_needs_one_queue_or_every_queue(mq: EchoMQ, redis_url: str, capsys: pytest.CaptureFixture[str],
                                               where: list[str]) -> None:
    code, out, err = emq(redis_url, capsys, "search", *where, "--state", "failed", "--error", "x")

    assert (code, out) == (2, []) and "--all-queues" in err
