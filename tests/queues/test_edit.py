"""edit and restore: a pending or failed job's payload changes in one compare-and-move, the old one kept.

The race with a worker is built, not timed: the worker's claim is held until the operator has read the
job, then it claims; the edit sent with what was read is refused with nothing written (DUMP compare),
and in the other order the claim takes the edited payload.
"""

from __future__ import annotations

import threading

import pytest

from queues import EchoMQ, InvalidInput, Refused, moves
from queues.payload_versions import VERSIONS_MAX, VERSIONS_MAX_BYTES, payload_problems, schema, schema_set, versions
from queues.scripts import script
from tests.support.jobs import failed_job
from tests.support.keyspace import keyspace_dump


def edit(mq: EchoMQ, job_id: str, payload: bytes | str, *, state: str, attempts: int | str = "",
         max_attempts: int | str = "", retry: bool = False) -> moves.MoveResult:
    return mq.run(moves.operator_move("edit", "mail", job_id, expect_state=state, expect_attempts=attempts,
                                      actor="op", arguments={"payload": payload, "max_attempts": max_attempts,
                                                             "retry": retry}))


def restore(mq: EchoMQ, job_id: str, version: int, *, state: str) -> moves.MoveResult:
    return mq.run(moves.operator_move("restore", "mail", job_id, expect_state=state, actor="op",
                                      arguments={"version": version}))


def test_editing_a_failed_job_and_retrying_it_keeps_the_old_payload_as_a_version(mq: EchoMQ) -> None:
    failed_job(mq, "mail", "j1", '{"to": "a@exmaple.com"}')

    result = edit(mq, "j1", '{"to": "a@example.com"}', state="failed", attempts=1, retry=True)

    assert (result.state, result.attempts, result.version) == ("pending", "1", "1")
    assert "kept as version 1" in result.describe()
    job = mq.job("mail", "j1")
    assert job.state == "pending" and job.payload == b'{"to": "a@example.com"}'
    assert job.text("max_attempts") == "2"
    kept = mq.run(versions("mail", "j1", version=1))
    assert [(v.seq, v.length, v.move, v.actor) for v in kept.versions] == [(1, 23, "edit", "op")]
    assert kept.version == b'{"to": "a@exmaple.com"}'
    assert [e.move for e in mq.job_events("mail", "j1")][0] == "edit"
    # The job page's fields do not list the versions: they are the versions read's.
    assert not [name for name in job.fields if name.startswith("version")]
    [claimed] = mq.claim("mail")
    assert claimed.payload == b'{"to": "a@example.com"}'


def test_a_pending_job_is_edited_in_place_and_its_max_attempts_changed(mq: EchoMQ) -> None:
    mq.enqueue("mail", "old", job_id="p1", delay_ms=60_000)
    due = mq.redis.zscore("emq:{mail}:pending", "p1")

    result = edit(mq, "p1", "new", state="pending", attempts=0, max_attempts=7)

    assert (result.state, result.version) == ("pending", "1")
    assert mq.redis.zscore("emq:{mail}:pending", "p1") == due
    job = mq.job("mail", "p1")
    assert job.payload == b"new" and job.text("max_attempts") == "7"


def test_an_active_job_is_refused_because_its_worker_may_be_running_it(mq: EchoMQ) -> None:
    mq.enqueue("mail", "x", job_id="a1")
    mq.claim("mail")
    before = keyspace_dump(mq.redis)

    with pytest.raises(Refused) as refused:
        edit(mq, "a1", "y", state="active")

    assert refused.value.reason == "running"
    assert "its worker may be running it" in refused.value.describe()
    assert keyspace_dump(mq.redis) == before


@pytest.mark.parametrize("order", ["claim first", "edit first"])
def test_an_edit_raced_by_a_claim_exactly_one_wins_and_the_loser_writes_nothing(mq: EchoMQ, order: str) -> None:
    mq.enqueue("mail", "old", job_id="r1")
    shown = mq.job("mail", "r1")  # what the operator's page showed: pending, attempts 0
    claim_now, claimed_done = threading.Event(), threading.Event()
    claimed: list[moves.ClaimedJob] = []

    def worker() -> None:
        # A worker whose claim is held until it is let go.
        claim_now.wait()
        claimed.extend(mq.claim("mail"))
        claimed_done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    if order == "claim first":
        claim_now.set()
        claimed_done.wait()
        before = keyspace_dump(mq.redis)
        with pytest.raises(Refused) as refused:
            edit(mq, "r1", "new", state=shown.state, attempts=shown.text("attempts"))
        thread.join()
        # The claim won: the edit is refused (the job is active now) and wrote nothing.
        assert refused.value.reason == "running"
        assert keyspace_dump(mq.redis) == before
        assert [j.payload for j in claimed] == [b"old"]
        return
    result = edit(mq, "r1", "new", state=shown.state, attempts=shown.text("attempts"))
    claim_now.set()
    thread.join()
    # The edit won: the claim, let go after it, takes the edited payload.
    assert result.version == "1"
    assert [j.payload for j in claimed] == [b"new"]


def test_restore_returns_the_exact_bytes_of_a_version(mq: EchoMQ) -> None:
    original = bytes(range(256)) + "é\u202e\x00".encode() + b"\xff\xfe"
    failed_job(mq, "mail", "b1", original)
    edit(mq, "b1", '{"fixed": true}', state="failed")

    result = restore(mq, "b1", 1, state="failed")

    assert (result.state, result.version) == ("failed", "2")
    assert mq.payload("mail", "b1") == original
    assert mq.run(versions("mail", "b1", version=2)).version == b'{"fixed": true}'
    with pytest.raises(Refused) as again:
        restore(mq, "b1", 1, state="failed")
    assert again.value.reason == "unchanged"


