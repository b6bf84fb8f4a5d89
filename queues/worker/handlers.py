"""What the worker runs: a handler loaded from ``module:callable``, its error text, and the threads of sync handlers."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
import threading
import traceback
from collections import deque
from collections.abc import Awaitable, Callable
from queue import Empty, SimpleQueue
from typing import Any

from ..errors import InvalidInput
from ..moves import ClaimedJob

Handler = Callable[[ClaimedJob], Any | Awaitable[Any]]

MAX_ERROR_CHARS = 2000


def load_handler(spec: str) -> Handler:
    """Imports ``"package.module:callable"`` (the callable may be dotted: ``mod:Class.method``)."""
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise InvalidInput(f"handler must be written module:callable (e.g. myapp.jobs:send_mail), not {spec!r}")
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InvalidInput(f"handler must be written module:callable (e.g. myapp.jobs:send_mail), not {spec!r}")
    # A console script does not put the working directory on sys.path, but
    # handlers usually live in the project the worker is started from.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            raise InvalidInput(f"handler {spec!r}: no module named {error.name!r} (is it on PYTHONPATH?)") from error
        raise InvalidInput(f"handler {spec!r}: importing {module_name!r} failed: {error}") from error
    except Exception as error:
        raise InvalidInput(f"handler {spec!r}: importing {module_name!r} failed: "
                           f"{type(error).__name__}: {error}") from error
    walked = module_name
    for part in attribute.split("."):
        if not part.isidentifier():
            raise InvalidInput(f"handler {spec!r}: {attribute!r} is not a dotted name")
        try:
            target = getattr(target, part)
        except AttributeError:
            raise InvalidInput(f"handler {spec!r}: {walked!r} has no attribute {part!r}") from None
        walked = f"{walked}.{part}" if walked != module_name else f"{module_name}:{part}"
    if not callable(target):
        raise InvalidInput(f"handler {spec!r} is not callable (it is a {type(target).__name__})")
    return target  # type: ignore[no-any-return]


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (a worker's many small round trips cost less on it)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def is_async(handler: Handler) -> bool:
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "__call__", None))  # noqa: B004 - an object with an async __call__


def error_text(error: BaseException) -> str:
    """What a failed job keeps as ``last_error``: the exception and where it was raised, bounded."""
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    frames = traceback.extract_tb(error.__traceback__)
    if frames:
        last = frames[-1]
        text += f" (at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 3] + "..."


class HandlerThreads:
    """``count`` threads running a sync handler; each job's outcome lands on a future of the loop.

    A job goes to the threads through one queue and its outcome comes back
    through a deque; the loop is woken once for all the outcomes that arrived
    since its last wake-up, not once per job as ``run_in_executor`` does.
    """

    def __init__(self, handler: Callable[[ClaimedJob], Any], count: int, name: str,
                 loop: asyncio.AbstractEventLoop) -> None:
        self._handler = handler
        self._loop = loop
        self._jobs: SimpleQueue[tuple[ClaimedJob, asyncio.Future[Any]] | None] = SimpleQueue()
        self._done: deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = deque()
        self._lock = threading.Lock()
        self._wake_pending = False
        self._busy = 0
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{n}", daemon=True) for n in range(count)]
        for thread in self._threads:
            thread.start()

    def submit(self, job: ClaimedJob) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self._loop.create_future()
        self._jobs.put((job, future))
        return future

    def busy(self) -> bool:
        """Whether a handler is still running (a thread cannot be stopped)."""
        return self._busy > 0

    def shutdown(self) -> None:
        """Idle threads end; a job not yet started is dropped (its lease was handed back or lost)."""
        while True:
            try:
                item = self._jobs.get_nowait()
            except Empty:
                break
            if item is not None:
                item[1].cancel()
        for _ in self._threads:
            self._jobs.put(None)

    def _work(self) -> None:
        while (item := self._jobs.get()) is not None:
            job, future = item
            with self._lock:
                self._busy += 1
            try:
                outcome: tuple[asyncio.Future[Any], Any, BaseException | None] = (future, self._handler(job), None)
            except BaseException as error:  # the handler's error is the job's outcome
                outcome = (future, None, error)
            with self._lock:
                self._busy -= 1
                self._done.append(outcome)
                wake, self._wake_pending = not self._wake_pending, True
            if wake:
                try:
                    self._loop.call_soon_threadsafe(self._deliver)
                except RuntimeError:  # the loop is closed: the worker has stopped
                    return

    def _deliver(self) -> None:
        with self._lock:
            self._wake_pending = False
            done, self._done = self._done, deque()
        for future, result, error in done:
            if future.done():
                continue
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


__all__ = ["Handler", "HandlerThreads", "error_text", "event_loop_factory", "is_async", "load_handler"]
