"""Who may do what, on every path, enforced on the server: a table over the URLconf and the WebSocket routes.

``VIEWS`` declares, for every URL pattern, the request to send and the status
each persona gets for each HTTP method; ``SOCKETS`` declares, for every
WebSocket route, what each persona gets on connecting and for each message
type its consumer accepts (``MESSAGE_TYPES``). The tests are generated from
``dashboard.urls`` and ``dashboard.routing``: a URL or route or message type
without an entry fails, saying which entry to add. The admin site's patterns
(one set per registered model) follow one declared rule, ``ADMIN``, with its
login and logout pages declared apart.

Personas: anonymous; a viewer; an operator restricted to ``billing-*`` (and
the ``orders`` queue) aiming inside the grant (at ``billing-eu``); one
restricted to ``billing-*`` aiming outside it (at ``mail``); an unrestricted
operator (at ``mail``); a signed-in account with no console role, as the
admin's "Add user" makes one. The three operators may also place orders. On
the sockets, one more: a viewer whose role is taken away while its socket is
open (``Socket.demoted``: what the open socket does then).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from dashboard.actions import runner
from dashboard.actions.models import AuditEntry, QueueGrant
from dashboard.asgi import application
from dashboard.consumers import RECHECK_USER_S
from dashboard.roles import OPERATORS, VIEWERS, user_create
from dashboard.routing import websocket_urlpatterns
from queues import EchoMQ
from queues.search import Search
from tests.support.confirm import post_confirming
from tests.support.jobs import failed_job, failed_jobs

pytestmark = pytest.mark.django_db(transaction=True)

PERSONAS = ("anonymous", "viewer", "operator_in", "operator_out", "operator", "no_role")
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# The queue each persona's requests aim at.
AIM = {"anonymous": "mail", "viewer": "mail", "operator_in": "billing-eu", "operator_out": "mail", "operator": "mail",
       "no_role": "mail", "demoted": "mail"}
# One status per persona, in PERSONAS order.
Statuses = tuple[int, int, int, int, int, int]


def every(status: int) -> Statuses:
    return (status,) * 6


# A console page: anonymous visitors go to the login page; an account without a console role reads nothing.
PAGE: Statuses = (302, 200, 200, 200, 200, 403)
ACTION: Statuses = (302, 403, 200, 403, 200, 403)  # an operator action, refused outside the grant
API_READ: Statuses = (401, 200, 200, 200, 200, 403)
API_ACT: Statuses = (401, 403, 200, 403, 200, 403)
API_ASK: Statuses = (401, 403, 428, 403, 428, 403)  # a bulk action first answers with the confirmation to send back


@dataclass(frozen=True)
class Entry:
    """What to send to one URL pattern and what each persona gets back, per method."""

    path: str  # "{run}": the id of a bulk run on the persona's queue
    answers: dict[str, Statuses]
    query: str = ""  # for GET, HEAD, OPTIONS; "{q}": the persona's queue
    form: dict[str, str] = field(default_factory=dict)  # the body of the other methods
    json_order: bool = False  # the body is a fresh exchange order instead
    json_body: dict[str, Any] | None = None  # the body is this JSON instead ("{q}" in its strings: the queue)
    other: Statuses = every(405)  # every method not in answers

    def expected(self, method: str) -> Statuses:
        return self.answers.get(method, self.other)


def page(path: str, query: str = "", get: Statuses = PAGE) -> Entry:
    """A page that answers GET and HEAD alike and refuses every other method."""
    return Entry(path, {"GET": get, "HEAD": get}, query=query)


def action(path: str, form: dict[str, str], post: Statuses = ACTION) -> Entry:
    return Entry(path, {"POST": post}, form=form)


VIEWS: dict[str, Entry] = {
    # LoginView takes PUT as POST (its body is not parsed: nobody logs in that way).
    "login/": Entry("/login/", {"GET": every(200), "HEAD": every(200), "POST": every(200), "PUT": every(200),
                              "OPTIONS": every(200)},
                    form={"username": "nobody", "password": ""}),
    "logout/": Entry("/logout/", {"POST": every(302), "OPTIONS": every(200)}),
    "api/orders": Entry("/api/orders", {"POST": (401, 403, 201, 403, 201, 403)}, json_order=True),
    "": page("/"),
    "queue/": page("/queue/", "q={q}"),
    "job/": page("/job/", "q={q}&id=a"),
    "job/payload/": page("/job/payload/", "q={q}&id=a"),
    # A version download of a job that keeps none: 404 for whoever may read.
    "job/version/": page("/job/version/", "q={q}&id=a&v=1", get=(302, 404, 404, 404, 404, 403)),
    "schema/": page("/schema/", "q={q}"),
    "tokens/": page("/tokens/"),
    "tokens/revoke/": action("/tokens/revoke/", {"id": "0"}, post=(302, 302, 302, 302, 302, 403)),
    "find/": page("/find/", "id=a&q={q}", get=(302, 302, 302, 302, 302, 403)),
    "deployments/": page("/deployments/", "id=a"),
    "actions/job/": action("/actions/job/", {"q": "{q}", "id": "a", "move": "retry", "state": "failed",
                                             "attempts": "1"}),
    "actions/queue/": action("/actions/queue/", {"q": "{q}", "action": "retry_all"}),
    # An edit that moved goes back to the job's page (302); a restore of a version the job lacks is refused in words.
    "actions/edit/": action("/actions/edit/", {"q": "{q}", "id": "a", "state": "failed", "attempts": "1",
                                               "payload": "{{}}", "retry": "0"}, post=(302, 403, 302, 403, 302, 403)),
    "actions/restore/": action("/actions/restore/", {"q": "{q}", "id": "a", "state": "failed", "attempts": "1",
                                                     "version": "1"}),
    # A clone asks first (a confirmation step), whatever it would make.
    "actions/clone/": action("/actions/clone/", {"q": "{q}", "id": "a", "state": "failed", "attempts": "1",
                                                 "new_id": "a-clone", "payload_from": "source"}),
    "actions/schema/": action("/actions/schema/", {"q": "{q}", "schema": '{{"type": "object"}}'}),
    # Asks first (a confirmation step): it changes what everyone is shown.
    "actions/redaction/": action("/actions/redaction/", {"q": "{q}", "paths": "card.number", "mask_all": "1"}),
    "actions/selection/": action("/actions/selection/", {"q": "{q}", "move": "retry", "job": "failed:1:a"},
                                 post=(302, 403, 302, 403, 302, 403)),
    "actions/runs/<int:pk>/": page("/actions/runs/{run}/"),
    "actions/runs/<int:pk>/cancel/": action("/actions/runs/{run}/cancel/", {}),
    "audit/": page("/audit/"),
    "cluster/": page("/cluster/"),
    "sweeper/": page("/sweeper/"),
    "healthz": page("/healthz", get=every(200)),
    "readyz": page("/readyz", get=every(200)),
    "metrics": page("/metrics", get=every(401)),  # a token or an allowed address, never a session
    "search/": page("/search/", "q={q}&state=failed&id_prefix=a"),
    "actions/pause/": action("/actions/pause/", {"q": "{q}", "action": "pause", "reason": "deploy"}),
    # A deploy mark is every queue's; a grant does not narrow it.
    "actions/deploy/": action("/actions/deploy/", {"q": "{q}", "label": "v1.5.0"}, post=(302, 403, 200, 403, 200, 403)),
    # Asks first (a confirmation step), as pause does.
    "actions/remove-key/": action("/actions/remove-key/", {"q": "{q}", "set": "done", "type": "string"}),
    "workers/": page("/workers/"),
    "schedules/": page("/schedules/"),
    # The edit form is an operator's (404: the persona's queue has no such schedule).
    "schedules/edit/": page("/schedules/edit/", "q={q}&name=nightly", get=(302, 403, 404, 403, 404, 403)),
    "schedules/act/": action("/schedules/act/", {"q": "{q}", "name": "nightly", "version": "1",
                                                "action": "schedule_pause"}),
    "failures/": page("/failures/", "q={q}"),
    "actions/search/": action("/actions/search/", {"q": "{q}", "move": "retry", "state": "failed", "id_prefix": "a"}),
    # The JSON API: a session (CSRF-checked) or a token; anonymous callers get 401, not a login page.
    "api/": Entry("/api/", {}, other=every(404)),
    # The OpenAPI schema and its interactive docs: for whoever may read the API, whatever the method (django-ninja
    # does not restrict it).
    "api/schema": Entry("/api/schema", {}, other=API_READ),
    "api/docs": Entry("/api/docs", {}, other=API_READ),
    "api/queues": page("/api/queues", get=API_READ),
    "api/queue": page("/api/queue", "q={q}", get=API_READ),
    "api/queue/jobs": page("/api/queue/jobs", "q={q}&state=failed", get=API_READ),
    "api/job": page("/api/job", "q={q}&id=a", get=API_READ),
    "api/queues/<q>/why": page("/api/queues/{q}/why", get=API_READ),
    # PUT runs before DELETE (METHODS order), so the operators' DELETE finds the objective their PUT set.
    "api/queues/<q>/slo": Entry("/api/queues/{q}/slo", {"GET": API_READ, "HEAD": API_READ, "PUT": API_ACT,
                                                        "DELETE": API_ACT},
                                json_body={"metric": "wait", "under_ms": 30000, "target": 95}),
    "api/jobs/<q>/<path:id>/why": page("/api/jobs/{q}/a/why", get=API_READ),
    "api/queues/<q>/redaction": Entry("/api/queues/{q}/redaction", {"GET": API_READ, "HEAD": API_READ, "PUT": API_ASK},
                                      json_body={"paths": ["card.number"], "mask_all": True}),
    "api/audit": page("/api/audit", get=API_READ),
    "api/runs/<run_id>": page("/api/runs/{run}", get=API_READ),
    "api/job/actions": Entry("/api/job/actions", {"POST": API_ACT}, json_body={
        "queue": "{q}", "id": "a", "move": "retry", "expect_state": "failed", "expect_attempts": "1"}),
    "api/job/clone": Entry("/api/job/clone", {"POST": API_ASK}, json_body={
        "queue": "{q}", "id": "a", "expect_state": "failed", "expect_attempts": "1", "new_id": "a-clone"}),
    "api/queue/actions": Entry("/api/queue/actions", {"POST": API_ASK}, json_body={
        "queue": "{q}", "action": "retry_all"}),
    # One ticked job is not a large action: it runs without a confirmation.
    "api/queue/selection": Entry("/api/queue/selection", {"POST": (401, 403, 202, 403, 202, 403)}, json_body={
        "queue": "{q}", "move": "retry", "jobs": [{"id": "a", "state": "failed", "attempts": "1"}]}),
    "api/queue/pause": Entry("/api/queue/pause", {"POST": API_ASK}, json_body={"queue": "{q}", "reason": "deploy"}),
    "api/queue/resume": Entry("/api/queue/resume", {"POST": API_ASK}, json_body={"queue": "{q}"}),
    "api/runs/<run_id>/cancel": Entry("/api/runs/{run}/cancel", {"POST": API_ACT}),
    # A deploy mark is every queue's (no grant narrows it); the second in the same minute is the same mark (200).
    "api/failures": page("/api/failures", "q={q}", get=API_READ),
    "api/deployments": page("/api/deployments", "id=a", get=API_READ),
    "api/deployments/search": page("/api/deployments/search", "state=failed&error=boom", get=API_READ),
    # A slice of a failure group is a bulk action: the confirmation comes first, whatever it matches.
    "api/failures/actions": Entry("/api/failures/actions", {"POST": API_ASK}, json_body={
        "queue": "{q}", "move": "retry", "group": "0123456789ab"}),
    "api/deploys": Entry("/api/deploys", {"GET": API_READ, "HEAD": API_READ, "POST": (401, 403, 201, 200, 200, 403)},
                         json_body={"label": "v1.5.0"}),
    # Saved views: anyone who may look saves and opens them; a grant narrows which queues (a view of a queue outside
    # it: 403). No view 999999 exists: whoever may look is told so (404); an account without a role is refused first.
    "views/": page("/views/"),
    "views/save/": action("/views/save/", {"name": "v", "kind": "failures", "q": "{q}"},
                          post=(302, 302, 302, 403, 302, 403)),
    "views/<int:pk>/": page("/views/999999/", get=(302, 404, 404, 404, 404, 403)),
    "views/<int:pk>/pin/": action("/views/999999/pin/", {"pinned": "1"}, post=(302, 404, 404, 404, 404, 403)),
    "views/<int:pk>/delete/": action("/views/999999/delete/", {}, post=(302, 404, 404, 404, 404, 403)),
    "api/views": Entry("/api/views", {"GET": API_READ, "HEAD": API_READ, "POST": (401, 201, 201, 403, 201, 403)},
                       json_body={"name": "v", "kind": "failures", "params": {"q": "{q}"}}),
    "api/views/<view_id>": Entry("/api/views/999999", {"GET": (401, 404, 404, 404, 404, 403),
                                                      "HEAD": (401, 404, 404, 404, 404, 403),
                                                      "DELETE": (401, 404, 404, 404, 404, 403)}),
    "api/views/<view_id>/jobs": page("/api/views/999999/jobs", get=(401, 404, 404, 404, 404, 403)),
    # Alert rules: everyone who may look reads them; operators make, delete and silence them within their grants (a
    # silence of every rule: operators without grants). No rule or silence 999999 exists: 404 for whoever may look.
    "alerts/": page("/alerts/"),
    "alerts/new/": Entry("/alerts/new/", {"GET": PAGE, "HEAD": PAGE, "POST": (302, 403, 201, 403, 201, 403)},
                         query="kind=why&q={q}",
                         form={"name": "r-{q}", "kind": "why", "q": "{q}", "webhook_url": "http://127.0.0.1:9/h"}),
    "alerts/<int:pk>/delete/": action("/alerts/999999/delete/", {}, post=(302, 404, 404, 404, 404, 403)),
    "alerts/silence/": action("/alerts/silence/", {"duration": "2h"}, post=(302, 403, 403, 403, 302, 403)),
    "alerts/silences/<int:pk>/end/": action("/alerts/silences/999999/end/", {}, post=(302, 404, 404, 404, 404, 403)),
    "api/alerts": Entry("/api/alerts", {"GET": API_READ, "HEAD": API_READ, "POST": (401, 403, 201, 403, 201, 403)},
                        json_body={"name": "r-{q}", "kind": "why", "queue": "{q}", "webhook_url": "http://127.0.0.1:9/h"}),
    "api/alerts/<rule>": Entry("/api/alerts/no-such-rule", {"GET": (401, 404, 404, 404, 404, 403),
                                                            "HEAD": (401, 404, 404, 404, 404, 403),
                                                            "DELETE": (401, 404, 404, 404, 404, 403)}),
    "api/silences": Entry("/api/silences", {"GET": API_READ, "HEAD": API_READ, "POST": (401, 403, 403, 403, 201, 403)},
                          json_body={"duration": "2h"}),
    "api/silences/<silence_id>": Entry("/api/silences/999999", {"DELETE": (401, 404, 404, 404, 404, 403)}),
    "api/schedules": Entry("/api/schedules", {"GET": API_READ, "HEAD": API_READ, "POST": (401, 403, 201, 403, 201, 403)},
                           json_body={"queue": "{q}", "name": "nightly", "every_ms": 60000, "payload": "x"}),
    "api/schedules/<queue>/<name>/actions": Entry("/api/schedules/{q}/nightly/actions", {"POST": API_ASK},
                                                  json_body={"action": "pause", "version": 1}),
    "admin/login/": Entry("/admin/login/", {"GET": every(200), "HEAD": every(200), "POST": every(200), "PUT": every(200),
                                            "OPTIONS": every(200)}, form={"username": "nobody", "password": ""}),
    "admin/logout/": Entry("/admin/logout/", {}, other=every(302)),
}
# Every other page of the admin site: nobody here is staff, so every method goes to the admin's login page.
ADMIN = every(302)
SAMPLES = {"object_id": "1", "content_type_id": "1", "id": "1", "app_label": "actions", "url": "no-such-page/",
           "pk": "{run}"}


def url_routes() -> list[str]:
    """Every URL pattern of the console, as its route (the prefixes of included URLconfs joined on)."""

    def walk(patterns: list[Any], prefix: str) -> Iterator[str]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern)

    return list(walk(get_resolver().url_patterns, ""))


def entry_for(route: str) -> Entry | None:
    if route in VIEWS:
        return VIEWS[route]
    if route.startswith("admin/"):
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: SAMPLES[m[1]], route)
        path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: SAMPLES[m[1]], path).replace("^", "").replace("$", "")
        return Entry("/" + path, {}, other=ADMIN)
    return None


def test_every_url_pattern_has_an_entry_in_the_table() -> None:
    missing = [route for route in url_routes() if entry_for(route) is None]
    stale = sorted(set(VIEWS) - set(url_routes()))

    assert not missing, "\n".join(
        f"The URL pattern {route!r} has no entry in VIEWS (tests/dashboard/test_permissions.py). Add one, e.g.\n"
        f"    {route!r}: page(\"/{route}\"),  # GET and HEAD: {PAGE} for {PERSONAS}, 405 otherwise\n"
        f"or  {route!r}: action(\"/{route}\", {{...form...}}),  # POST: {ACTION}, 405 otherwise\n"
        f"or  {route!r}: Entry(\"/{route}\", {{\"GET\": (...), \"POST\": (...)}}, query=..., form=...),"
        for route in missing)
    assert not stale, f"VIEWS has entries for patterns that no longer exist: {stale}"


@dataclass
class World:
    """The personas' users, and a job and a running bulk run on each queue they aim at."""

    users: dict[str, User | None]
    runs: dict[str, AuditEntry]
    clients: dict[str, Client] = field(default_factory=dict)

    def client(self, persona: str) -> Client:
        """The persona's signed-in client (one per persona: logging in for every request is slow)."""
        if persona not in self.clients:
            self.clients[persona] = client = Client()
            user = self.users[persona]
            if user is not None:
                client.force_login(user)
        return self.clients[persona]

    def forget(self, persona: str) -> None:
        """After a request that may have logged the persona out."""
        self.clients.pop(persona, None)