def test_the_version_cap_holds_in_count_and_in_bytes(mq: EchoMQ) -> None:
    mq.enqueue("mail", "v0", job_id="c1", delay_ms=60_000)
    for n in range(1, VERSIONS_MAX + 5):
        edit(mq, "c1", f"v{n}", state="pending")
    kept = mq.run(versions("mail", "c1")).versions
    assert len(kept) == VERSIONS_MAX
    assert [v.seq for v in kept] == list(range(5, VERSIONS_MAX + 5))
    assert version_fields(mq, "c1") == [f"version:{v.seq}" for v in kept]

    # Bytes: three payloads of 400 KiB cannot all be kept within 1 MiB; the newest two are.
    big = 400 * 1024
    for n in range(3):
        edit(mq, "c1", bytes([65 + n]) * big, state="pending")
    edit(mq, "c1", "small", state="pending")
    kept = mq.run(versions("mail", "c1")).versions
    # Versions 13 ("v12") to 16 (C) were kept; 1.2 MiB is too much, so the oldest went down to B and C.
    assert [(v.seq, v.length) for v in kept] == [(15, big), (16, big)]
    assert version_fields(mq, "c1") == ["version:15", "version:16"]
    assert sum(mq.redis.hstrlen("emq:{mail}:job:c1", f"version:{v.seq}") for v in kept) <= VERSIONS_MAX_BYTES
    assert mq.run(versions("mail", "c1", version=15)).version == b"B" * big


def version_fields(mq: EchoMQ, job_id: str) -> list[str]:
    names = [k.decode() if isinstance(k, bytes) else str(k) for k in mq.redis.hkeys(f"emq:{{mail}}:job:{job_id}")]
    return sorted((n for n in names if n.startswith("version:")), key=lambda n: int(n.split(":")[1]))


def test_a_payload_too_long_to_keep_is_never_replaced(mq: EchoMQ) -> None:
    mq.enqueue("mail", "x", job_id="L1", delay_ms=60_000)
    mq.redis.hset("emq:{mail}:job:L1", "payload", b"z" * (VERSIONS_MAX_BYTES + 1))
    before = keyspace_dump(mq.redis)
    with pytest.raises(Refused) as refused:
        edit(mq, "L1", "y", state="pending")
    assert refused.value.reason == "keep_too_large"
    assert keyspace_dump(mq.redis) == before


def test_bad_edits_are_refused_with_nothing_written(mq: EchoMQ) -> None:
    mq.enqueue("mail", "same", job_id="u1", max_attempts=3)
    [job] = mq.claim("mail")
    mq.fail("mail", "u1", job.token, error="boom", backoff_ms=60_000)  # pending again, attempts 1
    before = keyspace_dump(mq.redis)
    with pytest.raises(Refused, match="nothing would change"):
        edit(mq, "u1", "same", state="pending")
    with pytest.raises(Refused, match="max attempts must be above"):
        edit(mq, "u1", "new", state="pending", max_attempts=1)
    with pytest.raises(Refused, match="moved on"):
        edit(mq, "u1", "new", state="pending", attempts=0)
    with pytest.raises(Refused):
        edit(mq, "u1", "new", state="failed")
    with pytest.raises(InvalidInput, match="only a failed job"):
        edit(mq, "u1", "new", state="pending", retry=True)
    with pytest.raises(InvalidInput):
        edit(mq, "u1", b"x" * (1024 * 1024 + 1), state="pending")
    with pytest.raises(InvalidInput, match="needs its payload"):
        mq.run(moves.operator_move("edit", "mail", "u1", expect_state="pending"))
    assert keyspace_dump(mq.redis) == before


def test_the_scripts_keep_the_bounds_the_library_states() -> None:
    source = script("edit").source
    assert f"local VERSIONS_MAX = {VERSIONS_MAX}\n" in source
    assert f"local VERSIONS_MAX_BYTES = {VERSIONS_MAX_BYTES}\n" in source


def test_a_schema_is_set_read_and_checked_against_in_words(mq: EchoMQ) -> None:
    text = '{"type": "object", "required": ["to"], "properties": {"to": {"type": "string", "format": "email"}}}'
    assert mq.run(schema_set("mail", text, actor="op")).previous == ""
    found = mq.run(schema("mail"))
    assert found.text == text and found.set_by == "op" and found.set_ms

    assert payload_problems(found.text, b'{"to": "a@example.com"}') == []
    assert payload_problems(found.text, b'{"too": 1}') == ["the payload: 'to' is a required property"]
    assert payload_problems(found.text, b'{"to": 5}') == ["to: 5 is not of type 'string'"]
    assert payload_problems(found.text, b"{")[0].startswith("the payload is not JSON")

    with pytest.raises(InvalidInput, match="not a valid JSON Schema"):
        schema_set("mail", '{"type": "nope"}')
    with pytest.raises(InvalidInput, match="not JSON"):
        schema_set("mail", "{")
    assert mq.run(schema_set("mail", "")).previous == text
    assert not mq.run(schema("mail")).is_set
    with pytest.raises(InvalidInput, match="no schema to remove"):
        mq.run(schema_set("mail", ""))
