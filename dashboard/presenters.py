"""What the templates show, built from what ``queues`` reads.

Views (sync, per request) and the live consumer (async, per change) fetch in
their own way and then build the same presenters, so a fragment pushed over
the WebSocket is exactly the fragment the page was first rendered with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypedDict
from urllib.parse import parse_qsl, urlencode

from queues import STATES, EmqError, InvalidInput
from queues.census import SORTS, CensusTotals
from queues.cluster import QueueLocation
from queues.deploys import DeployMark
from queues.follower import Throughput
from queues.moves import digits
from queues.reads import Event, JobRow, JobView, Page, QueueStats, payload_preview
from queues.why import Reason

from .monitoring.charts import mark_lines
from .pages.job import JobPageData

PAGE_SIZES: Final = (20, 50, 100, 200)
DEFAULT_PAGE_SIZE: Final = 50
# Oldest first where work waits (pending by due time, active by lease
# deadline); newest first where it has ended.
DEFAULT_ORDER: Final = {"pending": "asc", "active": "asc", "done": "desc", "failed": "desc"}
PAYLOAD_SHOWN: Final = 16 * 1024
PAYLOAD_ALL: Final = 1024 * 1024


def dom_id(prefix: str, name: str) -> str:
    """An HTML id for any queue name or job id (they may hold any printable character)."""
    return f"{prefix}-{name.encode(errors='surrogateescape').hex()}"


@dataclass(frozen=True, slots=True)
class Spark:
    """A throughput sparkline: moves per bucket, oldest first."""

    counts: list[int]
    bucket_s: int
    width: int = 120
    height: int = 22
    # Deploy marks in its window: (x, hover text), drawn as vertical lines.
    marks: tuple[tuple[float, str], ...] = ()

    @property
    def peak(self) -> int:
        return max(self.counts, default=0)

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def rate(self) -> float:
        """Moves per second over the last two whole buckets."""
        whole = self.counts[-3:-1]
        return sum(whole) / (len(whole) * self.bucket_s) if whole else 0.0

    @property
    def points(self) -> str:
        if not self.counts:
            return ""
        peak = self.peak or 1
        step = self.width / max(len(self.counts) - 1, 1)
        # Whole pixels: a row of the overview carries one of these, and its rows share 64 KiB messages.
        return " ".join(f"{round(i * step)},{round(self.height - 1 - (c / peak) * (self.height - 2))}"
                        for i, c in enumerate(self.counts))

    @property
    def bars(self) -> list[tuple[float, float, float, int]]:
        """(x, y, height, count) per bucket, for the bigger bar chart."""
        peak = self.peak or 1
        width = self.width / max(len(self.counts), 1)
        out = []
        for i, c in enumerate(self.counts):
            h = (c / peak) * (self.height - 1)
            out.append((round(i * width, 1), round(self.height - h, 1), round(h, 1), c))
        return out

    @property
    def bar_width(self) -> float:
        return round(self.width / max(len(self.counts), 1) - 1, 1)


def spark_for(throughput: Throughput | None, queue: str | None, now_ms: int, marks: Sequence[DeployMark] = (), *,
              width: int = 120, height: int = 22) -> Spark | None:
    if throughput is None:
        return None
    counts = throughput.total_series(now_ms) if queue is None else throughput.series(queue, now_ms)
    bucket_ms = throughput.bucket_s * 1000
    drawn = mark_lines(list(marks), start_ms=(now_ms // bucket_ms - len(counts) + 1) * bucket_ms,
                       span_ms=max(len(counts), 1) * bucket_ms, left=0, width=width)
    return Spark(counts, throughput.bucket_s, width, height, tuple(drawn))


@dataclass(frozen=True, slots=True)
class QueueRow:
    name: str
    stats: QueueStats | None
    error: str = ""
    location: QueueLocation | None = None
    spark: Spark | None = None
    # Its first why reason, read for the rows on screen (None: the column is off, or not read yet).
    reason: Reason | None = None
    # How old its counts are (the census may have read them a while ago), by the server's clock.
    age_ms: int = 0

    @property
    def dom_id(self) -> str:
        return dom_id("q", self.name)


def queue_rows(names: Sequence[str], results: Sequence[QueueStats | Exception | None],
               locations: Mapping[str, QueueLocation], throughput: Throughput | None, now_ms: int) -> list[QueueRow]:
    """A row per queue; a result of None: not read yet (a queue the page shows a moment before its read)."""
    rows = []
    for name, result in zip(names, results):
        if result is None:
            rows.append(QueueRow(name, None, "", locations.get(name)))
        elif isinstance(result, QueueStats):
            rows.append(QueueRow(name, result, "", locations.get(name), spark_for(throughput, name, now_ms),
                                 age_ms=max(now_ms - result.now_ms, 0) if now_ms else 0))
        else:
            rows.append(QueueRow(name, None, read_error_text(result), locations.get(name)))
    return rows


def read_error_text(error: Exception) -> str:
    """What a queue's failed read says, on the overview's row and in the API alike."""
    return str(error) if isinstance(error, EmqError) else f"{type(error).__name__}: {error}"


@dataclass(frozen=True, slots=True)
class Totals:
    queues: int
    counts: dict[str, int]
    due: int
    delayed: int
    lapsed: int
    unavailable: int
    spark: Spark | None
    # How many queues the sums cover (the rest are not read yet), and how old their oldest reading is.
    read: int = 0
    age_s: float | None = None
    last_pass_s: float | None = None

    @property
    def complete(self) -> bool:
        return self.read >= self.queues


def totals(census: CensusTotals, spark: Spark | None) -> Totals:
    """The overview's totals: every registered queue, as the background census last read it."""
    counts = {"pending": census.pending, "active": census.active, "done": census.done, "failed": census.failed}
    return Totals(census.queues, counts, census.due, census.delayed, census.lapsed, census.unreadable, spark,
                  census.read, census.age_s(), census.last_pass_s)


