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
