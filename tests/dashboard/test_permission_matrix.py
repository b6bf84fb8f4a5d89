"""The permission matrix: every URL pattern and socket route, every action it can perform, as each role and with a
queue grant, enforced on the server.

Generated: the patterns from the URLconf (the API's from its operations), the socket routes and message types from
the routing and their consumers, and each one's actions from what its view declares
(``dashboard.permissions.performs``; a consumer's ``PERFORMS``). A pattern without a declaration is a read: its
action is viewing. ``REQUESTS`` says only how to send to each pattern; a pattern without one fails the test that
lists them, and none is left out.

Personas: a viewer, an operator, a signed-in account without a console role, and a viewer granted the action's
permission on ``billing-*`` only: aiming at ``billing-eu`` it may do what is done on one queue, aiming at ``mail``
it is refused. Allowed: any answer but 401, 403 or the login page. Refused: 403, with the keyspace as it was.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from dashboard.actions.bulk import RUN_ACTIONS
from dashboard.actions.models import ActionGrant, AuditEntry
from dashboard.alerts.models import AlertRule, AlertSilence
from dashboard.api.api import api
from dashboard.asgi import application
from dashboard.orders.models import ApiToken
from dashboard.orders.tokens import api_token_create
from dashboard.permissions import Performs, permission_for
from dashboard.roles import OPERATORS, VIEWERS, user_create
from dashboard.routing import websocket_urlpatterns
from queues import EchoMQ
from queues.operator_moves import BY_NAME
from queues.schedules import Definition, add_schedule
from queues.search import MATCH_MOVES
from tests.support.jobs import failed_job
from tests.support.keyspace import keyspace_dump
from tests.support.sessions import session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

PERSONAS = ("no_role", "viewer", "granted_out", "granted_in", "operator")
# The queue each persona aims at; the granted viewer's grant is on billing-*.
AIM = {"no_role": "mail", "viewer": "mail", "granted_out": "mail", "granted_in": "billing-eu", "operator": "mail"}
GRANT_PATTERN = "billing-*"
VIEW = "view"


@dataclass(frozen=True)
class Request:
    """How to send to one pattern. In the path, the query and the bodies: {q} the persona's queue, {action} the action
    (as ``sent`` writes it), {state} a state the action applies to, {run} a bulk run of the action on the queue, {rule},
    {rule_name} and {silence} an alert rule of the queue and its silence, {token} another user's API token."""

    path: str
    query: str = ""
    form: dict[str, str] | None = None
    json: dict[str, Any] | None = None
    # Whoever may call it, signed in or not, console role or not (the login page, the probes, the API's 404).
    public: bool = False
    bearer: bool = False  # sent with the persona's API token instead of its session (/metrics)
    sent: Callable[[str], str] = lambda action: action


def get(path: str, query: str = "", **kwargs: Any) -> Request:
    return Request(path, query, **kwargs)


def post(path: str, form: dict[str, str]) -> Request:
    return Request(path, form=form)


def api_body(path: str, body: dict[str, Any], **kwargs: Any) -> Request:
    return Request(path, json=body, **kwargs)