def _operator(username: str, patterns: list[str]) -> User:
    user = user_create(username=username, password=f"{username}-password", role=OPERATORS)
    user.user_permissions.add(Permission.objects.get(codename="place_orders"))
    for pattern in patterns:
        QueueGrant.objects.create(user=user, pattern=pattern)
    return User.objects.get(pk=user.pk)


@pytest.fixture
def world(console_mq: EchoMQ) -> Iterator[World]:
    for queue in ("mail", "billing-eu"):
        failed_job(console_mq, queue, "a")
    users: dict[str, User | None] = {
        "anonymous": None,
        "viewer": user_create(username="vera", password="vera-password", role=VIEWERS),
        "operator_in": _operator("ingrid", ["billing-*", "orders"]),
        "operator_out": _operator("oscar", ["billing-*"]),
        "operator": _operator("otto", []),
        "no_role": User.objects.create_user(username="nora", password="nora-password"),
        "demoted": user_create(username="dora", password="dora-password", role=VIEWERS),
    }
    runs = {queue: running_entry(queue) for queue in ("mail", "billing-eu")}
    yield World(users, runs)
    for entry in AuditEntry.objects.all():
        runner.request_stop(entry.pk)
        assert runner.wait(entry.pk, timeout=30)


def _send(world: World, entry: Entry, persona: str, method: str) -> int:
    if "logout" in entry.path:
        world.forget(persona)
    queue = AIM[persona]
    path = entry.path.format(run=world.runs[queue].pk, q=queue)
    client = world.client(persona)
    if method in {"GET", "HEAD", "OPTIONS"}:
        query = entry.query.format(q=queue)
        return client.generic(method, path + (f"?{query}" if query else "")).status_code
    if entry.json_order:
        body = json.dumps({"client_order_id": f"c-{uuid.uuid4().hex}", "side": "buy", "symbol": "ACME",
                           "type": "limit", "quantity": 5, "price": "10.25", "time_in_force": "GTC"})
        return client.generic(method, path, body, content_type="application/json").status_code
    if entry.json_body is not None:
        body = json.dumps(entry.json_body).replace("{q}", queue)
        return client.generic(method, path, body, content_type="application/json").status_code
    form = urlencode({name: value.format(q=queue) for name, value in entry.form.items()})
    return client.generic(method, path, form, content_type="application/x-www-form-urlencoded").status_code


