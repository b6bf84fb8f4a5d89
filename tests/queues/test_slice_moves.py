"""Acting on a slice of a failure group: the search filters release and host (with group and field) select the
jobs whose newest attempt ran on that release or host, and emq bulk moves exactly those."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from queues import EchoMQ, InvalidInput
from queues.cli import main
from queues.failures import groups
from queues.search import Limits, Query, Search
from tests.support.keyspace import keyspace_dump
from tests.support.releases import run_one, worker_of


@pytest.fixture
def slice_of_two_releases(redis_url: str, mq: EchoMQ) -> dict[str, set[str]]:
    """One error under both releases, on two hosts, and a worker that records no release: which ids failed where."""
    old, new = worker_of(redis_url, "host-1:1", "v1.0"), worker_of(redis_url, "host-2:2", "v2.0")
    other = EchoMQ.from_url(redis_url, actor="node:9")
    where: dict[str, set[str]] = {"v1.0": set(), "v2.0": set(), "unknown": set()}
    for i in range(12):
        worker, release = [(old, "v1.0"), (new, "v2.0"), (other, "unknown")][i % 3]
        job_id = f"j{i}"
        mq.enqueue("q", json.dumps({"tenant": "acme" if i % 2 else "zeta"}), job_id=job_id, max_attempts=1)
        run_one(worker, job_id, f"timeout after {i} ms")
        where[release].add(job_id)
    for client in (old, new, other):
        client.close()
    return where


def found(mq: EchoMQ, **filters: str) -> set[str]:
    engine = Search(cast(Any, Query.parse)(state="failed", **filters), ["q"], Limits(max_matches=None, seconds=None,
                                                                          redis_seconds=None))
    return {m.id for step in engine.steps(mq) for m in step.matches}


def test_release_and_host_select_the_jobs_whose_newest_attempt_ran_there(
        mq: EchoMQ, slice_of_two_releases: dict[str, set[str]]) -> None:
    [group] = mq.run(groups("q")).groups

    assert found(mq, group=group.id, release="v2.0") == slice_of_two_releases["v2.0"]
    assert found(mq, group=group.id, release="-") == slice_of_two_releases["unknown"]
    assert found(mq, group=group.id, host="host-1") == slice_of_two_releases["v1.0"]
    assert found(mq, release="v2.0", field='tenant="acme"') == {"j1", "j7"}
    assert found(mq, release="v9.9") == set() and found(mq, host="host-9") == set()


def test_a_release_past_64_bytes_is_refused_in_words(mq: EchoMQ) -> None:
    with pytest.raises(InvalidInput, match="release is at most 64 bytes"):
        Query.parse(state="failed", release="v" * 65)


def test_emq_bulk_retries_exactly_the_slice_and_without_yes_changes_nothing(
        redis_url: str, mq: EchoMQ, slice_of_two_releases: dict[str, set[str]],
        capsys: pytest.CaptureFixture[str]) -> None:
    [group] = mq.run(groups("q")).groups
    before = keyspace_dump(mq.redis)

    asked = main(["--url", redis_url, "bulk", "retry", "q", "--state", "failed", "--group", group.id,
                  "--release", "v2.0"])
    _, said = capsys.readouterr()

    assert asked == 2 and "would act on the 4 failed jobs whose failure group is " in said
    assert "newest attempt's release is 'v2.0'" in said
    assert keyspace_dump(mq.redis) == before
    done = main(["--url", redis_url, "bulk", "retry", "q", "--state", "failed", "--group", group.id,
                 "--release", "v2.0", "--yes"])
    out, _ = capsys.readouterr()
    assert (done, out.strip()) == (0, "moved 4, skipped 0, missing 0")
    pending = {m.decode() for m in cast(list[bytes], mq.redis.zrange("emq:{q}:pending", 0, -1))}
    assert pending == slice_of_two_releases["v2.0"]


def test_emq_bulk_deletes_exactly_a_hosts_slice_and_refuses_to_cancel_failed_jobs(
        redis_url: str, mq: EchoMQ, slice_of_two_releases: dict[str, set[str]],
        capsys: pytest.CaptureFixture[str]) -> None:
    [group] = mq.run(groups("q")).groups
    before = keyspace_dump(mq.redis)

    cancel = main(["--url", redis_url, "bulk", "cancel", "q", "--state", "failed", "--group", group.id,
                   "--host", "host-1", "--yes"])
    _, refused = capsys.readouterr()
    unchanged = keyspace_dump(mq.redis)
    done = main(["--url", redis_url, "bulk", "delete", "q", "--state", "failed", "--group", group.id,
                 "--host", "host-1", "--yes"])
    out, _ = capsys.readouterr()

    assert cancel == 2 and "cancel applies to " in refused and "not to failed ones" in refused
    assert unchanged == before
    assert (done, out.strip()) == (0, "moved 4, skipped 0, missing 0")
    left = {m.decode() for m in cast(list[bytes], mq.redis.zrange("emq:{q}:failed", 0, -1))}
    assert left == slice_of_two_releases["v2.0"] | slice_of_two_releases["unknown"]
