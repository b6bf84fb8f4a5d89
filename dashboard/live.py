"""Live pages: which fragments of an open page to re-render when the follower reports a change.

Each open page holds one WebSocket (see :mod:`dashboard.consumers`); its
``LivePage`` says which queues it watches, renders every fragment once when it
connects, and afterwards only the fragments that a change touches. The
fragments are the page's own templates, sent with ``hx-swap-oob`` so that
htmx's ws extension swaps each into place by id.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from django.template.loader import render_to_string

from queues import EmqError, InvalidInput, validate_job_id, why
from queues.deploys import DeployMark, deploy_marks
from queues.follower import Follower, Update
from queues.keys import parse_job_id_token
from queues.reads import QueueStats

from . import presenters, rows as row_html
from .census import CensusPass, census_pass
from .pages.job import read_job_page_async
from .pages.overview import OverviewPageData, overview_page_data, overview_window
from .pages.queue import read_queue_page_async
from .redaction import MASKED_READER, Reader
from .why_line import overview_reasons_async, why_context, why_down

MESSAGE_MAX_BYTES = presenters.MESSAGE_MAX_BYTES
FILTER_MAX = presenters.FILTER_MAX


class Unreadable(EmqError):
    """A queue's last read failed, in words the follower or the census kept."""


def _render(template: str, context: dict[str, Any]) -> str:
    return render_to_string(template, {**context, "oob": True})


def _common(follower: Follower, now_ms: int, *, status: bool) -> str:
    html = _render("dashboard/_clock.html", {"now_ms": now_ms or follower.now_ms})
    if status:
        html += _render("dashboard/_redis_status.html",
                        {"redis_down": follower.up is False, "redis_error": follower.error})
    return html


def _why_down(follower: Follower) -> str:
    return _render("dashboard/_why_line.html", why_down(follower.error))


class LivePage(ABC):
    # The queues this page watches; None: every registered queue.
    queues: frozenset[str] | None
    # A read for this page failed (Redis went away mid-render, or a pooled
    # connection was stale after a restart): render everything at the next update.
    stale: bool = False
    # Who reads the page (its socket sets it, and follows the user's role): until then, as a viewer.
    reader: Reader = MASKED_READER

    @abstractmethod
    async def full(self, follower: Follower) -> list[str]:
        """Every live fragment of the page (on connect, and after Redis comes back)."""

    @abstractmethod
    async def changed(self, follower: Follower, update: Update) -> list[str]:
        """The fragments this update touches (WebSocket messages; empty: nothing to send)."""

    def hear(self, message: dict[str, Any]) -> bool:
        """Takes what the page says about itself; True when it should be rendered again at once."""
        return False