@pytest.mark.parametrize("route", url_routes())
def test_every_persona_gets_the_declared_answer_for_every_method(route: str, world: World) -> None:
    entry = entry_for(route)
    if entry is None:
        pytest.fail(f"no entry for {route!r}: see test_every_url_pattern_has_an_entry_in_the_table")
    wrong = []
    for method in METHODS:
        got = tuple(_send(world, entry, persona, method) for persona in PERSONAS)
        if got != entry.expected(method):
            wrong.append(f"{method:7} expected {entry.expected(method)}, got {got}")

    assert not wrong, f"{route!r} ({', '.join(PERSONAS)}):\n" + "\n".join(wrong)


# The WebSocket routes --------------------------------------------------------------------------------------------

OPEN, CLOSED, NO_ROLE = "open", "closed 4401", "closed 4403"
# What came back for a message: refused in words, not understood, the run's cancel flag set, a search stopped,
# some other answer (a page rendered again), or nothing.
REFUSED, NOT_UNDERSTOOD, CANCELLED, STOPPED, ANSWERED, QUIET = ("refused", "not understood", "cancelled",
                                                               "stopped", "answered", "quiet")


@dataclass(frozen=True)
class Message:
    send: dict[str, Any]
    expected: tuple[str, str, str, str, str, str]


