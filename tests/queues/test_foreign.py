"""Jobs written as another runtime might: shown as they are, with warnings, never as an error."""

from __future__ import annotations

from queues import EchoMQ
from queues.foreign import write_foreign_job


def test_a_foreign_job_holds_exactly_the_three_fields_it_was_given_and_its_queue_is_registered(mq: EchoMQ) -> None:
    write_foreign_job(mq, "legacy", "odd", state="limbo", attempts="two", payload=b"\x00\xff")

    view = mq.job("legacy", "odd")

    assert view.exists and (view.state, view.attempts, view.payload) == ("limbo", "two", b"\x00\xff")
    assert any("limbo" in w for w in view.warnings) and any("attempts" in w for w in view.warnings)
    assert "legacy" in mq.queues()
    assert mq.stats("legacy").counts["pending"] == 1
    assert mq.events("legacy") == []
