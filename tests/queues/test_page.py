"""Pages are O(log N + page) and cursor pages do not shift while jobs flow."""

from __future__ import annotations

import pytest

from queues import EchoMQ, InvalidInput, QueueKeys


def _fill(mq: EchoMQ, n: int) -> list[str]:
    keys = QueueKeys("q")
    ids = [f"j{i:04d}" for i in range(n)]
    pipe = mq.redis.pipeline()
    for i, job_id in enumerate(ids):
        pipe.hset(keys.job(job_id), mapping={"state": "done", "attempts": "1", "payload": f'{{"n": {i}}}'})
        pipe.zadd(keys.done, {job_id: 1000 + i // 3})  # three jobs share each score
    pipe.execute()
    return ids


def test_offset_pages_walk_the_set_in_score_order(any_mq: EchoMQ) -> None:
    ids = _fill(any_mq, 30)

    first = any_mq.page("q", "done", offset=0, limit=10)
    third = any_mq.page("q", "done", offset=20, limit=10)

    assert [r.id for r in first.rows] == ids[:10]
    assert [r.id for r in third.rows] == ids[20:]
    assert (first.total, first.has_more, third.has_more) == (30, True, False)
    assert first.rows[0].payload_head == b'{"n": 0}'


def test_a_cursor_page_does_not_shift_when_earlier_jobs_leave(mq: EchoMQ) -> None:
    ids = _fill(mq, 30)
    first = mq.page("q", "done", limit=10)
    for job_id in ids[:5]:
        mq.delete("q", job_id, expect_state="done")

    second = mq.page("q", "done", after=first.rows[-1].cursor, limit=10)

    assert [r.id for r in second.rows] == ids[10:20]


def test_a_cursor_whose_job_moved_on_resumes_after_its_place(mq: EchoMQ) -> None:
    ids = _fill(mq, 30)
    first = mq.page("q", "done", limit=10)
    mq.delete("q", ids[9], expect_state="done")  # the cursor's own job leaves

    second = mq.page("q", "done", after=first.rows[-1].cursor, limit=10)

    assert [r.id for r in second.rows] == ids[10:20]


def test_before_gives_the_previous_page(mq: EchoMQ) -> None:
    ids = _fill(mq, 30)

    previous = mq.page("q", "done", before=f"{1000 + 20 // 3}:{ids[20]}", limit=10)

    assert [r.id for r in previous.rows] == ids[10:20]


def test_descending_order_shows_the_newest_first(any_mq: EchoMQ) -> None:
    ids = _fill(any_mq, 12)

    page = any_mq.page("q", "done", order="desc", limit=5)
    after = any_mq.page("q", "done", order="desc", after=page.rows[-1].cursor, limit=5)

    assert [r.id for r in page.rows] == ids[::-1][:5]
    assert [r.id for r in after.rows] == ids[::-1][5:10]


@pytest.mark.parametrize("where", [{"after": "nonsense"}, {"after": "12:a{b}"}, {"limit": 0}, {"limit": 501},
                                   {"offset": -1}, {"order": "sideways"}])
def test_bad_page_requests_are_refused(mq: EchoMQ, where: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        mq.page("q", "done", **where)  # type: ignore[arg-type]


def test_a_bad_state_is_refused(mq: EchoMQ) -> None:
    with pytest.raises(InvalidInput):
        mq.page("q", "sleeping")


def test_a_large_payload_shows_its_preview_and_length_without_being_read(mq: EchoMQ) -> None:
    big = ('{"text": "' + "é" * 200_000 + '"}').encode()
    mq.enqueue("q", big, job_id="big")
    mq.enqueue("q", "small", job_id="small")

    rows = {r.id: r for r in mq.page("q", "pending", payload_head=4096).rows}

    assert rows["big"].payload_source == "preview" and rows["big"].payload_length == len(big)
    assert big.startswith(rows["big"].payload_head) and len(rows["big"].payload_head) <= 256
    rows["big"].payload_head.decode()  # cut at a character boundary
    assert (rows["small"].payload_source, rows["small"].payload_head) == ("payload", b"small")


def test_a_large_payload_written_without_a_preview_shows_its_length_only(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("foreign"), mapping={"state": "pending", "attempts": "0", "payload": "x" * 5000,
                                                "last_error": "e" * 10_000})
    mq.redis.zadd(keys.pending, {"foreign": 1})

    [row] = mq.page("q", "pending").rows

    assert (row.payload_source, row.payload_head, row.payload_length) == ("none", b"", 5000)
    assert (row.last_error, row.last_error_length) == ("", 10_000)


def test_a_row_whose_key_is_not_a_hash_says_so_and_the_page_still_answers(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.set(keys.job("odd"), "text")
    mq.redis.zadd(keys.pending, {"odd": 1, "gone": 2})
    mq.enqueue("q", "fine", job_id="fine")

    rows = {r.id: r for r in mq.page("q", "pending").rows}

    assert (rows["odd"].key_type, rows["odd"].exists, rows["odd"].state) == ("string", True, "")
    assert (rows["gone"].key_type, rows["gone"].exists) == ("none", False)
    assert rows["fine"].state == "pending"


def test_a_score_of_infinity_pages_as_the_largest_integer(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("never"), mapping={"state": "done", "attempts": "1", "payload": "x"})
    mq.redis.zadd(keys.done, {"never": float("inf")})

    [row] = mq.page("q", "done").rows

    assert row.score == 10**15
