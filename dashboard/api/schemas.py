"""What the API answers, field by field (the OpenAPI schema at ``/api/schema`` is made from these)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Literal

from ninja import Schema
from pydantic import BeforeValidator, Field

from exchange.gateway import MARKET_TIMES_IN_FORCE, MAX_BODY_BYTES
from queues.operator_moves import BATCH_MOVES, BUTTON_MOVE_NAMES
from queues.search import MATCH_MOVES

# What queues.keys accepts (it also counts bytes, not characters: a longer name is a 400 in words).
QUEUE_PATTERN = r"^[^{}:\x00-\x20\x7f]+$"
JOB_ID_PATTERN = r"^[^{}\x00-\x20\x7f]+$"


class ErrorOut(Schema):
    error: str = Field(description="What was wrong or refused, in words")


ATTEMPTS_OUT = "How many times the job was claimed; None when the hash holds no number there (odd data)"


def _attempts_in(value: Any) -> Any:
    """'' (or nothing) means any attempts; digits in a string are read as the number, as older callers send them."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return value


# The attempts a caller saw: a number, or none for "any".
AttemptsIn = Annotated[Annotated[int, Field(ge=0, le=10 ** 14)] | None, BeforeValidator(_attempts_in)]


class StatsOut(Schema):
    now_ms: int = Field(description="The clock of the Redis server that holds the queue")
    pending: int
    due: int
    delayed: int
    active: int
    lapsed: int = Field(description="Active jobs whose lease deadline has passed")
    done: int
    failed: int
    oldest_due_age_ms: int | None
    next_due_ms: int | None
    last_event_id: str
    paused: bool = Field(description="Claims refuse the queue while it is paused")
    paused_since_ms: int | None
    paused_by: str
    paused_reason: str


class PercentilesOut(Schema):
    p50: int | None = Field(description="ms; None when no job was measured")
    p95: int | None
    p99: int | None


class LatencyOut(Schema):
    wait_ms: PercentilesOut = Field(description="Due -> claimed, over the last hour")
    run_ms: PercentilesOut = Field(description="Claimed -> completed or failed, over the last hour")
    wait_measured: int = Field(description="Claims measured in the last hour (another runtime's may be not)")
    run_measured: int
    arrival_per_s: float = Field(description="Enqueues per second over the ten whole minutes before now")
    service_per_s: float = Field(description="Claims per second over the same minutes")
    time_to_drain_s: float | None = Field(description="The due backlog over (service - arrival); 0 when nothing "
                                          "is due, None when it is not shrinking")
    rate_window_s: int


class QueueOut(Schema):
    queue: str
    stats: StatsOut | None = Field(description="None when the queue could not be read (see error)")
    error: str | None = None
    latency: LatencyOut | None = Field(None, description="One queue's read only (not the list)")


SLO_NAME_PATTERN = r"^[^{}:\x00-\x20\x7f]+$"


class SloIn(Schema):
    metric: Literal["wait", "run"]
    under_ms: int = Field(ge=1, le=86_400_000, description="The wait or run the jobs should stay under")
    target: float = Field(gt=0, lt=100, description="Percent of jobs under under_ms, such as 95 or 99.9")
    window_days: int = Field(30, ge=1, le=90)


class ObjectiveOut(Schema):
    name: str = Field(description="The queue, or the pattern the objective was set for")
    metric: Literal["wait", "run"]
    under_ms: int
    target: float
    window_days: int
    set_by: str
    set_ms: int | None
    pattern: bool
    objective: str = Field(description="The objective in words")


class SloStatusOut(ObjectiveOut):
    queue: str
    attainment: float | None = Field(description="Share of the jobs measured over the window under under_ms; "
                                     "None when none was measured")
    measured: int
    budget_left: float | None = Field(description="Share of the window's error budget not spent (negative: overspent)")
    burn_rate: dict[str, float | None] = Field(description="Window (5m, 30m, 1h, 6h) -> burn rate (1: the budget "
                                               "spent exactly over the objective's window)")
    burning_fast: bool = Field(description="1 h and 5 min burn rates both at 14.4 or more")