class OverviewPage(LivePage):
    """One page of the overview: the queues its filter, sort and offset pick from the census, read live."""

    def __init__(self, query: presenters.OverviewQuery | None = None, census: CensusPass | None = None) -> None:
        self.query = query or presenters.OverviewQuery()
        self.census = census or census_pass()
        self.queues = frozenset()
        # The names the page's slice held at the last table sent.
        self.window: list[str] | None = None
        # Each row's HTML as the page last got it: a push sends only the rows that differ.
        self.sent: dict[str, str] = {}
        # The next table answers the operator's own filter: the page shows it at once, pointer or not.
        self.asked = False
        # The rows' why reasons, read for the names on screen; again on the follower's tick or for other names.
        self.reasons: dict[str, why.Reason] = {}
        self.reasons_for: list[str] | None = None
        # The deploy marks the moves chart draws, read again on the follower's tick.
        self.marks: list[DeployMark] = []

    def hear(self, message: dict[str, Any]) -> bool:
        """The operator typed in the filter box: the table is sent again, filtered as the URL says."""
        text = message.get("filter")
        if not isinstance(text, str) or text.strip()[:FILTER_MAX] == self.query.filter:
            return False
        self.query = self.query.with_filter(text)
        self.asked = True
        return True

    def _data(self, follower: Follower, names: list[str], total: int) -> OverviewPageData:
        census = self.census.census
        readings = census.readings(names)
        results: list[QueueStats | Exception | None] = []
        for name in names:
            # The fresher of the follower's reading (the page's own queues) and the census's.
            reading = readings.get(name)
            candidates = [s for s in (follower.stats.get(name), reading) if isinstance(s, QueueStats)]
            error = follower.errors.get(name) or (reading if isinstance(reading, str) else "")
            if candidates:
                results.append(max(candidates, key=lambda s: s.now_ms))
            else:
                results.append(Unreadable(error) if error else None)
        return overview_page_data(census, self.query, names, total, results, now_ms=follower.now_ms,
                                  throughput=follower.throughput, reasons=self.reasons, cluster=follower.cluster,
                                  locations=follower.locations, marks=self.marks)

    async def _read_reasons(self, follower: Follower, names: list[str], *, again: bool) -> None:
        if follower.mq is not None and (again or names != self.reasons_for):
            self.reasons, self.reasons_for = await overview_reasons_async(follower.mq, names), names

    async def _read_marks(self, follower: Follower) -> None:
        """The deploy marks of the moves chart's window (the newest 20: bounded); kept when Redis does not answer."""
        if follower.mq is None or not follower.now_ms:
            return
        window_ms = follower.throughput.buckets * follower.throughput.bucket_s * 1000
        try:
            found = await follower.mq.run(deploy_marks(since_ms=max(follower.now_ms - window_ms, 0),
                                                       until_ms=follower.now_ms + window_ms, limit=20, newest=True))
        except EmqError:
            return
        self.marks = found.marks

    def _summary(self, data: OverviewPageData) -> str:
        return _render("dashboard/_overview_summary.html", {"totals": data.totals})

    def _table(self, data: OverviewPageData, names: list[str]) -> list[str]:
        self.window = names
        context = row_html.overview_table_context(self.query, data.total, data.rows, cluster=data.cluster)
        shown: list[presenters.QueueRow] = context["rows"]  # type: ignore[assignment]
        self.queues = frozenset(row.name for row in shown)
        self.sent = {row.name: row_html.overview_row(row, cluster=data.cluster) for row in shown}
        context["asked"], self.asked = self.asked, False
        chunks: list[str] = context["row_chunks"]  # type: ignore[assignment]
        # A page too large for one message: its table comes in parts, which the page puts together.
        parts = len(chunks) + 1
        return [_render("dashboard/_overview_table.html", {**context, "rows_html": context["first_rows_html"],
                                                            "parts": parts}),
                *(_render("dashboard/_overview_table_part.html", {"rows_html": chunk, "part": n + 2, "parts": parts})
                  for n, chunk in enumerate(chunks))]

    async def full(self, follower: Follower) -> list[str]:
        self.census.wanted()
        self.stale = self.census.census.names is None
        names, total = overview_window(self.census.census, self.query)
        await self._read_reasons(follower, names, again=True)
        if follower.up is not False:
            await self._read_marks(follower)
        data = self._data(follower, names, total)
        return [_common(follower, 0, status=True) + self._summary(data), *self._table(data, names)]

    async def changed(self, follower: Follower, update: Update) -> list[str]:
        self.census.wanted()
        if update.stats:
            self.census.census.absorb_many(list(update.stats), list(update.stats.values()))
        names, total = overview_window(self.census.census, self.query)
        if follower.up is not False:
            await self._read_reasons(follower, names, again=update.tick)
            if update.tick:
                await self._read_marks(follower)
        data = self._data(follower, names, total)
        messages = [_common(follower, 0, status=update.up is not None) + self._summary(data)]
        rows = data.rows
        html = [row_html.overview_row(row, cluster=data.cluster) for row in rows]
        if self.stale or update.up is True or names != self.window:
            # Other queues or another order: the whole table.
            self.stale = self.census.census.names is None
            messages.extend(self._table(data, names))
            return messages
        differ = [row for row, text in zip(rows, html) if text != self.sent.get(row.name)]
        if differ:
            self.sent.update((row.name, text) for row, text in zip(rows, html))
            # Table rows travel alone: mixed with <div>s, the HTML parser would drop their tags. Each swaps
            # into place by its id, so rows that differ come in as many messages as they need.
            oob = [row_html.overview_row(row, cluster=data.cluster, oob=True) for row in differ]
            messages.extend(row_html.message_chunks(oob))
        return messages


