"""EchoMQ: a Redis job queue whose every state move is one Lua script.

The protocol is in PROTOCOL.md; this package is its Python runtime (no Django).
"""

from __future__ import annotations

from .client import AsyncEchoMQ, EchoMQ
from .errors import (
    Duplicate,
    EmqError,
    InvalidInput,
    NothingToClaim,
    OutOfMemory,
    Paused,
    Refused,
    Unavailable,
    UnsupportedServer,
)
from .keys import STATES, QueueKeys, validate_job_id, validate_queue_name
from .moves import BatchResult, ClaimedJob, FencingToken, MoveResult

__all__ = [
    "AsyncEchoMQ", "EchoMQ", "Duplicate", "EmqError", "InvalidInput", "NothingToClaim", "OutOfMemory", "Paused", "Refused",
    "Unavailable", "UnsupportedServer", "STATES", "QueueKeys", "validate_job_id", "validate_queue_name", "BatchResult",
    "ClaimedJob", "FencingToken", "MoveResult",
]