class SloOut(Schema):
    queue: str
    slo: SloStatusOut | None = Field(description="The objective that applies (the queue's own, else a pattern's)")


class SloChangeOut(Schema):
    name: str
    previous: ObjectiveOut | None
    audit_id: int


class QueueListOut(Schema):
    queues: list[QueueOut]
    next_after: str | None = Field(description="Pass as `after` for the next page; None on the last")
    stale: str = Field(description="Why the list is the one read last ('' when read just now)")


class DeploymentOut(Schema):
    name: str
    production: bool
    answered: bool = Field(description="Whether it answered within EMQ_DEPLOYMENT_BUDGET_S")
    error: str = Field(description="Why it did not answer ('' when it did): its figures are not in this answer")
    elapsed_ms: int
    queues: int | None = Field(description="Its registered queues (None when it did not answer)")
    counted: int | None = Field(description="How many of them were added up (its first 500)")
    counts: dict[str, int] | None = Field(description="Jobs by state over the queues counted")
    unread: int | None = Field(description="Queues whose counts could not be read")
    found: list[str] | None = Field(description="With `id`: the queues holding a job with that id (None when not "
                                                "asked, or when this deployment did not answer)")


class DeploymentsOut(Schema):
    deployments: list[DeploymentOut] = Field(description="Every deployment the caller may see, each asked at once")
    missing: list[str] = Field(description="One sentence per deployment that did not answer")
    partial: list[str] = Field(description="One sentence per deployment that answered with only some of its "
                                           "figures (a master down, its queue list unreadable), saying which")


class DeploymentSearchIn(Schema):
    """A search as the search page's form sends it (its fields are the search filters of queues.search.FILTERS)."""

    state: str = Field(description="The state searched: pending, active, done or failed")
    q: str = Field("", description="One queue to search ('' for every queue, at most 100)")
    queues_holding: str = Field("", alias="in", description="With every queue: only those whose name holds this")
    payload: str = Field("", description="Plain text the payload contains (bytes, case-sensitive)")
    field: str = Field("", description='PATH=VALUE for JSON payloads, like user.id=42 or items[0].sku="A-1"')
    error: str = Field("", description="Text the last error or an earlier attempt's contains (ASCII case-insensitive)")
    id_prefix: str = Field("", description="The start of the job ids")
    group: str = Field("", description="A failure group (failed jobs only)")
    worker: str = Field("", description="Text the worker's name contains")
    release: str = Field("", description="The release the newest attempt's worker registered ('-': unknown)")
    host: str = Field("", description="The host the newest attempt ran on (exactly)")
    enqueued_after: str = Field("", description="Epoch ms, an ISO time (UTC unless it says) or an age like 2h")
    enqueued_before: str = Field("", description="As enqueued_after")
    finished_after: str = Field("", description="When a done job finished or a failed job failed (done or failed "
                                                "only), as enqueued_after")
    finished_before: str = Field("", description="As finished_after")
    order: str = Field("", description="asc or desc ('' : oldest first for pending and active, newest for the others)")

    def form(self) -> dict[str, str]:
        """As the page's form sends it (``in`` for the queue name filter)."""
        return {("in" if name == "queues_holding" else name): value for name, value in self.model_dump().items()}


class SearchMatchOut(Schema):
    queue: str
    id: str
    score: int = Field(description="Its score in the state's set when found (due time, lease deadline or finish time)")
    state: str = Field(description="The state its hash said when found")
    attempts: str = Field(description="Its attempts as its hash holds them")
    payload_head: str = Field(description="The payload's start, masked as the caller is shown it")
    payload_length: int
    last_error: str
    worker: str
    found_in: str = Field(description="The state's set it was found in")
    url: str = Field(description="The job's page on its deployment")