@dataclass(frozen=True)
class Socket:
    """What each persona gets on one WebSocket route: on connecting, and for each message type it accepts."""

    query: str  # "{q}": the persona's queue, "{run}": a bulk run on it
    connect: tuple[str, str, str, str, str, str]
    messages: dict[str, Message]
    demoted: str = NO_ROLE  # a viewer's socket, once the viewer lost the role (None: it never opens)


LIVE = (CLOSED, OPEN, OPEN, OPEN, OPEN, NO_ROLE)
RENDERED = (CLOSED, ANSWERED, ANSWERED, ANSWERED, ANSWERED, NO_ROLE)
SOCKETS: dict[str, Socket] = {
    "ws/overview/": Socket("", LIVE, {"filter": Message({"filter": "mail"}, RENDERED)}),
    "ws/queue/": Socket("q={q}", LIVE, {"shown": Message({"shown": ["a"]}, RENDERED)}),
    "ws/job/": Socket("q={q}&id=a", LIVE, {}),
    "ws/actions/run/": Socket("id={run}", LIVE, {
        "cancel": Message({"action": "cancel"}, (CLOSED, REFUSED, CANCELLED, REFUSED, CANCELLED, NO_ROLE))}),
    # Anyone who may look may stop their own search.
    "ws/search/": Socket("run=0123456789ab&q={q}&state=failed&id_prefix=a", LIVE, {
        "cancel": Message({"action": "cancel"}, (CLOSED, STOPPED, STOPPED, STOPPED, STOPPED, NO_ROLE))}),
    # Any other path: closed for everyone with 4404 (the router alone would make daphne answer 500).
    "": Socket("", ("closed 4404",) * 6, {}, demoted="closed 4404"),
}


