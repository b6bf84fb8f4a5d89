"""Errors are values an operator can read; each maps to a CLI exit code."""

from __future__ import annotations


class EmqError(Exception):
    exit_code = 1


class InvalidInput(EmqError, ValueError):
    """A bad queue name, id, token, payload or argument; nothing was changed."""

    exit_code = 2


class NothingToClaim(EmqError):
    exit_code = 3


class Refused(EmqError):
    """A move whose preconditions no longer hold; the script changed nothing.

    ``reason`` is the script's word for it: missing, state, token, attempts,
    not_lapsed or not_delayed.
    """

    exit_code = 4

    def __init__(self, move: str, job_id: str, reason: str, state: str, attempts: str) -> None:
        self.move, self.job_id, self.reason = move, job_id, reason
        self.state, self.attempts = state, attempts
        super().__init__(self.describe())

    def describe(self) -> str:
        job = f"job {self.job_id}"
        if self.reason == "missing":
            return f"refused: {job} does not exist"
        where = f"{job} is now {self.state or 'without a state'} (attempts {self.attempts or '?'})"
        why = {
            "token": f"the lease is no longer yours: {where}",
            "attempts": f"it has moved on since it was shown: {where}",
            "not_lapsed": f"its lease has not lapsed yet: {where}",
            "not_delayed": f"it is already due: {where}",
        }.get(self.reason, where)
        return f"refused: {why}"


class Duplicate(EmqError):
    """enqueue found the id taken; nothing was written."""

    exit_code = 0

    def __init__(self, job_id: str, state: str, attempts: str) -> None:
        self.job_id, self.state, self.attempts = job_id, state, attempts
        super().__init__(f"job {job_id} already exists ({state}, attempts {attempts})")


class Unavailable(EmqError):
    """Redis could not be reached; whether a move ran is unknown."""


class NotReplicated(EmqError):
    """The move ran on the master, but fewer replicas than asked acknowledged it within the timeout.

    A failover before they catch up can undo it. ``result`` is what the move returned.
    """

    exit_code = 5

    def __init__(self, move: str, result: object, acked: int, wanted: int, timeout_ms: int) -> None:
        self.move, self.result, self.acked, self.wanted = move, result, acked, wanted
        super().__init__(f"{move} ran, but only {acked} of {wanted} replicas acknowledged it within {timeout_ms} ms;"
                         " a failover now could undo it")
