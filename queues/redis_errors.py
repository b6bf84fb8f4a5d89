"""What redis-py's exceptions mean for EchoMQ, said once.

Every client, the follower, the health checks and the locks turn what redis-py
raises into the project's errors (:mod:`queues.errors`) here, so a caller
outside ``queues`` meets only :class:`~queues.errors.EmqError` and never needs
to import redis-py to catch a lost connection.
"""

from __future__ import annotations

from typing import Final

import redis.exceptions

from .errors import EmqError, InvalidInput, OutOfMemory, Unavailable

# A failover or a resharding surfaces as CLUSTERDOWN, TRYAGAIN, an uncovered slot or
# redis-py's "TTL exhausted" after redirections: in each the script did not run
# or its outcome is unknown, as after a lost connection.
UNREACHABLE: Final = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.ClusterError,
                      redis.exceptions.TryAgainError, redis.exceptions.RedisClusterException, OSError)

# Replies that mean the script did not run, so sending it again is safe.
NOT_RUN: Final = (redis.exceptions.NoScriptError, redis.exceptions.MovedError, redis.exceptions.AskError,
                  redis.exceptions.TryAgainError)

# Replies that say the server did not run the script and will take it later: a replica that was a
# master (READONLY), a dataset still loading (LOADING), another script running too long (BUSY).
_NOT_NOW: Final = (redis.exceptions.ReadOnlyError, redis.exceptions.BusyLoadingError)

NoScriptError: Final = redis.exceptions.NoScriptError
ResponseError: Final = redis.exceptions.ResponseError
AskError: Final = redis.exceptions.AskError
MovedError: Final = redis.exceptions.MovedError


def translate(error: BaseException, doing: str) -> BaseException:
    """The project's error for ``error``, met while ``doing`` (a script's name, or a read in words).

    An :class:`EmqError` and anything that is not redis-py's (a bug, a cancellation) come back as they are.
    """
    if isinstance(error, EmqError):
        return error
    if isinstance(error, redis.exceptions.OutOfMemoryError):
        return OutOfMemory(f"redis is out of memory: {doing} was refused before it ran, nothing was written")
    if isinstance(error, UNREACHABLE):
        return Unavailable(f"redis unreachable during {doing}: {error}")
    if isinstance(error, _NOT_NOW) or (isinstance(error, redis.exceptions.ResponseError)
                                       and str(error).startswith("BUSY")):
        return Unavailable(f"redis did not run {doing} ({error}); it is safe to send again later")
    if isinstance(error, redis.exceptions.ResponseError) and "emq:" in str(error):
        return InvalidInput(str(error).split("emq: ", 1)[-1])
    if isinstance(error, redis.exceptions.AuthenticationError):
        return Unavailable(f"redis refused the connection during {doing}: {error}")
    if isinstance(error, redis.exceptions.RedisError):
        return EmqError(f"redis answered an error during {doing}: {error}")
    return error