JOB = {"q": "{q}", "id": "a", "state": "{state}", "attempts": "1"}
SCHEDULE = {"every_ms": "60000", "payload": "x", "max_attempts": "3"}
# Keyed by the pattern's name (each API operation's pattern is named after its function).
REQUESTS: dict[str, Request] = {
    "login": get("/login/", public=True),
    "logout": Request("/logout/", form={}, public=True),
    "overview": get("/"),
    "queue": get("/queue/", "q={q}"),
    "job": get("/job/", "q={q}&id=a"),
    "job_payload": get("/job/payload/", "q={q}&id=a"),
    "job_version": get("/job/version/", "q={q}&id=a&v=1"),
    "schema": get("/schema/", "q={q}"),
    "find": get("/find/", "id=a&q={q}"),
    "tokens": get("/tokens/"),
    "token_revoke": post("/tokens/revoke/", {"id": "{token}"}),
    "search": get("/search/", "q={q}&state=failed&id_prefix=a"),
    "deployments": get("/deployments/", "id=a"),
    "failures": get("/failures/", "q={q}"),
    "views": get("/views/"),
    "view_save": post("/views/save/", {"name": "v", "kind": "failures", "q": "{q}"}),
    "view_open": get("/views/999999/"),
    "view_pin": post("/views/999999/pin/", {"pinned": "1"}),
    "view_delete": post("/views/999999/delete/", {}),
    "alerts": get("/alerts/"),
    "alert_new": post("/alerts/new/", {"name": "new-{q}", "kind": "why", "q": "{q}",
                                       "webhook_url": "http://127.0.0.1:9/h"}),
    "alert_delete": post("/alerts/{rule}/delete/", {}),
    "alert_silence": post("/alerts/silence/", {"rule": "{rule}", "duration": "2h"}),
    "alert_unsilence": post("/alerts/silences/{silence}/end/", {}),
    "action_job": post("/actions/job/", {**JOB, "move": "{action}"}),
    "action_edit": post("/actions/edit/", {**JOB, "payload": "{}", "retry": "0"}),
    "action_restore": post("/actions/restore/", {**JOB, "version": "1"}),
    "action_clone": post("/actions/clone/", {**JOB, "new_id": "a-clone", "payload_from": "source"}),
    "action_redaction": post("/actions/redaction/", {"q": "{q}", "paths": "card.number", "mask_all": "1"}),
    "action_schema": post("/actions/schema/", {"q": "{q}", "schema": '{"type": "object"}'}),
    "action_queue": post("/actions/queue/", {"q": "{q}", "action": "{action}", "older_than_ms": "0"}),
    "action_selection": post("/actions/selection/", {"q": "{q}", "move": "{action}", "job": "{state}:1:a"}),
    "action_search": post("/actions/search/", {"q": "{q}", "move": "{action}", "state": "{state}", "id_prefix": "a"}),
    "action_pause": post("/actions/pause/", {"q": "{q}", "action": "{action}", "reason": "deploy"}),
    "action_deploy": post("/actions/deploy/", {"q": "{q}", "label": "v1.5.0"}),
    "action_remove_key": post("/actions/remove-key/", {"q": "{q}", "set": "done", "type": "string"}),
    "action_run": get("/actions/runs/{run}/"),
    "action_run_cancel": post("/actions/runs/{run}/cancel/", {}),
    "audit_log": get("/audit/"),
    "schedules": get("/schedules/"),
    "schedule_edit": get("/schedules/edit/", "q={q}&name=nightly"),
    "schedule_action": post("/schedules/act/", {"q": "{q}", "name": "nightly", "version": "1", "action": "{action}",
                                                **SCHEDULE}),
    "cluster": get("/cluster/"),
    "sweeper_status": get("/sweeper/"),
    "healthz": get("/healthz", public=True),
    "readyz": get("/readyz", public=True),
    "metrics": get("/metrics", bearer=True),
    "workers": get("/workers/"),
    "openapi-json": get("/api/schema"),
    "openapi-view": get("/api/docs"),
    "api-root": get("/api/", public=True),  # no such endpoint: 404 for everyone
    "queues_list": get("/api/queues"),
    "deployments_list": get("/api/deployments", "id=a"),
    "deployments_search": get("/api/deployments/search", "state=failed&error=boom"),
    "queue_detail": get("/api/queue", "q={q}"),
    "queue_slo": get("/api/queues/{q}/slo"),
    "queue_slo_set": api_body("/api/queues/{q}/slo", {"metric": "wait", "under_ms": 30000, "target": 95}),
    "queue_slo_delete": Request("/api/queues/{q}/slo"),
    "queue_redaction": get("/api/queues/{q}/redaction"),
    "queue_redaction_set": api_body("/api/queues/{q}/redaction", {"paths": ["card.number"], "mask_all": True}),
    "queue_jobs": get("/api/queue/jobs", "q={q}&state=failed"),
    "job_detail": get("/api/job", "q={q}&id=a"),
    "queue_why": get("/api/queues/{q}/why"),
    "job_why": get("/api/jobs/{q}/a/why"),
    "audit_list": get("/api/audit"),
    "run_detail": get("/api/runs/{run}"),
    "job_action": api_body("/api/job/actions", {"queue": "{q}", "id": "a", "move": "{action}",
                                                "expect_state": "{state}", "expect_attempts": "1"}),
    "job_clone": api_body("/api/job/clone", {"queue": "{q}", "id": "a", "expect_state": "{state}",
                                             "expect_attempts": "1", "new_id": "a-clone"}),
    "selection_action": api_body("/api/queue/selection", {"queue": "{q}", "move": "{action}",
                                                          "jobs": [{"id": "a", "state": "{state}", "attempts": "1"}]}),
    "queue_action": api_body("/api/queue/actions", {"queue": "{q}", "action": "{action}"}),
    "queue_pause": api_body("/api/queue/pause", {"queue": "{q}", "reason": "deploy"}),
    "queue_resume": api_body("/api/queue/resume", {"queue": "{q}"}),
    "run_cancel": Request("/api/runs/{run}/cancel", json={}),
    "orders_place": api_body("/api/orders", {"client_order_id": "c-{q}", "side": "buy", "symbol": "ACME",
                                             "type": "limit", "quantity": 5, "price": "10.25", "time_in_force": "GTC"}),
    "failures_list": get("/api/failures", "q={q}"),
    "failures_action": api_body("/api/failures/actions", {"queue": "{q}", "move": "{action}", "group": "0123456789ab"}),
    "deploys_list": get("/api/deploys"),
    "deploys_mark": api_body("/api/deploys", {"label": "v1.5.0"}),
    "schedules_list": get("/api/schedules"),
    "schedules_add": api_body("/api/schedules", {"queue": "{q}", "name": "hourly", "every_ms": 60000, "payload": "x"}),
    "schedule_act": api_body("/api/schedules/{q}/nightly/actions",
                             {"action": "{action}", "version": 1, "definition": {"every_ms": 60000, "payload": "x"}},
                             sent=lambda action: action.removeprefix("schedule_")),
    "views_list": get("/api/views"),
    "views_save": api_body("/api/views", {"name": "v", "kind": "failures", "params": {"q": "{q}"}}),
    "views_detail": get("/api/views/999999"),
    "views_delete": Request("/api/views/999999"),
    "views_jobs": get("/api/views/999999/jobs"),
    "alerts_list": get("/api/alerts"),
    "alerts_add": api_body("/api/alerts", {"name": "new-{q}", "kind": "why", "queue": "{q}",
                                           "webhook_url": "http://127.0.0.1:9/h"}),
    "alerts_detail": get("/api/alerts/{rule_name}"),
    "alerts_delete": Request("/api/alerts/{rule_name}"),
    "silences_list": get("/api/silences"),
    "silences_add": api_body("/api/silences", {"rule": "{rule_name}", "duration": "2h"}),
    "silences_end": Request("/api/silences/{silence}"),
}
# The admin site's pages: staff only (none of the personas is), each method sends them to the admin's login page.
ADMIN_SAMPLES = {"object_id": "1", "content_type_id": "1", "id": "1", "app_label": "actions", "url": "no-such-page/"}