def socket_routes() -> dict[str, Any]:
    return {str(pattern.pattern): pattern.callback.consumer_class for pattern in websocket_urlpatterns}


def test_every_websocket_route_and_message_type_has_an_entry_in_the_table() -> None:
    routes = socket_routes()
    missing = [route for route in routes if route not in SOCKETS]
    undeclared = [f"{consumer.__module__}.{consumer.__qualname__}" for consumer in routes.values()
                  if not isinstance(getattr(consumer, "MESSAGE_TYPES", None), tuple)]
    untyped = {route: sorted(set(consumer.MESSAGE_TYPES) - set(SOCKETS[route].messages))
               for route, consumer in routes.items() if route in SOCKETS and not undeclared}

    assert not undeclared, "\n".join(
        f"{name} must say which messages it accepts: MESSAGE_TYPES: Final[tuple[str, ...]] = (...)"
        for name in undeclared)
    assert not missing, "\n".join(
        f"The WebSocket route {route!r} has no entry in SOCKETS (tests/dashboard/test_permissions.py). Add one, e.g.\n"
        f"    {route!r}: Socket(\"q={{q}}\", LIVE, {{}}),  # on connecting: {LIVE} for {PERSONAS}"
        for route in missing)
    assert not any(untyped.values()), "\n".join(
        f"{route!r} accepts the message types {types} without an entry: add each to SOCKETS[{route!r}].messages, e.g.\n"
        f"    {types[0]!r}: Message({{...what the page sends...}}, (CLOSED, REFUSED, CANCELLED, REFUSED, CANCELLED, NO_ROLE)),"
        for route, types in untyped.items() if types)
    assert not set(SOCKETS) - set(routes), "SOCKETS has entries for routes that no longer exist"



