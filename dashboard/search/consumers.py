"""The socket behind a search's results: it runs the search step by step and streams what each step finds.

One socket is one search. Each step is one bounded script call, run on a
thread with the console's sync client; between two steps the socket checks
whether the person pressed Stop or left (a closed socket cancels the run), so
a search costs Redis nothing once nobody is looking. A person's searches and the
process's are bounded in number, and paced by one duty cycle (``budget``): a
search beyond the bound waits its turn, saying so. Matches are appended to
the page's list (new items go below the ones already shown, so nothing moves
under the pointer); progress is re-rendered at most every PROGRESS_EVERY_S.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import replace
from typing import Any, Final

from channels.db import database_sync_to_async
from django.conf import settings
from django.template.loader import render_to_string

from queues import EmqError, InvalidInput
from queues.search import MATCH_MOVES, Limits, Match, Search, Step

from ..actions import access
from ..consumers import BAD_REQUEST, ClosedTabTolerant, accept_signed_in, watch_user
from ..redaction import masked_matches, masked_text_keeper, read_maskers, reader_for, search_problem
from ..services import emq, read
from .budget import SLOTS, SearchBusy, console_limits, process_pacer
from .items import match_messages
from .requests import SearchRequest, count_token, counts_token, queue_counts_text, valid_run_token

log = logging.getLogger(__name__)

PROGRESS_EVERY_S: Final = 0.25
# How often a search waiting for a free slot looks again.
WAIT_POLL_S: Final = 0.5
# Shown on the page in full; the rest are counted (what a bulk action over the search would move).
SHOWN: Final = 500
LIMITS: Final = Limits(max_queues=100, max_matches=200_000, seconds=120.0, detail=SHOWN)


def limits(*, checked: bool = False) -> Limits:
    return console_limits(replace(LIMITS, step_entries=settings.EMQ_SEARCH_STEP_ENTRIES), checked=checked)


class SearchConsumer(ClosedTabTolerant):
    # What a client may send on this socket: {"action": "cancel"} (Stop).
    MESSAGE_TYPES: Final[tuple[str, ...]] = ("cancel",)
    token: str
    search_request: SearchRequest
    engine: Search | None = None
    task: asyncio.Task[None] | None = None
    watcher: asyncio.Task[None] | None = None
    cancelled: bool = False

    async def connect(self) -> None:
        params = await accept_signed_in(self)
        if params is None:
            return
        try:
            if not valid_run_token(params.get("run", "")):
                raise InvalidInput("run token missing")
            # The page resolved every time into server ms already, so "now" plays no part here.
            self.search_request = SearchRequest.parse(params, now_ms=0)
        except InvalidInput:
            await self.close(code=BAD_REQUEST)
            return
        self.token = params["run"]
        self.task = asyncio.create_task(self._run())
        # A logout or deactivation ends the search within seconds (the socket closes with 4401).
        self.watcher = watch_user(self)

    async def disconnect(self, code: int) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
        self.cancelled = True
        if self.engine is not None:
            self.engine.stop("the page was closed")
        if self.task is not None:
            self.task.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message: Any = json.loads(text_data or "")
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("action") == "cancel":
            self.cancelled = True
            if self.engine is not None:
                self.engine.stop("stopped by you")

    def _context(self, **extra: Any) -> dict[str, Any]:
        return {"token": self.token, "engine": self.engine, "search": self.search_request, "shown": SHOWN,
                "oob": True, **extra}

    async def _run(self) -> None:
        try:
            await self._search()
        except asyncio.CancelledError:
            raise
        except EmqError as error:
            await self.send(text_data=self._progress(error=str(error)))
            await self.close(code=1000)
        except Exception:
            log.exception("a search failed")
            # Said, and closed normally: the ws extension opens a socket closed with 1011 again, and a search
            # that fails the same way would then start over and over, each time reading Redis again.
            await self.send(text_data=self._progress(
                error="the search failed in the console (its log says why): search again to try once more"))
            await self.close(code=1000)

    async def _search(self) -> None:
        request = self.search_request
        names = [request.queue] if request.queue else request.queues(
            await asyncio.to_thread(read, lambda mq: mq.known_queues().names))
        if not names:
            await self.send(text_data=self._progress(error=f"no queue name holds {request.queue_filter!r}"))
            await self.close(code=1000)
            return
        reader = await database_sync_to_async(reader_for)(self.scope["user"])
        maskers = await asyncio.to_thread(read_maskers, reader, names[:limits().max_queues])
        problem = search_problem(request.query, maskers)
        if problem:
            await self.send(text_data=self._progress(error=problem))
            await self.close(code=1000)
            return
        if not await self._take_slot():
            return
        try:
            await self._run_search(names, maskers)
        finally:
            SLOTS.give(self._user_key())

    def _user_key(self) -> object:
        return self.scope["user"].pk

    async def _take_slot(self) -> bool:
        """Waits for a free search slot, saying why while it waits; False when the person stopped or left."""
        told = ""
        while not self.cancelled:
            try:
                SLOTS.take(self._user_key())
                return True
            except SearchBusy as busy:
                if str(busy) != told:
                    told = str(busy)
                    waiting = f"{busy}; this one starts when one of them ends or is stopped"
                    await self.send(text_data=self._progress(waiting=waiting))
            await asyncio.sleep(WAIT_POLL_S)
        return False

    async def _run_search(self, names: list[str], maskers: dict[str, Any]) -> None:
        request = self.search_request
        keep = masked_text_keeper(request.query, maskers)
        bounds = limits(checked=keep is not None)
        self.engine = engine = Search(request.query, names, bounds, pacer=process_pacer(), keep=keep)
        mq = emq()
        list_id = f"search-matches-{self.token}"
        # The first message empties the list: after a reconnect the search starts again from the top.
        await self.send(text_data=self._progress() + f'<ol id="{list_id}" class="search-matches" '
                                                      'hx-swap-oob="true"></ol>')
        shown = 0
        buffered: list[Match] = []
        flushed_at = time.monotonic()
        while True:
            step: Step | None = None
            # The duty cycle's pause is slept here, not in a thread: a waiting search holds no worker thread.
            if not engine.finished:
                while (pause := engine.pause_s()) > 0:
                    await asyncio.sleep(pause)
                step = await asyncio.to_thread(engine.run_step, mq)
            if step is not None and shown < SHOWN:
                room = step.matches[:SHOWN - shown]
                buffered.extend(room)
                shown += len(room)
            now = time.monotonic()
            if step is None or now - flushed_at >= PROGRESS_EVERY_S:
                for message in match_messages(list_id, masked_matches(buffered, maskers), show_queue=not request.queue):
                    await self.send(text_data=message)
                buffered = []
                await self.send(text_data=self._progress(final=step is None))
                flushed_at = now
            if step is None:
                break
        await self.send(text_data=await self._act())
        await self.close(code=1000)

    async def _act(self) -> str:
        """The act buttons of a finished search: per queue that matched and that the user may act on, the moves
        of its state with that queue's count (each asks first, and runs as its own audited bulk run); over many
        queues, all of the user's, also the moves of every match at once (one confirmation, one run)."""
        engine, request, user = self.engine, self.search_request, self.scope["user"]
        assert engine is not None
        acts: list[dict[str, Any]] = []
        all_act: dict[str, Any] | None = None
        note = ""
        if engine.stopped.startswith("stopped at"):
            note = f"More than {engine.matched} jobs matched: narrow the search to act on its matches."
        elif engine.stopped:
            note = "The search did not run to its end, so there is no count to act on: search again to the end."
        elif not engine.matched:
            note = "Nothing matched: nothing to act on."
        else:
            moves = [m for m, states in MATCH_MOVES.items() if request.query.state in states]
            allowed: dict[str, list[str]] = {}
            for progress in engine.progress:
                if not progress.matched:
                    continue
                allowed[progress.queue] = await database_sync_to_async(_allowed_moves)(user, progress.queue, moves)
                if not allowed[progress.queue]:
                    continue
                one = SearchRequest(request.query, progress.queue)
                acts.append({"queue": progress.queue, "count": progress.matched, "params": list(one.params().items()),
                             "counted": count_token(one, count=progress.matched, user_id=user.pk),
                             "moves": allowed[progress.queue]})
            # The moves of every match at once: those the user may make on each of the queues.
            moves = [m for m in moves if all(m in queue_moves for queue_moves in allowed.values())]
            if not acts:
                note = "You may not act on the queues where it matched."
            matched_in = [p for p in engine.progress if p.matched]
            if len(matched_in) > 1 and len(acts) == len(matched_in) and moves:
                counts = {p.queue: p.matched for p in matched_in}
                all_act = {"count": engine.matched, "queues": len(counts), "params": list(request.params().items()),
                           "counts": queue_counts_text(counts), "moves": moves,
                           "counted": counts_token(request, counts=counts, user_id=user.pk)}
        return render_to_string("dashboard/search/_act.html", self._context(final=True, acts=acts, act_note=note,
                                                                            all_act=all_act,
                                                                            many=len(engine.queues) > 1))

    def _progress(self, **state: Any) -> str:
        """Where the search stands: ``final``, ``error`` or ``waiting`` (none of them: still searching)."""
        return render_to_string("dashboard/search/_progress.html", self._context(**state))


def _allowed_moves(user: Any, queue: str, moves: list[str]) -> list[str]:
    return [move for move in moves if access.may(user, move, queue)]