@dataclass(frozen=True)
class Route:
    """One URL pattern as the matrix tries it: its name, the method its actions take, and what it performs."""

    name: str
    route: str
    method: str
    performs: Performs | None

    def actions(self) -> tuple[str, ...]:
        return self.performs.actions if self.performs else (VIEW,)


def _api_operations() -> dict[str, tuple[str, Any]]:
    """Each API operation's pattern name → (its method, its function)."""
    found = {}
    for _prefix, router in api._routers:
        for path_view in router.path_operations.values():
            for operation in path_view.operations:
                found[operation.view_func.__name__] = (operation.methods[0], operation.view_func)
    return found


def url_patterns() -> list[tuple[str, URLPattern]]:
    def walk(patterns: list[Any], prefix: str) -> Iterator[tuple[str, URLPattern]]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern), pattern

    return list(walk(get_resolver().url_patterns, ""))


def console_routes() -> list[Route]:
    """Every URL pattern but the admin site's, with its method (an API operation's own; a page's POST when its request
    sends a form) and what its view declares it performs."""
    operations = _api_operations()
    routes = []
    for route, pattern in url_patterns():
        if route.startswith("admin/"):
            continue
        name = str(pattern.name)
        if route.startswith("api/") and name in operations:
            method, view = operations[name]
        else:
            sample = REQUESTS.get(name)
            method, view = ("POST" if sample is not None and sample.form is not None else "GET"), pattern.callback
        routes.append(Route(name, route, method, getattr(view, "emq_performs", None)))
    return routes


