"""Table rows as HTML, built in Python.

Measured (bench/console_pages.py): a table row rendered by a Django template
costs 250-380 µs here, which makes 1,000 overview rows take a quarter of a
second; the same row built here costs a few µs. Everything else stays a
template. Every value that comes from Redis passes through ``escape``.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from django.conf import settings
from django.template import Context, Template
from django.template.loader import get_template, render_to_string
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from queues.follower import Throughput
from queues.keys import job_id_token
from queues.reads import JobRow, Page, QueueStats

from .presenters import MESSAGE_MAX_BYTES, PAGE_SIZES, JobLine, OverviewPager, OverviewQuery, QueueRow, Window, queue_context
from .templatetags.console import duration, server_time, visible, visible_plain


def _q(value: str) -> str:
    return quote(value, safe="")


def overview_row(row: QueueRow, *, cluster: bool, oob: bool = False, queue_url: str | None = None) -> str:
    queue_url = queue_url or reverse("queue")
    s = row.stats
    attrs = f' id="{row.dom_id}"'
    if oob:
        attrs += ' hx-swap-oob="true"'
    if s is not None and s.lapsed:
        attrs += ' class="alarm"'
    paused = ""
    if s is not None and s.paused:
        why = escape(visible_plain(f"paused by {s.paused_by or 'someone'}" + (f": {s.paused_reason}" if s.paused_reason else "")))
        paused = f' <span class="badge paused" title="{why}">paused</span>'
    attrs += ' tabindex="0"'  # j / k reach it, Enter opens it
    if s is not None and row.age_ms > STALE_ROW_MS:
        # Counts the census read a while ago: marked, with their age, so none passes for now.
        paused += (f' <span class="figure stale" title="these counts are a census reading">stale, '
                   f'<span data-since="{s.now_ms}">{duration(row.age_ms)} ago</span></span>')
    out = [f'<tr{attrs}><td class="name"><a href="{queue_url}?q={_q(row.name)}">{visible(row.name)}</a>{paused}</td>']
    if s is not None:
        failed, active, done = s.counts["failed"], s.counts["active"], s.counts["done"]
        out.append(f'<td class="num pending">{s.due}</td><td class="num delayed">{s.delayed}</td>'
                   f'<td class="num active">{active}</td>'
                   f'<td class="num lapsed{" hot" if s.lapsed else ""}">{s.lapsed}</td>'
                   f'<td class="num done">{done}</td><td class="num failed{" warm" if failed else ""}">{failed}</td>')
        if s.oldest_due_ms is not None:
            out.append(f'<td><span data-since="{s.oldest_due_ms}">{duration(s.oldest_due_age_ms)} ago</span></td>')
        else:
            out.append('<td><span class="muted">—</span></td>')
    elif not row.error:
        out.append('<td colspan="7" class="muted">reading…</td>')
    else:
        out.append(f'<td colspan="7" class="error-text">unreadable: {visible(row.error)}</td>')
    spark = row.spark
    if spark is not None:
        out.append(f'<td class="spark"><svg width="{spark.width}" height="{spark.height}" '
                   f'viewBox="0 0 {spark.width} {spark.height}" aria-hidden="true"><polyline points="{spark.points}"/>'
                   f'</svg> <span class="rate">{spark.rate:.1f}</span></td>')
    else:
        out.append('<td class="spark"><span class="muted">—</span></td>')
    if row.reason is not None:
        out.append(f'<td class="why"><span class="badge why-code" data-why-code="{row.reason.code}" '
                   f'title="{escape(visible_plain(row.reason.text))}">{row.reason.code}</span></td>')
    elif settings.EMQ_OVERVIEW_REASONS:
        out.append('<td class="why"><span class="figure unknown">unknown</span></td>')
    if cluster:
        location = row.location
        out.append(f'<td class="mono">{location.slot} · {escape(location.node)}</td>' if location else '<td></td>')
    out.append("</tr>")
    return "".join(out)


# A row whose counts are older than this says so (the census reads every queue in turn; a page's own rows
# are read live).
STALE_ROW_MS = 15_000

# The queue page's message also holds its summary, the clock and the Redis banner (an error's words).
QUEUE_MESSAGE_MARGIN_BYTES = 4096
QUEUE_SUMMARY_ROOM_BYTES = 16 * 1024
# Room left in a table's message beside its rows and the rest of its fragment as measured: the attributes
# a table sent live adds (its count of parts, an answer to a filter) and a further part's own few tags.
MESSAGE_MARGIN_BYTES = 1024


def overview_table_context(query: OverviewQuery, total: int, rows: list[QueueRow], *,
                           cluster: bool) -> dict[str, object]:
    """What the overview's table fragment shows: every row of the page, the pager and the sort links.

    ``row_chunks`` splits the rows after those that fit in the first live message beside the rest of the
    fragment (its headings, pager and links, measured here) into further messages of at most the same
    size, so every push stays within MESSAGE_MAX_BYTES whatever the queue names, pause reasons and filter
    hold; the page puts the parts together before it shows the table. The first render is one HTTP answer
    and needs no parts.
    """
    context: dict[str, object] = {"rows": rows, "rows_html": "", "pager": OverviewPager(query, total, len(rows)),
                                  "query": query, "filter": query.filter, "cluster": cluster, "oob": True,
                                  "reasons": settings.EMQ_OVERVIEW_REASONS, "page_sizes": PAGE_SIZES}
    around = len(render_to_string("dashboard/_overview_table.html", context).encode())
    queue_url = reverse("queue")
    html = [overview_row(row, cluster=cluster, queue_url=queue_url) for row in rows]
    first = rows_that_fit(html, MESSAGE_MAX_BYTES - around - MESSAGE_MARGIN_BYTES)
    context.update(rows_html=mark_safe("".join(html)), first_rows_html=mark_safe("".join(html[:first])),
                   row_chunks=message_chunks(html[first:]), oob=False)
    return context


def message_chunks(html: list[str]) -> list[SafeString]:
    """These rows in runs that each fit one live message beside a part's own few tags."""
    chunks: list[SafeString] = []
    while html:
        fitted = rows_that_fit(html, MESSAGE_MAX_BYTES - MESSAGE_MARGIN_BYTES)
        chunks.append(mark_safe("".join(html[:fitted])))
        html = html[fitted:]
    return chunks