class QueuePage(LivePage):
    def __init__(self, window: presenters.Window) -> None:
        self.window = window
        self.queues = frozenset([window.queue])
        # The jobs whose rows the page shows (it keeps them while the operator works in the table).
        self.shown: list[str] = []
        # The summary's context as last sent: while Redis is down its counts are sent again marked stale.
        self.last: dict[str, Any] | None = None

    def hear(self, message: dict[str, Any]) -> bool:
        """The page says which rows it shows: each push then also says where those jobs are now."""
        ids = message.get("shown")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            return False
        try:
            # No more than the page can show: the answer says where each of them is now.
            # (Each as the rows name it: an id that is not UTF-8 as {HEX}.)
            shown = [validate_job_id(parse_job_id_token(i)) for i in dict.fromkeys(ids)][:self.window.limit]
        except InvalidInput:
            return False
        changed = shown != self.shown
        self.shown = shown
        return changed

    async def full(self, follower: Follower) -> list[str]:
        if follower.mq is None or follower.up is False:
            return [_common(follower, 0, status=True) + _why_down(follower) + self._stale_summary()]
        try:
            data = await read_queue_page_async(follower.mq, self.window, reader=self.reader, shown=self.shown)
        except EmqError as error:
            self.stale = True
            return [_common(follower, 0, status=True) + _render("dashboard/_why_line.html", why_down(str(error)))
                    + self._stale_summary()]
        self.stale = False
        context = row_html.queue_page_context(self.window, data.stats, data.page, follower.throughput,
                                              elsewhere=data.elsewhere)
        self.last = context
        chunks: list[str] = context["row_chunks"]  # type: ignore[assignment]
        # A page too large for one message: its table comes in parts, which the page puts together.
        first = {**context, "rows_html": context["first_rows_html"], "parts": len(chunks) + 1}
        return [_common(follower, data.page.now_ms, status=True)
                + _render("dashboard/_why_line.html", why_context(data.why))
                + _render("dashboard/_queue_workers.html", {"queue_workers": data.workers})
                + _render("dashboard/_queue_summary.html", context)
                + _render("dashboard/_queue_jobs.html", first),
                *(_render("dashboard/_queue_jobs_part.html", {"rows_html": chunk, "part": n + 2,
                                                               "parts": len(chunks) + 1})
                  for n, chunk in enumerate(chunks))]

    async def changed(self, follower: Follower, update: Update) -> list[str]:
        if follower.up is False:
            return [_common(follower, 0, status=True) + _why_down(follower) + self._stale_summary()] \
                if update.up is not None else []
        if self.stale or update.changed(self.window.queue) or update.tick or update.up is not None:
            return await self.full(follower)
        return []


    def _stale_summary(self) -> str:
        """The last counts sent, marked stale with their age: never a zero, never passed off as now."""
        if self.last is None:
            # Redis stopped between the page's render and its first push: the counts on screen are the render's.
            return _render("dashboard/_figures_mark.html", {"figures_stale": True, "mark_alone": True})
        return _render("dashboard/_queue_summary.html", {**self.last, "figures_stale": True})


class JobPage(LivePage):
    def __init__(self, queue: str, job_id: str) -> None:
        self.queue, self.job_id = queue, job_id
        self.queues = frozenset([queue])

    async def full(self, follower: Follower) -> list[str]:
        if follower.mq is None or follower.up is False:
            return [_common(follower, 0, status=True) + _why_down(follower)]
        try:
            data = await read_job_page_async(follower.mq, self.queue, self.job_id, reader=self.reader)
        except EmqError as error:
            self.stale = True
            return [_common(follower, 0, status=True) + _render("dashboard/_why_line.html", why_down(str(error)))]
        self.stale = False
        detail = presenters.job_detail(data)
        return [_common(follower, data.view.now_ms, status=True)
                + _render("dashboard/_why_line.html", why_context(data.why))
                + _render("dashboard/_job_core.html", {"detail": detail})
                + _render("dashboard/_job_history.html", {"detail": detail})]

    async def changed(self, follower: Follower, update: Update) -> list[str]:
        if follower.up is False:
            return [_common(follower, 0, status=True) + _why_down(follower)] if update.up is not None else []
        if self.stale or update.job_changed(self.queue, self.job_id) or update.up is not None:
            return await self.full(follower)
        if update.tick or update.changed(self.queue):
            # A worker's death or a lease lapse writes no event of this job: the line follows the clock too.
            return [await self._why(follower)]
        return []

    async def _why(self, follower: Follower) -> str:
        if follower.mq is None:
            return _why_down(follower)
        return _render("dashboard/_why_line.html", why_context(await follower.mq.job_why(self.queue,
                                                                                        self.job_id)))
