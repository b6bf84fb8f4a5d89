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


@pytest.mark.parametrize("text", ["inf", "nan", "1e3", "0x3", " 5", "5 ", "+5", "1.0", "١٢٣", "100000000000000", ""])
def test_a_script_takes_integers_as_ascii_digits_only(mq: EchoMQ, text: str) -> None:
    from queues import QueueKeys
    from queues.moves import Call

    mq.enqueue("q", "x", job_id="a")
    before = mq.redis.dump(QueueKeys("q").pending)

    with pytest.raises(InvalidInput, match="lease_ms must be an integer in 1..86400000"):
        mq.run(Call("claim", QueueKeys("q").script_keys(None), [text, "ab", "w", "1"], lambda r: r))

    assert mq.redis.dump(QueueKeys("q").pending) == before


@pytest.mark.parametrize("text", ["١٢٣", " 5", "1e3", "+5", "5.0"])
def test_the_client_takes_integers_as_the_scripts_do(mq: EchoMQ, text: str) -> None:
    with pytest.raises(InvalidInput):
        mq.enqueue("q", "x", delay_ms=text)  # type: ignore[arg-type]