def admin_paths() -> list[str]:
    paths = []
    for route, _pattern in url_patterns():
        if route.startswith("admin/") and route not in {"admin/login/", "admin/logout/"}:
            path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: ADMIN_SAMPLES[m[1]], route)
            path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: ADMIN_SAMPLES[m[1]], path).replace("^", "").replace("$", "")
            paths.append("/" + path)
    return paths


def test_every_url_pattern_has_a_request_in_the_table() -> None:
    routes = console_routes()
    missing = [f"{route.name} ({route.route})" for route in routes if route.name not in REQUESTS]
    stale = sorted(set(REQUESTS) - {route.name for route in routes})

    assert not missing, ("These URL patterns have no entry in REQUESTS (tests/dashboard/test_permission_matrix.py): "
                         + ", ".join(missing))
    assert not stale, f"REQUESTS has entries for patterns that no longer exist: {stale}"


def test_each_request_sends_the_action_in_the_field_its_view_reads_it_from() -> None:
    wrong = []
    for route in console_routes():
        sample = REQUESTS.get(route.name)
        if route.performs is None or sample is None or not route.performs.field:
            continue
        sent: Any
        if route.performs.field == "run":  # the run the path names: one of that action
            sent = "{action}" if "{run}" in sample.path else sample.path
        else:
            sent = {**(sample.form or {}), **(sample.json or {})}.get(route.performs.field)
        if sent != "{action}":
            wrong.append(f"{route.name}: {route.performs.field}={sent!r}")

    assert not wrong, wrong


def test_every_action_a_view_performs_needs_a_console_permission_or_names_its_own() -> None:
    unknown = [f"{route.name}: {action}" for route in console_routes() if route.performs and not route.performs.permission
               for action in route.performs.actions if permission_for(action) == "act_on_jobs"]

    assert not unknown, f"actions without a permission in dashboard.permissions.NEEDS: {unknown}"


# The world each route is tried in ----------------------------------------------------------------------------------


@dataclass
class World:
    mq: EchoMQ
    users: dict[str, User]
    clients: dict[str, Client] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)  # persona → its API token (read scope)
    rules: dict[str, AlertRule] = field(default_factory=dict)
    silences: dict[str, AlertSilence] = field(default_factory=dict)
    runs: dict[tuple[str, str], AuditEntry] = field(default_factory=dict)
    other_token: int = 0

    def client(self, persona: str) -> Client:
        if persona not in self.clients:
            self.clients[persona] = client = Client()
            client.force_login(self.users[persona])
        return self.clients[persona]

    def run(self, queue: str, action: str) -> AuditEntry:
        """A running bulk run of ``action`` on ``queue`` (only its row: the refusals under test come first)."""
        if (queue, action) not in self.runs:
            self.runs[queue, action] = AuditEntry.objects.create(
                username="someone", queue=queue, action=action, scope=AuditEntry.Scope.QUEUE, outcome="running")
        return self.runs[queue, action]

    def grant(self, action: str) -> None:
        """The granted viewer holds ``action``'s permission on billing-* only (nothing for viewing, which it has)."""
        granted = self.users["granted_in"]
        ActionGrant.objects.filter(user=granted).delete()
        if action != VIEW and permission_for(action) != "act_on_jobs":
            ActionGrant.objects.create(user=granted, permission=permission_for(action), pattern=GRANT_PATTERN)


@pytest.fixture
def world(console_mq: EchoMQ) -> World:
    granted = user_create(username="gina", password="gina-password", role=VIEWERS)
    users = {
        "no_role": User.objects.create_user(username="nora", password="nora-password"),
        "viewer": user_create(username="vera", password="vera-password", role=VIEWERS),
        "granted_out": granted,
        "granted_in": granted,
        "operator": user_create(username="otto", password="otto-password", role=OPERATORS),
    }
    world = World(console_mq, users)
    someone = user_create(username="sam", password="sam-password", role=VIEWERS)
    api_token_create(user=someone, name="sams")
    world.other_token = ApiToken.objects.get(name="sams").pk
    for persona, user in users.items():
        world.tokens[persona] = api_token_create(user=user, name=f"scrape-{persona}", scope="read")
    for queue in ("mail", "billing-eu"):
        failed_job(console_mq, queue, "a")
        add_schedule(console_mq, queue, "nightly", Definition.of(every_ms=60_000, payload="x"))
        rule = AlertRule.objects.create(name=f"r-{queue}", kind=AlertRule.Kind.WHY, queue=queue,
                                        parameters={"codes": ["not_draining"]}, webhook_url="http://127.0.0.1:9/h")
        world.rules[queue] = rule
        world.silences[queue] = AlertSilence.objects.create(rule=rule, ends_at=timezone.now() + timedelta(hours=1),
                                                            created_by="someone")
    return world