# No message a live page sends is longer (daphne refuses over 1 MiB; a page must never depend on one that
# would be): the fragments are bounded by construction (rows.overview_table_context, rows.queue_page_context).
MESSAGE_MAX_BYTES: Final = 64 * 1024
OVERVIEW_DEFAULT_SIZE: Final = 50
# The longest overview filter a page may set (a queue name is at most this long too).
FILTER_MAX: Final = 128
SORT_LABELS: Final = {"name": "name", "failed": "failed jobs", "due": "due backlog", "delayed": "delayed jobs",
                      "active": "active jobs", "done": "done jobs", "oldest": "oldest due wait",
                      "lapsed": "lapsed leases", "reason": "why"}


@dataclass(frozen=True, slots=True)
class OverviewQuery:
    """Which slice of the queues the overview shows: a filter, a sort and its direction, an offset, a size."""

    filter: str = ""
    sort: str = "name"
    descending: bool = False
    offset: int = 0
    limit: int = OVERVIEW_DEFAULT_SIZE

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> OverviewQuery:
        """The slice a link names; a sort, an order, an offset or a size the page cannot show is refused in words."""
        sort = query.get("sort") or "name"
        if sort not in SORTS:
            raise InvalidInput(f"unknown sort {sort!r}: sort by {', '.join(SORTS)}")
        order = query.get("order", "")
        if order not in ("", "asc", "desc"):
            raise InvalidInput(f"unknown order {order!r}: asc or desc")
        descending = order == "desc" if order else SORTS[sort] == "desc"
        offset_text, limit_text = query.get("offset", ""), query.get("limit", "")
        # As on a queue page: any size up to the largest offered, as the link says; one it cannot be, in words.
        offset = _offset(offset_text) if offset_text else 0
        limit = _page_size(limit_text) if limit_text else OVERVIEW_DEFAULT_SIZE
        return cls(query.get("filter", "").strip()[:FILTER_MAX], sort, descending, offset, limit)

    def with_filter(self, text: str) -> OverviewQuery:
        """The same sort and size with another filter, from the first row (the old offset means nothing now)."""
        return OverviewQuery(text.strip()[:FILTER_MAX], self.sort, self.descending, 0, self.limit)

    def query(self, **changes: object) -> str:
        """The URL query for this slice with ``changes`` (filter, sort, order, offset, limit); defaults left out."""
        params: dict[str, object] = {"filter": self.filter, "sort": self.sort,
                                     "order": "desc" if self.descending else "asc", "offset": self.offset,
                                     "limit": self.limit}
        params.update(changes)
        sort = str(params["sort"])
        if sort == "name":
            params["sort"] = None
        if params["order"] == SORTS.get(sort, "asc"):
            params["order"] = None
        if params["offset"] in (0, "0"):
            params["offset"] = None
        if params["limit"] == OVERVIEW_DEFAULT_SIZE:
            params["limit"] = None
        return urlencode({k: v for k, v in params.items() if v not in (None, "")})

    def sort_query(self, sort: str) -> str:
        """The link of a column's heading: its sort from the first row; again on the sorted column, reversed."""
        if sort == self.sort:
            return self.query(order="asc" if self.descending else "desc", offset=0)
        return self.query(sort=sort, order=SORTS[sort], offset=0)

    @property
    def kept_fields(self) -> list[tuple[str, str]]:
        """What the filter box's form sends beside the filter: the sort, its direction and the size."""
        return parse_qsl(self.query(filter="", offset=0))

    @property
    def size_fields(self) -> list[tuple[str, str]]:
        """What the page-size control sends beside the size: the filter, the sort and its direction."""
        return parse_qsl(self.query(offset=0, limit=OVERVIEW_DEFAULT_SIZE))

    @property
    def sort_label(self) -> str:
        if self.sort == "name":
            return "by name, " + ("Z to A" if self.descending else "A to Z")
        if self.sort == "oldest":
            return "by oldest due wait, " + ("longest first" if self.descending else "shortest first")
        if self.sort == "reason":
            # The census's counts order it (paused, lapsed leases, due by the oldest's wait); each row's why is exact.
            return "by why (paused, lapsed, longest due wait), " + ("worst first" if self.descending else "best first")
        return f"by {SORT_LABELS[self.sort]}, " + ("most first" if self.descending else "fewest first")