def _cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def _open(world: World, route: str, persona: str) -> tuple[WebsocketCommunicator, str]:
    queue = AIM[persona]
    query = SOCKETS[route].query.format(q=queue, run=world.runs[queue].pk)
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    user = world.users[persona]
    if user is not None:
        headers.append((b"cookie", f"sessionid={await sync_to_async(_cookie)(user)}".encode()))
    communicator = WebsocketCommunicator(application, f"/{route}?{query}", headers=headers)
    connected, _ = await communicator.connect(timeout=10)
    assert connected, route
    first = await communicator.receive_output(timeout=10)
    if first["type"] == "websocket.close":
        return communicator, f"closed {first.get('code')}"
    deadline = time.monotonic() + 0.5  # the first render, whole (a search streams on: half a second of it)
    while time.monotonic() < deadline and (more := await _next_output(communicator, timeout=0.2)) is not None:
        if more["type"] == "websocket.close":
            return communicator, f"closed {more.get('code')}"
    return communicator, OPEN


async def _next_output(communicator: WebsocketCommunicator, timeout: float) -> dict[str, Any] | None:
    """The socket's next output, or None after ``timeout`` (without cancelling the consumer, as a timeout would)."""
    if await communicator.receive_nothing(timeout=timeout):
        return None
    return dict(await communicator.receive_output(timeout=5))


async def _answer_to(communicator: WebsocketCommunicator, message: dict[str, Any], run: AuditEntry) -> str:
    await communicator.send_to(text_data=json.dumps(message))
    answered = False
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and (output := await _next_output(communicator, timeout=1.5)) is not None:
        if output["type"] == "websocket.close":
            return f"closed {output.get('code')}"
        text = output.get("text", "")
        for marker, outcome in (("refused:", REFUSED), ("not understood", NOT_UNDERSTOOD),
                                ("stopped by you", STOPPED)):
            if marker in text:
                return outcome
        answered = True
    await sync_to_async(run.refresh_from_db)()
    if run.cancel_requested_by:
        return CANCELLED
    return ANSWERED if answered else QUIET


def hold_search(monkeypatch: pytest.MonkeyPatch, settings: Any, mq: EchoMQ) -> None:
    """A search still running when the page presses Stop (or its user loses the role): each step waits until the
    search is stopped, and one entry a step over a few failed jobs leaves it unfinished after its first step."""
    run_step = Search.run_step

    def held(self: Search, mq: Any) -> Any:
        step = run_step(self, mq)
        for _ in range(600):
            if self.stopped:
                break
            time.sleep(0.05)
        return step

    monkeypatch.setattr(Search, "run_step", held)
    settings.EMQ_SEARCH_STEP_ENTRIES = 1
    for queue in ("mail", "billing-eu"):
        failed_jobs(mq, queue, 5)


