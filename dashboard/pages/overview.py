"""The overview's data: the queues its filter, sort and offset pick from the census, each with its counts,
its first why reason and its throughput, and the totals over every queue the census has read.

The view reads the page's counts now; the live page takes the follower's or the census's (the fresher);
both hand what they have to :func:`overview_page_data`, so a queue that cannot be read is one row with
the same words, wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from queues.census import Census
from queues.cluster import QueueLocation
from queues.deploys import DeployMark
from queues.follower import Throughput
from queues.reads import QueueStats
from queues.why import Reason

from ..presenters import OverviewQuery, QueueRow, Totals, queue_rows, spark_for, totals as totals_of
from ..why_line import with_reasons


@dataclass(frozen=True, slots=True)
class OverviewPageData:
    query: OverviewQuery
    rows: list[QueueRow]
    # How many queues the filter matches (the rows are the page's slice of them).
    total: int
    totals: Totals
    now_ms: int
    cluster: bool
    # Why the queue names are the ones read last ('' when read just now), and registry entries that are not names.
    names_error: str
    odd_registry: list[str]


def overview_window(census: Census, query: OverviewQuery) -> tuple[list[str], int]:
    """The names of the queues the page shows, from the census's order, and how many match."""
    names = census.select(query.filter, query.sort, query.descending)
    return names[query.offset:query.offset + query.limit], len(names)


def overview_page_data(census: Census, query: OverviewQuery, names: list[str], total: int,
                       results: Sequence[QueueStats | Exception | None], *, now_ms: int,
                       throughput: Throughput | None, reasons: Mapping[str, Reason], cluster: bool,
                       locations: Mapping[str, QueueLocation],
                       marks: Sequence[DeployMark] = ()) -> OverviewPageData:
    """The page's object from each shown queue's counts (None: not read yet; an error: said on its row), and
    the moves chart with the deploy marks of its window."""
    rows = with_reasons(queue_rows(names, results, locations if cluster else {}, throughput, now_ms), dict(reasons))
    chart = spark_for(throughput, None, now_ms, marks, width=600, height=48)
    return OverviewPageData(query, rows, total, totals_of(census.totals(), chart), now_ms, cluster,
                            census.names_error, census.names_odd)

