"""Bad names, ids and payloads are refused with a clear error and change nothing."""

from __future__ import annotations

import pytest

from queues import EchoMQ, InvalidInput


@pytest.mark.parametrize("job_id", ["", "a{b}", "a}b", "line\nbreak", "sp ace", "x" * 257, 42])
def test_bad_job_ids_are_refused(mq: EchoMQ, job_id: object) -> None:
    with pytest.raises(InvalidInput):
        mq.enqueue("q", "x", job_id=job_id)  # type: ignore[arg-type]
    assert mq.redis.dbsize() == 0


@pytest.mark.parametrize("payload", [None, 42, {"a": 1}, b"x" * (1024 * 1024 + 1)])
def test_bad_payloads_are_refused(mq: EchoMQ, payload: object) -> None:
    with pytest.raises(InvalidInput):
        mq.enqueue("q", payload)
    assert mq.redis.dbsize() == 0


@pytest.mark.parametrize("kwargs", [{"delay_ms": -1}, {"delay_ms": "soon"}, {"max_attempts": 0}])
def test_bad_enqueue_options_are_refused(mq: EchoMQ, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        mq.enqueue("q", "x", **kwargs)  # type: ignore[arg-type]
    assert mq.redis.dbsize() == 0


def test_binary_payloads_and_ids_with_colons_are_kept_exactly(mq: EchoMQ) -> None:
    mq.enqueue("q", b"\xff\x00\xfe", job_id="user:42")

    [job] = mq.claim("q")

    assert (job.id, job.payload) == ("user:42", b"\xff\x00\xfe")
    assert "the payload is not UTF-8 text (shown as bytes)" in mq.job("q", "user:42").warnings