@dataclass(frozen=True, slots=True)
class OverviewPager:
    """Where the overview's page sits among the queues its filter keeps (``shown`` rows from ``offset``)."""

    query: OverviewQuery
    total: int
    shown: int

    @property
    def first_position(self) -> int:
        return self.query.offset + 1 if self.shown else 0

    @property
    def last_position(self) -> int:
        return self.query.offset + self.shown

    @property
    def previous_query(self) -> str | None:
        if self.query.offset <= 0:
            return None
        return self.query.query(offset=max(self.query.offset - self.query.limit, 0))

    @property
    def next_query(self) -> str | None:
        if self.last_position >= self.total or not self.shown:
            return None
        return self.query.query(offset=self.last_position)

    @property
    def first_query(self) -> str:
        return self.query.query(offset=0)

    @property
    def last_query(self) -> str | None:
        if self.last_position >= self.total:
            return None
        return self.query.query(offset=max(self.total - self.query.limit, 0))

    @property
    def sorts(self) -> dict[str, SortLink]:
        """Per column the overview sorts by: its heading's link and what it says of the order now."""
        links = {}
        for sort in SORTS:
            here = sort == self.query.sort
            aria = ("descending" if self.query.descending else "ascending") if here else "none"
            links[sort] = SortLink(self.query.sort_query(sort), aria, ("↓" if self.query.descending else "↑") if here else "")
        return links


@dataclass(frozen=True, slots=True)
class SortLink:
    query: str
    aria: str
    arrow: str


class PageWhere(TypedDict, total=False):
    order: str
    limit: int
    after: str
    before: str
    offset: int


# ASCII digits only: str.isdigit() and int() also take '²', '①' and '١٢٣'.
_DIGITS: Final = re.compile(r"[0-9]{1,14}")


