"""Jobs as another runtime may write them: the three core fields only, values unchecked, no script, no event.

EchoMQ never writes a job this way. The demo seeds a few so that the console's
warnings for odd jobs (a non-numeric attempts, an unknown state, a binary
payload) can be seen, and tests use it to check that such jobs are shown as
they are rather than as an error.
"""

from __future__ import annotations

from .client import EchoMQ
from .keys import QUEUE_REGISTRY, QueueKeys, State, validate_job_id, validate_queue_name


def write_foreign_job(mq: EchoMQ, queue: str, job_id: str, *, state: str, attempts: str, payload: bytes | str,
                      listed_in: State = "pending") -> None:
    """HSET of ``state``, ``attempts`` and ``payload`` as given, listed in ``listed_in`` as due now."""
    keys = QueueKeys(validate_queue_name(queue))
    job_id = validate_job_id(job_id)
    now_ms = mq.server_time_ms(queue)
    mq.redis.hset(keys.job(job_id), mapping={"state": state, "attempts": attempts, "payload": payload})
    mq.redis.zadd(keys.state_set(listed_in), {job_id: now_ms})
    mq.redis.sadd(QUEUE_REGISTRY, queue)