class DeploymentSearchOut(Schema):
    name: str
    production: bool
    answered: bool = Field(description="Whether it answered within EMQ_DEPLOYMENT_SEARCH_BUDGET_S (and one read's "
                                       "budget more)")
    error: str = Field(description="Why it did not answer ('' when it did): its matches are not in this answer")
    elapsed_ms: int
    matched: int | None = Field(description="The jobs that matched (a floor unless `complete`); None when it did not "
                                            "answer")
    complete: bool | None = Field(description="Whether `matched` is every match: false when the search did not "
                                              "finish within its budget, or some queues were not searched")
    summary: str | None = Field(description="The count in words, saying why and how far it got when not complete")
    short_of: list[str] | None = Field(description="Why `matched` is only a floor, one sentence each")
    refused: str | None = Field(description="Why nothing was searched on this deployment ('' when it was)")
    queues_total: int | None = Field(description="The queues the search names on this deployment")
    queues_searched: int | None = Field(description="Of them, those searched to their end")
    matches: list[SearchMatchOut] | None = Field(description="The first matches (at most 20)")


class DeploymentsSearchOut(Schema):
    query: str = Field(description="The search in words")
    budget_s: float = Field(description="How long each deployment's search ran at most (EMQ_DEPLOYMENT_SEARCH_BUDGET_S)")
    deployments: list[DeploymentSearchOut] = Field(description="Every deployment the caller may see, each searched "
                                                               "at once")
    missing: list[str] = Field(description="One sentence per deployment that did not answer")
    partial: list[str] = Field(description="One sentence per deployment whose count is a floor or that refused the "
                                           "search, saying why")


class JobRowOut(Schema):
    id: str
    score: int = Field(description="The job's score in its state's set (due time, lease deadline or finish time)")
    state: str = Field(description="The state the job's hash says")
    attempts: int | None = Field(description=ATTEMPTS_OUT)
    payload_head: str
    payload_length: int
    last_error: str
    exists: bool = Field(description="False when the id is in the set but its hash is missing")
    cursor: str


class PageOut(Schema):
    queue: str
    state: Literal["pending", "active", "done", "failed"]
    order: Literal["asc", "desc"]
    now_ms: int
    total: int
    start: int
    has_more: bool
    rows: list[JobRowOut]
    next_after: str | None = Field(description="Pass as `after` for the next page; None on the last")


class EventOut(Schema):
    event: str
    move: str
    from_state: str
    to_state: str
    attempts: int | None = Field(description="The attempts after the move; None when the entry holds no number")
    actor: str
    ts_ms: int
    release: str = Field("", description="A claim's: the release its worker registered ('' when unknown)")
    host: str = Field("", description="A claim's: its worker's host ('' when unknown)")


class JobOut(Schema):
    queue: str
    id: str
    now_ms: int
    exists: bool
    state: str
    attempts: int | None = Field(description=ATTEMPTS_OUT)
    payload: str = Field(description="The payload as text (hexadecimal when it is not UTF-8), cut at 64 KiB")
    payload_encoding: Literal["json", "text", "bytes"]
    payload_length: int = Field(description="The stored payload's length in bytes (HSTRLEN), however much is shown")
    payload_cut: bool = Field(description="True when payload is not the whole payload (cut, or only its preview)")
    payload_preview: bool = Field(description="True when payload is the job's stored preview, not the payload: "
                                              "the payload is too long to read here (GET /job/payload/ has it)")
    fields: dict[str, str] = Field(description="The job hash's other fields, each cut at 4 KiB")
    scores: dict[str, int] = Field(description="The sets that hold the id, with its score in each")
    lease_left_ms: int | None
    warnings: list[str]
    worker_gone: bool = Field(description="True when the job is active and its worker has no live entry "
                                          "(False when the workers registry cannot tell)")
    history: list[EventOut]
    history_error: str = Field(description="Why the history could not be read ('' when it was): "
                                           "history is then empty")