def _page_size(text: str) -> int:
    """The rows a page shows: any whole number up to the largest size offered, as the link says."""
    if not text:
        return DEFAULT_PAGE_SIZE
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= PAGE_SIZES[-1]:
        raise InvalidInput(f"limit must be a whole number of rows from 1 to {PAGE_SIZES[-1]}, not {text!r}")
    return int(text)


def _offset(text: str) -> int:
    if not _DIGITS.fullmatch(text):
        raise InvalidInput(f"offset must be a whole number written in ASCII digits (at most 14), not {text!r}")
    return int(text)


@dataclass(frozen=True, slots=True)
class Window:
    """Which slice of a state a queue page shows: a cursor (or offset), an order and a size."""

    queue: str
    state: str
    order: str
    limit: int
    after: str | None = None
    before: str | None = None
    offset: int | None = None

    @classmethod
    def from_query(cls, queue: str, query: Mapping[str, str]) -> Window:
        state = query.get("state") or "pending"
        if state not in STATES:
            raise InvalidInput(f"unknown state {state!r}: a queue's jobs are {', '.join(STATES)}")
        order = query.get("order") or DEFAULT_ORDER[state]
        if order not in ("asc", "desc"):
            raise InvalidInput(f"unknown order {order!r}: asc or desc")
        limit = _page_size(query.get("limit", ""))
        offset_text = query.get("offset", "")
        offset = _offset(offset_text) if offset_text else None
        after, before = query.get("after") or None, query.get("before") or None
        if after:
            before = offset = None
        elif before:
            offset = None
        return cls(queue, state, order, limit, after, before, offset)

    def where(self) -> PageWhere:
        """Keyword arguments for ``EchoMQ.page``."""
        where: PageWhere = {"order": self.order, "limit": self.limit}
        if self.after:
            where["after"] = self.after
        elif self.before:
            where["before"] = self.before
        elif self.offset:
            where["offset"] = self.offset
        return where

    def query(self, **changes: object) -> str:
        params: dict[str, object] = {"q": self.queue, "state": self.state}
        if self.order != DEFAULT_ORDER[self.state]:
            params["order"] = self.order
        if self.limit != DEFAULT_PAGE_SIZE:
            params["limit"] = self.limit
        params.update(changes)
        return urlencode({k: v for k, v in params.items() if v not in (None, "")})

    def live_query(self) -> str:
        return self.query(after=self.after, before=self.before, offset=self.offset)


@dataclass(frozen=True, slots=True)
class JobLine:
    row: JobRow
    state: str
    now_ms: int
    payload_text: str
    payload_is_bytes: bool
    warnings: list[str]

    @property
    def dom_id(self) -> str:
        return dom_id("j", self.row.id)

    @property
    def is_delayed(self) -> bool:
        return self.state == "pending" and self.row.score > self.now_ms

    @property
    def is_lapsed(self) -> bool:
        return self.state == "active" and self.row.score < self.now_ms

    @property
    def payload_cut(self) -> bool:
        return self.row.payload_length > len(self.row.payload_head)


def job_lines(page: Page) -> list[JobLine]:
    lines = []
    for row in page.rows:
        warnings = []
        if not row.id_is_text:
            warnings.append("its id is not UTF-8 (its bytes are shown as \\xNN)")
        if not row.exists:
            warnings.append("its hash does not exist")
        elif row.state != page.state:
            warnings.append(f"its hash says state {row.state or '(none)'!r}")
        if row.exists and row.attempts and digits(row.attempts) is None:
            warnings.append(f"attempts is not a number: {row.attempts!r}")
        try:
            text, is_bytes = row.payload_head.decode(), False
        except UnicodeDecodeError as error:
            # A head cut inside a multi-byte character is still text.
            if error.start >= len(row.payload_head) - 3 and row.payload_length > len(row.payload_head):
                text, is_bytes = row.payload_head[:error.start].decode(errors="replace"), False
            else:
                text, is_bytes = row.payload_head[:48].hex(" "), True
        lines.append(JobLine(row, page.state, page.now_ms, text, is_bytes, warnings))
    return lines