@pytest.mark.parametrize("route", sorted(socket_routes()))
async def test_every_persona_gets_the_declared_answer_on_every_websocket_route(
        route: str, world: World, console_mq: EchoMQ, settings: Any, monkeypatch: pytest.MonkeyPatch,
        stop_followers: None) -> None:
    if route == "ws/search/":
        await sync_to_async(hold_search)(monkeypatch, settings, console_mq)
    socket = SOCKETS.get(route)
    if socket is None:
        pytest.fail(f"no entry for {route!r}: see test_every_websocket_route_and_message_type_has_an_entry_in_the_table")
    wrong = []
    # After the declared types, one nobody declared: the socket must neither act on it nor close.
    probes = [*socket.messages.items(),
              ("no-such-type", Message({"action": "no-such-type", "filter": 7}, socket.connect))]
    for index, persona in enumerate(PERSONAS):
        for message_type, message in probes:
            run = world.runs[AIM[persona]]
            await sync_to_async(AuditEntry.objects.filter(pk=run.pk).update)(cancel_requested_by="")
            communicator, connected = await _open(world, route, persona)
            if connected != socket.connect[index]:
                wrong.append(f"{persona}: on connecting expected {socket.connect[index]}, got {connected}")
            got = connected if connected != OPEN else await _answer_to(communicator, message.send, run)
            # Not acted on, not refused: the socket answered as it would anyway, or ended on its own.
            if message_type == "no-such-type" and got in {ANSWERED, QUIET, NOT_UNDERSTOOD, "closed 1000"}:
                got = OPEN
            if got != message.expected[index]:
                wrong.append(f"{persona}: {message_type!r} expected {message.expected[index]}, got {got}")
            await communicator.disconnect()

    assert not wrong, f"{route!r}:\n" + "\n".join(wrong)


async def _closed_within(communicator: WebsocketCommunicator, seconds: float) -> str:
    """How the socket ended within ``seconds`` (whatever it pushed meanwhile), or OPEN."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        output = await _next_output(communicator, timeout=0.5)
        if output is not None and output["type"] == "websocket.close":
            return f"closed {output.get('code')}"
    return OPEN


@pytest.mark.parametrize("route", sorted(socket_routes()))
async def test_a_viewer_whose_role_is_removed_while_its_socket_is_open_gets_the_declared_answer(
        route: str, world: World, console_mq: EchoMQ, settings: Any, monkeypatch: pytest.MonkeyPatch,
        stop_followers: None) -> None:
    if route == "ws/search/":
        await sync_to_async(hold_search)(monkeypatch, settings, console_mq)
    socket = SOCKETS[route]
    communicator, connected = await _open(world, route, "demoted")
    if connected != OPEN:
        assert connected == socket.demoted, f"{route!r}: on connecting as a viewer, {connected}"
        return
    user = world.users["demoted"]
    assert user is not None
    await sync_to_async(user.groups.clear)()

    got = await _closed_within(communicator, RECHECK_USER_S * 5)

    await communicator.disconnect()
    assert got == socket.demoted, f"{route!r}: a viewer's open socket after the role was removed"


# What the refusals leave behind ------------------------------------------------------------------------------------


def running_entry(queue: str = "mail") -> AuditEntry:
    """A bulk run's row as a running run leaves it (no thread behind it: only the row is under test)."""
    return AuditEntry.objects.create(username="someone", queue=queue, action="retry_all", scope="queue",
                                     outcome="running")


def actions(entry: AuditEntry) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("/actions/job/", {"q": "mail", "id": "a", "move": "retry", "state": "failed", "attempts": "1"}),
        ("/actions/job/", {"q": "mail", "id": "a", "move": "delete", "state": "failed", "attempts": "1"}),
        ("/actions/queue/", {"q": "mail", "action": "retry_all"}),
        ("/actions/queue/", {"q": "mail", "action": "purge_failed", "older_than_ms": "0"}),
        ("/actions/selection/", {"q": "mail", "move": "retry", "job": "failed:1:a"}),
        (f"/actions/runs/{entry.pk}/cancel/", {}),
    ]


def unchanged(mq: EchoMQ, entry: AuditEntry) -> bool:
    entry.refresh_from_db()
    return (mq.job("mail", "a").state == "failed" and entry.cancel_requested_by == ""
            and not AuditEntry.objects.exclude(outcome=AuditEntry.Outcome.REFUSED).exclude(pk=entry.pk).exists())