class AuditEntryOut(Schema):
    id: int
    created_at: datetime
    finished_at: datetime | None
    username: str
    queue: str
    action: str
    scope: str
    jobs: list[dict[str, Any]]
    parameters: dict[str, Any]
    outcome: str
    result: str
    moved: int
    skipped: int
    missing: int
    errors: int
    cancel_requested_by: str


class AuditSummaryOut(Schema):
    """An audit entry as a page of the log lists it: its jobs counted, not listed (``/api/runs/{id}`` lists them)."""

    id: int
    created_at: datetime
    finished_at: datetime | None
    username: str
    queue: str
    action: str
    scope: str
    job_count: int = Field(description="How many jobs the entry names; GET /api/runs/{id} lists them")
    parameters: dict[str, Any]
    outcome: str
    result: str
    moved: int
    skipped: int
    missing: int
    errors: int
    cancel_requested_by: str


class AuditPageOut(Schema):
    entries: list[AuditSummaryOut] = Field(description="At most `limit` entries (100 at most) and about 256 KiB")
    next_before: int | None = Field(description="Pass as `before` for older entries; None on the last page")


CONFIRMATION_HELP = ("The token a 428 answer gave for exactly this action: destructive and large actions run only "
                     "when it is sent back (within its lifetime, once)")


# Read from the table of operator moves (for the checker, any text: it cannot read a Literal off a tuple).
if TYPE_CHECKING:
    JobMoveName = str
    BatchMoveName = str
    MatchMoveName = str
else:
    JobMoveName = Literal[BUTTON_MOVE_NAMES]
    BatchMoveName = Literal[tuple(BATCH_MOVES)]
    MatchMoveName = Literal[tuple(MATCH_MOVES)]


class JobActionIn(Schema):
    queue: str = Field(pattern=QUEUE_PATTERN, max_length=128)
    id: str = Field(pattern=JOB_ID_PATTERN, max_length=256)
    move: JobMoveName
    expect_state: str = Field(description="The state you saw: the move is refused if the job moved on")
    expect_attempts: AttemptsIn = Field(None, description="The attempts you saw (none, or '', for any)")
    confirmation: str = Field("", description=CONFIRMATION_HELP)


class CloneIn(Schema):
    queue: str = Field(pattern=QUEUE_PATTERN, max_length=128)
    id: str = Field(pattern=JOB_ID_PATTERN, max_length=256, description="The job to clone (it stays as it is)")
    expect_state: str = Field(description="The state you saw: the clone is refused if the job moved on")
    expect_attempts: AttemptsIn = Field(None, description="The attempts you saw (none, or '', for any)")
    new_id: str = Field(pattern=JOB_ID_PATTERN, max_length=256, description="The new job's id: refused if it is taken")
    payload: str | None = Field(None, max_length=1024 * 1024,
                                description="The new job's payload as text; none for the cloned job's, byte for byte "
                                            "(an edited payload is checked against the queue's JSON Schema)")
    delay_ms: int = Field(0, ge=0, le=315_360_000_000, description="Due after this many ms (0: now)")
    max_attempts: int | None = Field(None, ge=1, le=1_000_000, description="None: the cloned job's")
    confirmation: str = Field("", description=CONFIRMATION_HELP)


class CloneOut(Schema):
    outcome: Literal["moved", "refused", "error"]
    text: str
    audit_id: int
    new_id: str = Field(description="The new job's id ('' when nothing was made)")


class ConfirmationOut(Schema):
    text: str = Field(description="What the action would do now, e.g. 'Purge 120 done jobs of mail, of any age?'")
    warning: str
    count: int = Field(description="How many jobs it touches now")
    confirmation: str | None = Field(description="Send it back as `confirmation` to run the action; "
                                                 "None when there is nothing to do (see nothing)")
    expires_in_s: int
    nothing: str = Field(description="Why there is nothing to confirm ('' when there is)")
    type_to_confirm: str = Field("", description="On a production deployment: send this (the queue's name) back "
                                                 "in the X-EMQ-Typed-Name header with the confirmation")