@dataclass(frozen=True, slots=True)
class Pager:
    window: Window
    page: Page

    @property
    def first_position(self) -> int:
        return self.page.start + 1 if self.page.rows else 0

    @property
    def last_position(self) -> int:
        return self.page.start + len(self.page.rows)

    @property
    def newer_query(self) -> str | None:
        if self.page.start <= 0 or not self.page.rows:
            return None
        return self.window.query(before=self.page.rows[0].cursor)

    @property
    def older_query(self) -> str | None:
        if not self.page.has_more or not self.page.rows:
            return None
        return self.window.query(after=self.page.rows[-1].cursor)

    @property
    def first_query(self) -> str:
        return self.window.query()

    @property
    def last_query(self) -> str | None:
        if not self.page.has_more:
            return None
        return self.window.query(offset=max(self.page.total - self.window.limit, 0))

    @property
    def flip_query(self) -> str:
        flipped = "desc" if self.window.order == "asc" else "asc"
        return self.window.query(order=flipped)


def tab_counts(stats: QueueStats | None) -> dict[str, int | None]:
    return {state: (stats.counts[state] if stats else None) for state in STATES}


def queue_context(window: Window, stats: QueueStats, page: Page, throughput: Throughput | None) -> dict[str, object]:
    """Everything the queue page's fragments show (the summary and the jobs table)."""
    return {"window": window, "stats": stats, "page": page, "now_ms": page.now_ms,
            "lines": job_lines(page), "pager": Pager(window, page), "tabs": tab_counts(stats),
            "spark": spark_for(throughput, window.queue, stats.now_ms, width=240, height=28)}


@dataclass(frozen=True, slots=True)
class FieldLine:
    name: str
    text: str
    time_ms: int | None = None


# Fields that hold a server time in ms, as the scripts write them.
TIME_FIELDS: Final = frozenset({"created_at", "claimed_at", "finished_at"})


@dataclass(frozen=True, slots=True)
class JobDetail:
    view: JobView
    # Oldest first, as a log reads.
    history: list[Event]
    history_error: str = ""
    full_payload: bool = False
    core: list[FieldLine] = field(default_factory=list)
    optional: list[FieldLine] = field(default_factory=list)
    worker_gone: bool = False
    # The payload (and its preview field) are shown with the queue's masked values masked.
    masked: bool = False

    @property
    def dom_id(self) -> str:
        return dom_id("job", self.view.id)

    @property
    def payload(self) -> tuple[str, str, bool]:
        # A whole payload is all there is (masked values may have changed its length from the stored one).
        return payload_preview(self.view.payload, PAYLOAD_ALL if self.full_payload else PAYLOAD_SHOWN,
                               total=None if self.view.payload_whole else self.view.payload_length)

    @property
    def payload_length(self) -> int:
        return self.view.payload_length

    @property
    def sets(self) -> list[tuple[str, int]]:
        return list(self.view.scores.items())

    @property
    def is_lapsed(self) -> bool:
        left = self.view.lease_left_ms
        return left is not None and left < 0

    @property
    def state_tab(self) -> str:
        return self.view.state if self.view.state in STATES else "pending"

    @property
    def due_ms(self) -> int | None:
        return self.view.scores.get("pending")


def job_detail(data: JobPageData, *, full_payload: bool = False) -> JobDetail:
    view = data.view
    core = [FieldLine(name, view.text(name) if name in view.fields else "(missing)") for name in ("state", "attempts")]
    optional = []
    for name in sorted(view.fields):
        if name in ("state", "attempts", "payload"):
            continue
        text = view.text(name)
        time_ms = digits(text) if name in TIME_FIELDS else None
        optional.append(FieldLine(name, text, time_ms))
    return JobDetail(view, list(reversed(data.history)), data.history_error, full_payload, core, optional,
                     data.worker_gone, data.masker is not None)
