"""This console process's census of every queue (:mod:`queues.census`), read in the background.

One thread per process reads the registry when its size changes and the
queues' ``stats`` at most ``EMQ_CENSUS_CALLS_PER_S`` scripts a second (a pass
starts at most every ``EMQ_CENSUS_PASS_S``, so a few queues are not re-read in
a tight loop). At 10,000 queues and 200 calls/s a pass takes 50 s; the
overview says so. The thread sleeps when no overview was looked at for
``IDLE_AFTER_S``: a console nobody watches costs Redis nothing for it.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Final

from django.conf import settings

from queues import EchoMQ, Unavailable
from queues.census import Census

from .services import read, redis_url

log = logging.getLogger(__name__)

# The registry's size is looked at every NAMES_LOOK_S (SCARD) and its names read when it changed, and
# every NAMES_EVERY_S in any case (a queue gone and another come between two looks).
NAMES_LOOK_S: Final = 1.0
NAMES_EVERY_S: Final = 30.0
IDLE_AFTER_S: Final = 600.0
# The most scripts one pipelined step sends: small steps keep each one's Redis time short.
STEP_MAX: Final = 100
RETRY_S: Final = 1.0


@dataclass
class CensusPass:
    """The thread that keeps one :class:`Census` fresh at a bounded rate."""

    census: Census
    calls_per_s: float = 200.0
    pass_every_s: float = 5.0
    idle_after_s: float = IDLE_AFTER_S
    last_wanted: float = 0.0
    _wake: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wanted(self) -> None:
        """A page shows the census: keep reading (and start, on the first call)."""
        self.last_wanted = time.monotonic()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                # In the context of the page that wants it: the census reads that page's deployment.
                self._thread = threading.Thread(target=contextvars.copy_context().run, args=(self._run,),
                                                name="emq-census", daemon=True)
                self._thread.start()
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        next_names = next_look = 0.0
        pass_started = time.monotonic()
        while not self._stop.is_set():
            if time.monotonic() - self.last_wanted > self.idle_after_s:
                self._wake.clear()
                if time.monotonic() - self.last_wanted > self.idle_after_s:
                    self._wake.wait()
                continue
            started = time.monotonic()
            calls = 0
            try:
                if started >= next_names or self.census.names is None:
                    read(self.census.refresh_names)
                    next_names, next_look = started + NAMES_EVERY_S, started + NAMES_LOOK_S
                elif started >= next_look:
                    read(lambda mq: self.census.refresh_names(mq, force=False))
                    next_look = started + NAMES_LOOK_S
                if self.census.pass_done:
                    # Hold the pass interval: a few queues are not read again in a tight loop.
                    rest = pass_started + self.pass_every_s - time.monotonic()
                    if rest > 0:
                        self._stop.wait(min(rest, NAMES_LOOK_S))
                        continue
                    pass_started = time.monotonic()
                calls = read(self._step)
            except Unavailable as error:
                log.info("census: %s", error)
                self._stop.wait(RETRY_S)
                continue
            except Exception:  # a step that breaks must not end the thread: the next one tries again
                log.exception("census step failed")
                self._stop.wait(RETRY_S)
                continue
            # Hold the rate: `calls` scripts take at least calls / calls_per_s seconds.
            rest = calls / self.calls_per_s - (time.monotonic() - started)
            if rest > 0:
                self._stop.wait(rest)


    def _step(self, mq: EchoMQ) -> int:
        return self.census.step(mq, max(1, min(STEP_MAX, int(self.calls_per_s * 0.5))))


_passes: dict[str, CensusPass] = {}
_passes_lock = threading.Lock()


def census_pass() -> CensusPass:
    """This process's census of the current deployment's Redis (its thread starts on the first
    :meth:`CensusPass.wanted`)."""
    url = redis_url()
    with _passes_lock:
        found = _passes.get(url)
        if found is None:
            found = _passes[url] = CensusPass(Census(), calls_per_s=float(settings.EMQ_CENSUS_CALLS_PER_S),
                                              pass_every_s=float(settings.EMQ_CENSUS_PASS_S))
        return found


def census_reset() -> None:
    """Stops and forgets every census (tests point the console at another Redis)."""
    with _passes_lock:
        for found in _passes.values():
            found.stop()
        _passes.clear()