def _fill(text: str, world: World, persona: str, action: str, sample: Request) -> str:
    queue = AIM[persona]
    move = BY_NAME.get(action)
    state = move.applies_to[0] if move and move.applies_to else MATCH_MOVES.get(action, ("failed",))[0]
    values = {"{q}": queue, "{action}": sample.sent(action), "{state}": state,
              "{run}": str(world.run(queue, action if action in _run_actions() else "retry_all").pk),
              "{rule}": str(world.rules[queue].pk), "{rule_name}": world.rules[queue].name,
              "{silence}": str(world.silences[queue].pk), "{token}": str(world.other_token)}
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def _run_actions() -> set[str]:
    return set(RUN_ACTIONS)


def _send(world: World, route: Route, persona: str, action: str) -> Any:
    sample = REQUESTS[route.name]
    path = _fill(sample.path, world, persona, action, sample)
    if sample.bearer:
        return Client().get(path, headers={"Authorization": f"Bearer {world.tokens[persona]}"})
    client = world.client(persona)
    if route.method in {"GET", "HEAD"}:
        query = _fill(sample.query, world, persona, action, sample)
        return client.generic(route.method, path + (f"?{query}" if query else ""))
    if sample.json is not None:
        body = _fill(json.dumps(sample.json), world, persona, action, sample)
        return client.generic(route.method, path, body, content_type="application/json")
    if sample.form is not None:
        form = {name: _fill(value, world, persona, action, sample) for name, value in sample.form.items()}
        return client.post(path, form)
    return client.generic(route.method, path)


def expected_allowed(route: Route, persona: str) -> bool:
    if REQUESTS[route.name].public:
        return True
    if route.performs is None:
        return persona != "no_role"
    if route.performs.permission:  # a permission none of the personas holds (the exchange's)
        return False
    if persona == "operator":
        return True
    return persona == "granted_in" and route.performs.on_queue


def _allowed(response: Any) -> bool:
    if response.status_code in {401, 403}:
        return False
    return not (response.status_code == 302 and "/login/?next=" in response.get("Location", ""))


@pytest.mark.parametrize("name", sorted({route.name for route in console_routes()}))
def test_every_action_of_every_route_is_allowed_and_refused_as_each_role_and_grant_says(
        name: str, world: World) -> None:
    route = next(route for route in console_routes() if route.name == name)
    if name not in REQUESTS:
        pytest.fail(f"no request for {name!r}: see test_every_url_pattern_has_a_request_in_the_table")
    wrong = []
    for action in route.actions():
        world.grant(action)
        # The refused first: an allowed action may change what the next request finds.
        for persona in sorted(PERSONAS, key=lambda p: expected_allowed(route, p)):
            allowed = expected_allowed(route, persona)
            before = None if allowed else keyspace_dump(world.mq.redis)
            response = _send(world, route, persona, action)
            if _allowed(response) != allowed:
                wrong.append(f"{action} as {persona} on {AIM[persona]}: expected {'allowed' if allowed else 403}, "
                             f"got {response.status_code} {response.content[:160]!r}")
            elif not allowed and response.status_code != 403:
                wrong.append(f"{action} as {persona}: refused with {response.status_code}, not 403")
            elif before is not None and keyspace_dump(world.mq.redis) != before:
                wrong.append(f"{action} as {persona}: refused, yet the keyspace changed")

    assert not wrong, f"{route.method} {route.route} ({name}):\n" + "\n".join(wrong)


def test_every_admin_page_sends_every_persona_to_the_admin_login(world: World) -> None:
    wrong = [f"{persona} {path}: {answer.status_code}" for path in admin_paths() for persona in PERSONAS
             if not ((answer := world.client(persona).get(path)).status_code == 302
                     and answer["Location"].startswith("/admin/login/"))]

    assert not wrong, "\n".join(wrong)