def test_anonymous_requests_are_sent_to_the_login_page_and_change_nothing(client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")
    entry = running_entry()

    for url, data in actions(entry):
        response = client.post(url, data)
        assert response.status_code == 302 and response["Location"].startswith("/login/?next="), url
        htmx = client.post(url, data, headers={"HX-Request": "true"})
        assert htmx.status_code == 401 and htmx["HX-Redirect"].startswith("/login/"), url
    assert client.get("/audit/").status_code == 302
    assert client.get(f"/actions/runs/{entry.pk}/").status_code == 302
    assert unchanged(console_mq, entry)
    assert AuditEntry.objects.count() == 1  # nobody to name: an anonymous request writes no row


def test_a_viewer_gets_a_readable_403_for_every_action_and_nothing_changes(viewer_client: Client,
                                                                          console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")
    entry = running_entry()

    for url, data in actions(entry):
        page = viewer_client.post(url, data)
        fragment = viewer_client.post(url, data, headers={"HX-Request": "true"})
        for response in (page, fragment):
            assert response.status_code == 403, url
            assert "viewers see everything and change nothing" in response.content.decode(), url
        assert b"<html" in page.content and b"<html" not in fragment.content
    assert unchanged(console_mq, entry)
    # Each refused press is in the log, as refused, with who tried what: one row per action, counting the
    # page post and the htmx post (the same refusal twice within a minute), the cancel of the run too.
    refusals = AuditEntry.objects.filter(outcome=AuditEntry.Outcome.REFUSED)
    assert refusals.count() == len(actions(entry))
    assert [r.parameters.get("repeats") for r in refusals] == [1] * refusals.count()
    assert {(r.username, r.queue) for r in refusals} == {("vera", "mail")}
    assert all(r.result.startswith("forbidden: You are signed in as a viewer") for r in refusals)
    assert set(refusals.values_list("action", flat=True)) == {"retry", "delete", "retry_all", "purge_failed",
                                                              "cancel_run"}
    assert [r.parameters for r in refusals.filter(action="cancel_run")] == [{"run": entry.pk, "repeats": 1}]


def test_a_viewer_may_read_the_audit_log_and_follow_a_run(viewer_client: Client, console_mq: EchoMQ) -> None:
    entry = running_entry()

    assert viewer_client.get("/audit/").status_code == 200
    run = viewer_client.get(f"/actions/runs/{entry.pk}/")
    assert run.status_code == 200 and b"Cancel</button>" not in run.content


def test_no_action_happens_through_get(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")
    entry = running_entry()

    for url, data in actions(entry):
        assert operator_client.get(url, data).status_code == 405, url
    assert unchanged(console_mq, entry)


def test_an_operator_may_do_every_action(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")
    entry = running_entry()

    for url, data in actions(entry):
        assert post_confirming(operator_client, url, data).status_code == 200, url
    entry.refresh_from_db()
    assert entry.cancel_requested_by == "otto"
    for run in AuditEntry.objects.exclude(pk=entry.pk):
        assert runner.wait(run.pk, timeout=30)
    recorded = AuditEntry.objects.exclude(pk=entry.pk).order_by("id").values_list("action", "outcome")
    # The retry moved the job on, so the delete that showed it failed was refused: compare-and-move at work;
    # retry all then found no failed job, and the purge's confirmation said there was nothing to purge.
    assert list(recorded) == [("retry", "moved"), ("delete", "refused"), ("retry", "finished")]


def test_a_post_without_the_csrf_token_is_refused(operator: User, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")
    entry = running_entry()
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)

    for url, data in actions(entry):
        assert client.post(url, data).status_code == 403, url
    assert unchanged(console_mq, entry)

    client.get("/queue/?q=mail&state=failed")
    token = client.cookies["csrftoken"].value
    response = client.post("/actions/job/", actions(entry)[0][1], headers={"X-CSRFToken": token, "HX-Request": "true"})
    assert response.status_code == 200 and console_mq.job("mail", "a").state == "pending"


def test_an_operator_restricted_to_some_queues_is_refused_on_the_others(operator: User, operator_client: Client,
                                                                       console_mq: EchoMQ) -> None:
    QueueGrant.objects.create(user=operator, pattern="billing-*")
    failed_job(console_mq, "mail", "a")
    failed_job(console_mq, "billing-eu", "a")

    refused = operator_client.post("/actions/job/", {"q": "mail", "id": "a", "move": "retry", "state": "failed",
                                                     "attempts": "1"})
    allowed = operator_client.post("/actions/job/", {"q": "billing-eu", "id": "a", "move": "retry",
                                                     "state": "failed", "attempts": "1"})
    bulk = operator_client.post("/actions/queue/", {"q": "mail", "action": "retry_all"})
    bulk_confirmed = operator_client.post("/actions/queue/", {"q": "mail", "action": "retry_all",
                                                              "confirmation": "anything"})

    assert refused.status_code == 403 and "billing-* only, not on mail" in refused.content.decode()
    logged = AuditEntry.objects.get(action="retry", queue="mail")
    assert (logged.outcome, logged.jobs) == ("refused", [{"id": "a", "state": "failed", "attempts": "1"}])
    assert bulk.status_code == bulk_confirmed.status_code == 403
    assert allowed.status_code == 200
    assert console_mq.job("mail", "a").state == "failed"
    assert console_mq.job("billing-eu", "a").state == "pending"