def rows_that_fit(html: list[str], budget: int) -> int:
    """How many of these rows, from the first, fit in ``budget`` bytes (at least one)."""
    used = 0
    for n, row in enumerate(html):
        used += len(row.encode())
        if n and used > budget:
            return n
    return len(html)


def _when(line: JobLine) -> str:
    row, now = line.row, line.now_ms
    if line.state == "pending":
        if line.is_delayed:
            return (f'<span class="badge delayed">delayed</span> '
                    f'<span data-due="{row.score}">in {duration(row.score - now)}</span>')
        return f'<span class="badge pending">due</span> <span data-since="{row.score}">{duration(now - row.score)} ago</span>'
    if line.state == "active":
        if line.is_lapsed:
            return (f'<span class="badge lapsed">lapsed</span> <span class="countdown lapsed" '
                    f'data-deadline="{row.score}">lapsed {duration(now - row.score)} ago</span>')
        return f'<span class="countdown" data-deadline="{row.score}">{duration(row.score - now)} left</span>'
    return (f'<span title="{server_time(row.score)}" data-since="{row.score}">'
            f'{duration(now - row.score)} ago</span>')


def _error_cell(row: JobRow) -> str:
    """The last error as the row reads it: up to two lines, the whole head (and its length when cut) in a title."""
    if not row.last_error:
        return ""
    cut = row.last_error_length > len(row.last_error.encode())
    more = f"… ({row.last_error_length} bytes)" if cut else ""
    return (f'<span class="error-clamp" title="{escape(visible_plain(row.last_error) + more)}">'
            f'{visible(row.last_error)}{"…" if cut else ""}</span>')


def _template(name: str) -> Template:
    return get_template(name).template  # type: ignore[attr-defined,no-any-return]


def job_rows(lines: list[JobLine], window: Window, *, csrf_token: str = "") -> SafeString:
    """The rows of a queue page; the tick box and the buttons come from the actions' templates."""
    return mark_safe("".join(job_row_parts(lines, window, csrf_token=csrf_token)))


