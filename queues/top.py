"""``emq top``: the console in a terminal (Textual), for an operator on SSH at 80x24.

Three screens, each live (read again every ``interval`` seconds, the cursor
kept on the row it was on): the queues with their counts; one queue's jobs by
state with the queue's why-line; one job with its why-line, payload, last
error and history. Everything is read from and done through the console's API
with a token (:mod:`queues.console_api`), so a move is held to the token
owner's role, confirmed by the server when the web console would confirm it
(the dialog shows the server's own words and count), and audited. Keys that
act on many jobs or destroy one are capitals (``D`` delete, ``C`` cancel,
``R`` retry every failed job, ...); ``?`` lists them.

Every text from Redis is shown as plain text (never as markup), with
invisible and bidi characters escaped as the web console shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Final, Generic, TypeVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Header, Static

from .console_api import ConsoleAPI, Outcome
from .errors import EmqError
from .visible import visible

DEFAULT_INTERVAL_S: Final = 2.0
STATES: Final = ("pending", "active", "done", "failed")


def escaped(value: Any) -> str:
    """Each line of ``value`` with its invisible and bidi characters escaped; the line breaks kept."""
    return "\n".join(visible(line) for line in str(value).split("\n"))


def plain(value: Any, limit: int = 200) -> Text:
    """``value`` as text a terminal shows as it is: escaped, cut, never read as markup."""
    shown = escaped(value)
    return Text(shown if len(shown) <= limit else shown[:limit - 1] + "…")


def when(ms: Any) -> str:
    try:
        return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return "-"


def why_text(answer: dict[str, Any]) -> str:
    reasons = answer.get("reasons") or []
    return f"why: {reasons[0].get('text', '')}" if reasons else "why: -"


class Confirm(ModalScreen[bool]):
    """The server's question, word for word: y confirms, n or Escape does not."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "answer(True)", "Yes, do it"),
                                             Binding("n", "answer(False)", "No"),
                                             Binding("escape", "answer(False)", "No", show=False)]
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Vertical { width: 70; height: auto; border: thick $error; background: $surface; padding: 1 2; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(plain(self.question, 1000), id="question")
            yield Static(Text("y: yes, do it    n / Esc: no"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class Keys(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close")]
    DEFAULT_CSS = """
    Keys { align: center middle; }
    Keys > Static { width: 76; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    """
    TEXT: Final = ("Everywhere: ? these keys   Esc back   r read again   q quit\n"
                   "Queues: Enter open a queue\n"
                   "Queue: 1 pending 2 active 3 done 4 failed   Enter open a job\n"
                   "  R retry every failed job   L recover every lapsed lease\n"
                   "  P purge failed jobs   X purge done jobs\n"
                   "Job: t retry   p promote   l recover   C cancel   D delete\n"
                   "Capitals act on many jobs or destroy one; the console asks to confirm\n"
                   "what it would confirm on the web, with its own words and count.")

    def compose(self) -> ComposeResult:
        yield Static(Text(self.TEXT))

    def action_close(self) -> None:
        self.dismiss(None)


D = TypeVar("D")
JSONObject = dict[str, Any]


class Live(Screen[None], Generic[D]):
    """A screen read again every interval in a thread, its table's cursor kept on the same row."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("r", "reload", "Read again", show=False),
                                             Binding("escape", "back", "Back", show=False)]

    @property
    def api(self) -> ConsoleAPI:
        return self.top.api

    @property
    def top(self) -> TopApp:
        app = self.app
        assert isinstance(app, TopApp)
        return app

    def on_mount(self) -> None:
        self.action_reload()
        self.set_interval(self.top.interval_s, self.action_reload)

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    @work(thread=True, exclusive=True, group="read")
    def action_reload(self) -> None:
        try:
            data = self.read()
        except EmqError as error:
            self.app.call_from_thread(self.status, f"cannot read: {error}")
            return
        self.app.call_from_thread(self.show, data)

    def read(self) -> D:
        raise NotImplementedError

    def show(self, data: D) -> None:
        raise NotImplementedError

    def status(self, text: str) -> None:
        self.query_one("#status", Static).update(plain(text, 400))

    def fill(self, table: DataTable[Any], rows: list[tuple[str, list[Any]]]) -> None:
        """Replaces the rows, keeping the cursor on the row (by key) it was on, else on the same line."""
        current = None
        if table.row_count:
            try:
                current = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
            except Exception:  # no row under the cursor
                current = None
        line = table.cursor_row
        table.clear()
        for key, cells in rows:
            table.add_row(*[c if isinstance(c, Text) else plain(c, 60) for c in cells], key=key)
        if not rows:
            return
        keys = [key for key, _ in rows]
        table.move_cursor(row=keys.index(current) if current in keys else min(line, len(rows) - 1), animate=False)

    def act(self, ask: Callable[[str], Outcome], what: str) -> None:
        """Runs a move (in a thread); a 428 becomes a dialog with the server's words, then the move again."""
        self._act(ask, what)

    @work(thread=True, group="act")
    def _act(self, ask: Callable[[str], Outcome], what: str) -> None:
        try:
            outcome = ask("")
        except EmqError as error:
            self.app.call_from_thread(self.status, f"{what}: {error}")
            return
        self.app.call_from_thread(self._answered, ask, what, outcome)

    def _answered(self, ask: Callable[[str], Outcome], what: str, outcome: Outcome) -> None:
        confirmation = outcome.confirmation
        if confirmation is None:
            self.status(f"{what}: {outcome.text}")
            self.action_reload()
            return
        if not confirmation.token:
            self.status(f"{what}: nothing to do: {confirmation.nothing or confirmation.text}")
            return
        question = confirmation.text + (f"\n{confirmation.warning}" if confirmation.warning else "")

        def answered(yes: bool | None) -> None:
            if yes:
                self._confirmed(ask, what, confirmation.token or "")
            else:
                self.status(f"{what}: not done")
        self.app.push_screen(Confirm(question), answered)

    @work(thread=True, group="act")
    def _confirmed(self, ask: Callable[[str], Outcome], what: str, token: str) -> None:
        try:
            outcome = ask(token)
        except EmqError as error:
            self.app.call_from_thread(self.status, f"{what}: {error}")
            return
        self.app.call_from_thread(self.status, f"{what}: {outcome.text}")
        self.app.call_from_thread(self.action_reload)


class QueuesScreen(Live[JSONObject]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text("queues"), id="title")
        table: DataTable[Any] = DataTable(id="queues", cursor_type="row", zebra_stripes=True)
        table.add_columns("queue", "pending", "active", "lapsed", "done", "failed")
        yield table
        yield Static("", id="status")
        yield Footer()

    def read(self) -> JSONObject:
        return self.api.queues(limit=200)

    def show(self, data: JSONObject) -> None:
        rows = []
        for entry in data.get("queues", []):
            stats = entry.get("stats") or {}
            cells = [plain(entry.get("queue", ""), 40)] + [
                str(stats.get(k, "?")) for k in ("pending", "active", "lapsed", "done", "failed")]
            rows.append((str(entry.get("queue", "")), cells))
        self.fill(self.query_one("#queues", DataTable), rows)
        self.status(f"{len(rows)} queues, read {datetime.now(UTC):%H:%M:%SZ}" + (
            f" (stale: {data['stale']})" if data.get("stale") else ""))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(QueueScreen(str(event.row_key.value)))


class QueueScreen(Live[tuple[str, JSONObject, JSONObject]]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "state('pending')", "pending"), Binding("2", "state('active')", "active"),
        Binding("3", "state('done')", "done"), Binding("4", "state('failed')", "failed"),
        Binding("R", "queue_move('retry_all')", "Retry all failed"),
        Binding("L", "queue_move('recover_all')", "Recover lapsed"),
        Binding("P", "queue_move('purge_failed')", "Purge failed", show=False),
        Binding("X", "queue_move('purge_done')", "Purge done", show=False)]

    def __init__(self, queue: str) -> None:
        super().__init__()
        self.queue, self.state = queue, "pending"

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(plain(f"queue {self.queue} · {self.state}"), id="title")
        yield Static("why: …", id="why")
        table: DataTable[Any] = DataTable(id="jobs", cursor_type="row", zebra_stripes=True)
        table.add_columns("id", "tries", "when", "last error")
        yield table
        yield Static("", id="status")
        yield Footer()

    def read(self) -> tuple[str, JSONObject, JSONObject]:
        return self.state, self.api.jobs(self.queue, self.state, limit=100), self.api.queue_why(self.queue)

    def show(self, data: tuple[str, JSONObject, JSONObject]) -> None:
        state, page, why = data
        if state != self.state:
            return
        self.query_one("#why", Static).update(plain(why_text(why), 300))
        rows = [(str(row["id"]), [plain(row["id"], 36), str(row.get("attempts", "")), when(row.get("score")),
                                  plain(row.get("last_error", ""), 60)]) for row in page.get("rows", [])]
        self.fill(self.query_one("#jobs", DataTable), rows)
        self.query_one("#title", Static).update(plain(f"queue {self.queue} · {state} · {page.get('total', '?')} jobs"))
        self.status(f"read {datetime.now(UTC):%H:%M:%SZ}")

    def action_state(self, state: str) -> None:
        self.state = state
        self.query_one("#title", Static).update(plain(f"queue {self.queue} · {state}"))
        self.query_one("#jobs", DataTable).clear()
        self.action_reload()

    def action_queue_move(self, action: str) -> None:
        self.act(lambda token: self.api.queue_move(self.queue, action, confirmation=token), action.replace("_", " "))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(JobScreen(self.queue, str(event.row_key.value)))


class JobScreen(Live[tuple[JSONObject, JSONObject]]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "move('retry')", "retry"), Binding("p", "move('promote')", "promote"),
        Binding("l", "move('recover')", "recover"),
        Binding("C", "move('cancel')", "Cancel"), Binding("D", "move('delete')", "Delete")]

    def __init__(self, queue: str, job_id: str) -> None:
        super().__init__()
        self.queue, self.job_id = queue, job_id
        self.seen: tuple[str, int | None] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(plain(f"job {self.job_id} of {self.queue}"), id="title")
        yield Static("why: …", id="why")
        with VerticalScroll():
            yield Static("", id="detail")
        yield Static("", id="status")
        yield Footer()

    def read(self) -> tuple[JSONObject, JSONObject]:
        return self.api.job(self.queue, self.job_id), self.api.job_why(self.queue, self.job_id)

    def show(self, data: tuple[JSONObject, JSONObject]) -> None:
        job, why = data
        self.seen = (str(job.get("state", "")), job.get("attempts"))
        self.query_one("#why", Static).update(plain(why_text(why), 300))
        lines = [f"state {job.get('state')} · attempts {job.get('attempts')}"
                 + (f" · lease left {job['lease_left_ms']} ms" if job.get("lease_left_ms") is not None else ""),
                 f"payload ({job.get('payload_encoding')}, {job.get('payload_length')} bytes):",
                 escaped(job.get("payload", ""))[:2000]]
        fields = job.get("fields") or {}
        if fields.get("last_error"):
            lines.append(f"last error: {visible(str(fields['last_error']))[:1000]}")
        lines += [f"warning: {visible(str(w))}" for w in job.get("warnings", [])]
        lines.append("history:" if job.get("history") else f"history: {job.get('history_error') or 'none'}")
        for event in job.get("history", [])[:50]:
            lines.append(f"  {when(event.get('ts_ms'))} {event.get('move')} {event.get('from_state')}→"
                         f"{event.get('to_state')} by {visible(str(event.get('actor', '')))}"
                         + (f" ({visible(str(event['release']))})" if event.get("release") else ""))
        self.query_one("#detail", Static).update(Text("\n".join(lines)))
        self.status(f"read {datetime.now(UTC):%H:%M:%SZ}")

    def action_move(self, move: str) -> None:
        if self.seen is None:
            self.status(f"{move}: the job has not been read yet")
            return
        state, attempts = self.seen
        self.act(lambda token: self.api.job_move(self.queue, self.job_id, move, state=state, attempts=attempts,
                                                 confirmation=token), move)

    def action_back(self) -> None:
        self.app.pop_screen()


class TopApp(App[None]):
    TITLE = "emq top"
    # The footer's room at 80 columns is for the screen's own keys (? lists them all).
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit"),
                                             Binding("question_mark", "keys", "Keys")]
    CSS = """
    #title { height: 1; text-style: bold; }
    #why { height: 1; }
    #status { height: 1; color: $text-muted; }
    DataTable { height: 1fr; }
    """

    def __init__(self, api: ConsoleAPI, *, interval_s: float = DEFAULT_INTERVAL_S, queue: str | None = None) -> None:
        super().__init__()
        self.api, self.interval_s, self.first_queue = api, interval_s, queue

    def on_mount(self) -> None:
        self.push_screen(QueuesScreen())
        if self.first_queue:
            self.push_screen(QueueScreen(self.first_queue))

    def action_keys(self) -> None:
        self.push_screen(Keys())


def run(api: ConsoleAPI, *, interval_s: float = DEFAULT_INTERVAL_S, queue: str | None = None) -> None:
    TopApp(api, interval_s=interval_s, queue=queue).run()