class QueueActionIn(Schema):
    queue: str = Field(pattern=QUEUE_PATTERN, max_length=128)
    action: BatchMoveName
    older_than_ms: int = Field(0, ge=0, le=10 ** 12, description="Purge only: jobs finished longer ago than this")
    confirmation: str = Field("", description=CONFIRMATION_HELP)


class JobActionOut(Schema):
    outcome: Literal["moved", "refused", "error"]
    text: str
    audit_id: int


class SeenJobIn(Schema):
    id: str = Field(pattern=JOB_ID_PATTERN, max_length=256)
    state: str
    attempts: AttemptsIn = Field(None, description="The attempts you saw (none, or '', for any)")


class SelectionActionIn(Schema):
    queue: str = Field(pattern=QUEUE_PATTERN, max_length=128)
    move: JobMoveName
    jobs: list[SeenJobIn] = Field(min_length=1, max_length=1000, description="Each job as you saw it")
    confirmation: str = Field("", description=CONFIRMATION_HELP)


class PauseIn(Schema):
    queue: str = Field(pattern=QUEUE_PATTERN, max_length=128)
    reason: str = Field("", max_length=1000, description="Why, for whoever looks (pause only)")
    confirmation: str = Field("", description=CONFIRMATION_HELP)


class ReasonOut(Schema):
    code: str = Field(description="What kind of cause (queues.why.QUEUE_CODES / JOB_CODES); 'unknown' when Redis did "
                                  "not answer, 'no_cause_found' when the evidence cannot decide")
    text: str = Field(description="The cause in a sentence")
    evidence: dict[str, Any] = Field(description="The figures behind it; `marks` says of each whether it is exact, "
                                                 "estimated or stale (`ages_ms`: how old)")


class WhyOut(Schema):
    reasons: list[ReasonOut] = Field(description="Most decisive first")
    as_of_ms: int | None = Field(description="The Redis server's clock at the read; None when it did not answer")


class OrderIn(Schema):
    """An order as POST /api/orders takes it (checked field by field; every bad field is named in one 400)."""

    client_order_id: str = Field(pattern=r"^[A-Za-z0-9._:-]{1,64}$",
                                 description="Your id for the order: sending it again never places a second order")
    side: Literal["buy", "sell"]
    symbol: str = Field(description="The instrument, e.g. ACME or BTC-USD")
    type: Literal["limit", "market"]
    quantity: int = Field(ge=1, description="Lots")
    price: Decimal | None = Field(None, description="Limit orders only: a multiple of the tick, as a string or number")
    time_in_force: Literal["GTC", "IOC", "FOK", "DAY"] = Field(
        description=f"A market order takes {' or '.join(MARKET_TIMES_IN_FORCE)}")


ORDER_BODY_HELP = f"A JSON object of at most {MAX_BODY_BYTES} bytes"


class OrderOut(Schema):
    order_id: str = Field(description="The order's id: the first one placed under this client order id")
    client_order_id: str
    status: Literal["admitted", "duplicate"] = Field(
        description="admitted (201): placed now; duplicate (200): the same order was placed before, nothing new was")


class OrderRefusedOut(Schema):
    error: str
    errors: dict[str, str] = Field({}, description="Each bad field (or 'body') with why")


class OrderConflictOut(Schema):
    error: str = Field(description="Which fields differ from the order placed first under this client order id")
    order_id: str
    client_order_id: str
    status: Literal["conflict"]
    differs: list[str] = Field(description="The fields whose values differ")


class DeployMarkIn(Schema):
    label: str = Field(min_length=1, max_length=64, description="The release deployed, e.g. v1.5.0")
    at_ms: int | None = Field(None, ge=0, le=10 ** 14, description="When (epoch ms); none for now")


class DeployMarkOut(Schema):
    at_ms: int
    label: str


class DeployMarksOut(Schema):
    now_ms: int
    marks: list[DeployMarkOut] = Field(description="Oldest first; one per label and minute, kept 90 days")