def job_row_parts(lines: list[JobLine], window: Window, *, csrf_token: str = "") -> list[str]:
    """Each line's HTML (with the divider before the first delayed job, when one goes before it)."""
    pick, buttons = _template("dashboard/actions/pick.html"), _template("dashboard/actions/job_buttons.html")
    context = Context({"csrf_token": csrf_token}, autoescape=True)
    job_url = f"{reverse('job')}?q={_q(window.queue)}&amp;id="
    out = []
    previous_delayed = False
    for n, line in enumerate(lines):
        row = line.row
        divider = ""
        if line.is_delayed and not previous_delayed and n > 0:
            divider = '<tr class="divider"><td colspan="7">delayed: not due yet</td></tr>'

        previous_delayed = line.is_delayed
        classes = " ".join(c for c in ("alarm" if line.is_lapsed else "", "odd" if line.warnings else "") if c)
        warning = ""
        if line.warnings:
            text = "; ".join(line.warnings)
            warning = f' <span class="warn-badge" title="{escape(visible_plain(text))}">⚠ {visible(text)}</span>'
        payload = ('<span class="badge">bytes</span> ' if line.payload_is_bytes else "") + visible(line.payload_text)
        if line.payload_cut:
            payload += f'<span class="muted">… ({row.payload_length} bytes)</span>'
        token = job_id_token(row.id)
        with context.push(dom_id=line.dom_id, queue=window.queue, job_id=row.id, state=row.expected_state,
                          attempts=row.attempts, delayed=line.is_delayed, lapsed=line.is_lapsed):
            pick_html, buttons_html = pick.render(context), buttons.render(context)
        out.append(
            f'{divider}<tr id="{line.dom_id}" class="{classes}" tabindex="0" data-job="{escape(token)}" '
            f'data-attempts="{escape(row.attempts)}" data-state="{escape(row.state)}">'
            f'<td class="pick">{pick_html}</td>'
            f'<td class="mono id"><a href="{job_url}{_q(token)}">{visible(row.id)}</a>{warning}</td>'
            f'<td class="num mono" data-label="attempts">{visible(row.attempts) or "—"}</td>'
            f'<td class="when">{_when(line)}</td>'
            f'<td class="payload mono">{payload}</td>'
            f'<td class="error-text">{_error_cell(row)}</td>'
            f'<td class="actions">{buttons_html}</td></tr>')
    return out


def queue_page_context(window: Window, stats: QueueStats, page: Page, throughput: Throughput | None,
                       *, csrf_token: str = "", elsewhere: Sequence[object] = ()) -> dict[str, object]:
    """What the queue page's summary and jobs table show: every row of the page the window asks for.

    A row with its buttons is about 1.6 KB, so a page of 200 is about 320 KB: more than one live message
    holds. ``parts`` splits the rows after the first message's (which carries the clock, the summary and
    the table's head and pager beside them) into further messages of at most the same size; the page puts
    them together before it shows the table. The first render is one HTTP answer and needs no parts.
    """
    context = queue_context(window, stats, page, throughput)
    context["elsewhere"] = list(elsewhere)
    context["page_sizes"] = PAGE_SIZES
    parts = job_row_parts(context["lines"], window, csrf_token=csrf_token)  # type: ignore[arg-type]
    # The summary and the clock get a fixed room unless they need more (a long pause reason).
    summary = len(render_to_string("dashboard/_queue_summary.html", {**context, "oob": True}).encode())
    around = max(QUEUE_SUMMARY_ROOM_BYTES, summary + QUEUE_MESSAGE_MARGIN_BYTES)
    around += len(render_to_string("dashboard/_queue_jobs.html", {**context, "rows_html": "", "oob": True}).encode())
    first = rows_that_fit(parts, MESSAGE_MAX_BYTES - around)
    chunks: list[SafeString] = []
    rest = parts[first:]
    while rest:
        fitted = rows_that_fit(rest, MESSAGE_MAX_BYTES - QUEUE_MESSAGE_MARGIN_BYTES)
        chunks.append(mark_safe("".join(rest[:fitted])))
        rest = rest[fitted:]
    context["rows_html"] = mark_safe("".join(parts))
    context["first_rows_html"] = mark_safe("".join(parts[:first]))
    context["row_chunks"] = chunks
    return context