# The sockets -------------------------------------------------------------------------------------------------------


def socket_routes() -> dict[str, Any]:
    return {str(pattern.pattern): pattern.callback.consumer_class for pattern in websocket_urlpatterns}


SOCKET_QUERIES = {
    "ws/overview/": "", "ws/queue/": "q={q}", "ws/job/": "q={q}&id=a", "ws/actions/run/": "id={run}",
    "ws/search/": "run=0123456789ab&q={q}&state=failed&id_prefix=a", "": "",
}


def test_every_socket_route_has_a_query_in_the_table() -> None:
    assert set(socket_routes()) == set(SOCKET_QUERIES)


async def _first(communicator: WebsocketCommunicator) -> dict[str, Any]:
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    return dict(await communicator.receive_output(timeout=10))


async def _open(world: World, route: str, persona: str, action: str) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    queue = AIM[persona]
    run = await sync_to_async(world.run)(queue, action if action in _run_actions() else "retry_all")
    query = SOCKET_QUERIES[route].replace("{q}", queue).replace("{run}", str(run.pk))
    cookie = await sync_to_async(session_cookie)(world.users[persona])
    communicator = WebsocketCommunicator(application, f"/{route}?{query}", headers=[
        (b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie)])
    return communicator, await _first(communicator)


@pytest.mark.parametrize("route", sorted(r for r in socket_routes() if r))
async def test_every_socket_route_opens_for_whoever_may_view_and_not_for_an_account_without_a_role(
        route: str, world: World, stop_followers: None) -> None:
    wrong = []
    for persona in PERSONAS:
        communicator, first = await _open(world, route, persona, VIEW)
        closed = first["type"] == "websocket.close"
        if closed != (persona == "no_role") or (closed and first.get("code") != 4403):
            wrong.append(f"{persona}: {first}")
        await communicator.disconnect()

    assert not wrong, f"{route!r}:\n" + "\n".join(wrong)


def socket_actions() -> list[tuple[str, str, str]]:
    """Every (route, message type, action) a consumer declares it performs."""
    return [(route, message, action) for route, consumer in socket_routes().items()
            for message, performs in getattr(consumer, "PERFORMS", {}).items() for action in performs.actions]


def test_every_message_type_a_consumer_accepts_is_a_read_or_declares_what_it_performs() -> None:
    undeclared = [f"{route}: {message}" for route, consumer in socket_routes().items()
                  for message in getattr(consumer, "PERFORMS", {}) if message not in consumer.MESSAGE_TYPES]

    assert socket_actions() and not undeclared


@pytest.mark.parametrize(("route", "message", "action"), socket_actions())
async def test_every_socket_action_is_done_or_refused_as_each_role_and_grant_says(
        route: str, message: str, action: str, world: World, stop_followers: None) -> None:
    await sync_to_async(world.grant)(action)
    wrong = []
    for persona in PERSONAS:
        allowed = persona == "operator" or persona == "granted_in"
        communicator, first = await _open(world, route, persona, action)
        if first["type"] == "websocket.close":
            if persona != "no_role":
                wrong.append(f"{persona}: closed on connecting")
            continue
        await communicator.send_to(text_data=json.dumps({"action": message}))
        run = world.runs[AIM[persona], action]
        # Until the run is cancelled, or the socket says it was refused (the progress it pushes meanwhile aside).
        deadline = time.monotonic() + 10
        cancelled = refused = False
        while time.monotonic() < deadline and not (cancelled or refused):
            if not await communicator.receive_nothing(timeout=0.2):
                refused = "refused:" in (await communicator.receive_output(timeout=5)).get("text", "")
            await sync_to_async(run.refresh_from_db)()
            cancelled = bool(run.cancel_requested_by)
        await communicator.disconnect()
        if cancelled != allowed or refused == allowed:
            wrong.append(f"{persona}: expected {'cancelled' if allowed else 'refused'}, got the run "
                         f"{'cancelled' if cancelled else 'running'}")
        await sync_to_async(AuditEntry.objects.filter(pk=run.pk).update)(cancel_requested_by="")

    assert not wrong, f"{route} {message} of a {action} run:\n" + "\n".join(wrong)