class FieldShareOut(Schema):
    field: str = Field(description='The field value as a field filter reads it, e.g. tenant="acme"')
    in_group: int = Field(description="Sampled payloads of the group that hold it")
    group_payloads: int = Field(description="Payloads of the group sampled")
    group_share: float
    all_share: float = Field(description="Its share of all jobs (the sampled done, pending, active and failed "
                                         "jobs, weighed by how many each state holds)")
    text: str = Field(description="E.g. '93 % have tenant=\"acme\" against 8 % of all jobs'")


class ReleaseCountOut(Schema):
    release: str = Field(description="A release label, 'release unknown' (a worker that told none) or 'no attempt'")
    jobs: int


class HostCountOut(Schema):
    host: str = Field(description="A host, or 'host unknown'")
    jobs: int


class ExplainedGroupOut(Schema):
    group: str
    count: int
    signature: str
    first_ms: int | None
    last_ms: int | None
    sample_id: str
    sample_error: str
    unread: dict[str, int] = Field(description="Values another writer made longer than any script writes, not read "
                                               "(empty in their place): value name -> its length in bytes")
    releases_ever: list[str] = Field(description="Every release its failing attempts ran on, kept by the moves "
                                                 "(at most 16); 'release unknown' for attempts that recorded none")
    new_since: str = Field(description="The release it is new since (no attempt of it ran before); '' when none")
    new_since_mark: bool = Field(description="It began after the newest deploy mark")
    sampled: int = Field(description="Its jobs among the newest failed jobs sampled")
    last_hour: int
    hour_before: int
    releases: list[ReleaseCountOut] = Field(description="Of its sampled jobs, by the release of the failing attempt")
    hosts: list[HostCountOut]
    fields: list[FieldShareOut] = Field(description="Payload field values over-represented in it")


class FailuresOut(Schema):
    queue: str
    now_ms: int
    failed: int
    group_count: int
    problem: str
    sampled_failed: int
    sample_reached_back_ms: int | None
    sample_whole: bool
    rate_whole: bool = Field(description="The last two hours' counts are whole (the sample reached past them)")
    baseline_payloads: int
    last_mark: DeployMarkOut | None
    release: str
    host: str
    sort: str
    hidden: int = Field(description="Groups read but left out by the release and host filters")
    redis_us: int
    notes: list[str] = Field(description="What the figures leave out, in words: a state whose jobs could not be "
                                         "sampled, a sample that did not reach every failed job")
    groups: list[ExplainedGroupOut]


class FailureActionIn(Schema):
    queue: str = Field(pattern=QUEUE_PATTERN, max_length=128)
    move: MatchMoveName = Field(description="retry or delete (failed jobs); the others are refused in words")
    group: str = Field(pattern=r"^[0-9a-f]{12}$", description="The failure group, as GET /api/failures names it")
    release: str = Field("", max_length=64, description="Only the jobs whose newest attempt ran on this release "
                                                        "('-': release unknown)")
    host: str = Field("", max_length=256, description="Only the jobs whose newest attempt ran on this host")
    field: str = Field("", max_length=600, description='Only the jobs whose JSON payload has this value, as a field '
                                                       'filter: tenant="acme"')
    confirmation: str = Field("", description=CONFIRMATION_HELP)


class RedactionOut(Schema):
    queue: str
    paths: list[str] = Field(description="The queue's own masked JSON paths (beyond default_names)")
    mask_all: bool = Field(description="Masked for everyone, operators too (else viewers only)")
    default_names: list[str] = Field(description="Keys masked at any depth on every queue, whatever their case")
    set_by: str
    set_ms: int | None
    odd: str = Field(description="What is odd about the stored paths ('' when nothing); then everyone sees masked")


class RedactionIn(Schema):
    paths: list[str] = Field(max_length=32, description="JSON paths such as card.number, $.user.ssn, items[*].code, "
                                                        "$..ssn (any depth); [] with mask_all false removes them")
    mask_all: bool = False
    confirmation: str = Field("", description=CONFIRMATION_HELP)
