"""Errors are values an operator can read; each maps to a CLI exit code."""

from __future__ import annotations


class EmqError(Exception):
    exit_code = 1


class InvalidInput(EmqError, ValueError):
    """A bad queue name, id, token, payload or argument; nothing was changed."""

    exit_code = 2


class NothingToClaim(EmqError):
    """claim found nothing claimable due.

    ``next_due_ms`` is when the earliest claimable pending job falls due (None
    when there is none; ``now_ms`` itself when the call ran out of budget
    before it could tell, which means "claim again now"); ``now_ms`` is the
    server's time, so a caller can sleep ``next_due_ms - now_ms`` without
    knowing its own clock's offset.
    """

    exit_code = 3

    def __init__(self, message: str, next_due_ms: int | None = None, now_ms: int | None = None) -> None:
        super().__init__(message)
        self.next_due_ms, self.now_ms = next_due_ms, now_ms

    @property
    def wait_ms(self) -> int | None:
        """How long until something may be claimable (0: now), or None when nothing is pending."""
        if self.next_due_ms is None or self.now_ms is None:
            return None
        return max(self.next_due_ms - self.now_ms, 0)


class Paused(NothingToClaim):
    """claim refused: the queue is paused (see :func:`queues.moves.pause`). Nothing was claimed.

    A worker idles as after an empty claim (``wait_ms`` is None: its poll
    interval) and claims again later; the CLI exits 3 with "paused".
    """

    def __init__(self, queue: str, since_ms: int | None, actor: str, reason: str) -> None:
        self.queue, self.since_ms, self.actor, self.reason = queue, since_ms, actor, reason
        by = f" by {actor}" if actor else ""
        why = f": {reason}" if reason else ""
        super().__init__(f"paused: queue {queue} is paused{by}{why}")


class Refused(EmqError):
    """A move whose preconditions no longer hold; the script changed nothing.

    ``reason`` is the script's word for it: missing, state, token, attempts,
    not_lapsed or not_delayed; a read's: wrongtype, too_large (a payload) or too_long (a history).
    """

    exit_code = 4

    def __init__(self, move: str, job_id: str, reason: str, state: str, attempts: str) -> None:
        self.move, self.job_id, self.reason = move, job_id, reason
        self.state, self.attempts = state, attempts
        if reason == "missing":
            # A script can tell "no such job" (a typo, a purged id) from "it moved on"; so can a caller.
            self.exit_code = JobMissing.exit_code
        super().__init__(self.describe())

    def describe(self) -> str:
        job = f"job {self.job_id}"
        if self.reason == "wrongtype":
            # The script's reply names the key (as state) and its type (as attempts).
            return (f"refused: {self.state} holds a {self.attempts}, not the type EchoMQ keeps there; nothing was "
                    "written (the key needs an operator: repair or delete it)")
        if self.reason == "too_large":
            return f"refused: the payload of {job} is {self.state} bytes, more than the {self.attempts} asked for"
        if self.move == "remove_key":
            # remove_key names the state set it was asked to remove as the job id, its type now as the state.
            if self.reason == "missing":
                return f"refused: the {self.job_id} set no longer exists; nothing was removed"
            held = "a sorted set again" if self.state == "zset" else f"a {self.state}"
            return f"refused: the {self.job_id} set holds {held} now, not what was shown; nothing was removed"
        if self.reason == "missing":
            return f"refused: {job} does not exist"
        if self.reason == "too_long":
            return f"refused: the history of {job} is {self.state} bytes, more than the {self.attempts} a read returns"
        where = f"{job} is now {self.state or 'without a state'} (attempts {self.attempts or '?'})"
        why = {
            "token": f"the lease is no longer yours: {where}",
            "attempts": f"it has moved on since it was shown: {where}",
            "not_lapsed": f"its lease has not lapsed yet: {where}",
            "not_delayed": f"it is already due: {where}",
            "running": f"{job} is active: its worker may be running it (attempts {self.attempts or '?'}); change it "
                       "once it has failed, or cancel it first",
            "unchanged": f"nothing would change: {where}, and already holds that payload",
            "max_attempts": f"max attempts must be above the attempts the job has made for it to run again: {where}",
            "keep_too_large": f"the payload of {job} is over 1 MiB, more than a kept version may hold, so it cannot "
                              "be replaced without being lost: download it first; nothing was written",
            "versions": f"the versions field of {job} was not written by EchoMQ scripts; nothing was written "
                        "(repair or delete the field)",
            "no_version": f"{job} keeps no such version (the oldest go first once 8 are kept): {where}",
            "exists": f"the new job id is taken: a job with it already exists ({self.state or 'no state'}, attempts "
                      f"{self.attempts or '?'}); nothing was written, choose another id",
            "no_payload": f"{job} has no payload field to clone (not written by EchoMQ scripts); give a payload",
            "payload_too_large": f"the payload of {job} is over 1 MiB, more than a job may hold: it cannot be cloned "
                                 "as it is; give a payload",
        }.get(self.reason, where)
        return f"refused: {why}"


class JobMissing(EmqError):
    """The job named does not exist in the queue (neither its hash nor any state's entry); nothing was changed."""

    exit_code = 7

    def __init__(self, queue: str, job_id: str) -> None:
        self.queue, self.job_id = queue, job_id
        super().__init__(f"job {job_id} does not exist in {queue}")


class Duplicate(EmqError):
    """enqueue found the id taken; nothing was written."""

    exit_code = 0

    def __init__(self, job_id: str, state: str, attempts: str) -> None:
        self.job_id, self.state, self.attempts = job_id, state, attempts
        super().__init__(f"job {job_id} already exists ({state}, attempts {attempts})")


class Unavailable(EmqError):
    """Redis could not be reached; whether a move ran is unknown."""


class OutOfMemory(EmqError):
    """Redis is over ``maxmemory``: it refused the script before running it, so nothing was written.

    Safe to send again once memory is freed; a worker backs off meanwhile.
    """

    exit_code = 6


class UnsupportedServer(EmqError):
    """The server is older than Redis 7.0, whose script flags the protocol needs."""


class NotReplicated(EmqError):
    """The move ran on the master, but fewer replicas than asked acknowledged it within the timeout.

    A failover before they catch up can undo it. ``result`` is what the move returned.
    """

    exit_code = 5

    def __init__(self, move: str, result: object, acked: int, wanted: int, timeout_ms: int) -> None:
        self.move, self.result, self.acked, self.wanted = move, result, acked, wanted
        super().__init__(f"{move} ran, but only {acked} of {wanted} replicas acknowledged it within {timeout_ms} ms;"
                         " a failover now could undo it")
