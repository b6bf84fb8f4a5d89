"""An open socket follows its user: a logout, a deactivation or a lost role reaches it within 5 s."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import AuditEntry
from dashboard.asgi import application
from dashboard.roles import OPERATORS, VIEWERS, ensure_roles, user_create
from queues import EchoMQ
from queues.search import Search

pytestmark = pytest.mark.django_db(transaction=True)

WITHIN_S = 5.0



def _session(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def _open(path: str, session: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(application, path, headers=[
        (b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", f"sessionid={session}".encode())])
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    return communicator


async def _closed_within(communicator: WebsocketCommunicator, seconds: float) -> tuple[int | None, float]:
    """Reads until the socket closes; returns its code and how long it took (fails after ``seconds`` + slack)."""
    started = time.monotonic()
    while time.monotonic() - started < seconds + 10:
        if await communicator.receive_nothing(timeout=0.2):
            continue
        output = await communicator.receive_output(timeout=5)
        if output["type"] == "websocket.close":
            return output.get("code"), time.monotonic() - started
    raise AssertionError("the socket stayed open")


def _log_out(session: str) -> None:
    client = Client()
    client.cookies["sessionid"] = session
    assert client.post("/logout/").status_code == 302


def _deactivate(user: User) -> None:
    User.objects.filter(pk=user.pk).update(is_active=False)


def _change_password(user: User) -> None:
    user.set_password("a-new-password-entirely")
    user.save()


@pytest.fixture
def held_search(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every search stops after its first step until the test ends: still running whenever the user goes."""
    gate = threading.Event()
    run_step = Search.run_step

    def held(self: Search, mq: Any) -> Any:
        step = run_step(self, mq)
        gate.wait(60)
        return step

    monkeypatch.setattr(Search, "run_step", held)
    yield
    gate.set()


@pytest.mark.parametrize("revoke", [_log_out, _deactivate, _change_password],
                         ids=["logged out", "deactivated", "password changed"])
@pytest.mark.parametrize("path", ["/ws/overview/", "/ws/queue/?q=mail", "/ws/job/?q=mail&id=a",
                                  "/ws/search/?run=0123456789ab&q=mail&state=failed&id_prefix=a"])
async def test_a_live_page_socket_closes_within_5_s_of_losing_its_user(console_mq: EchoMQ, stop_followers: None,
                                                                       held_search: None, path: str,
                                                                       revoke: object) -> None:
    viewer = await sync_to_async(user_create)(username="vera", password="vera-password", role=VIEWERS)
    session = await sync_to_async(_session)(viewer)
    communicator = await _open(path, session)
    assert await communicator.receive_from(timeout=10)  # live: the first render arrived

    await sync_to_async(revoke)(session if revoke is _log_out else viewer)  # type: ignore[operator]
    code, took = await _closed_within(communicator, WITHIN_S)

    assert code == 4401
    assert took < WITHIN_S, f"closed after {took:.1f} s"


def _demote(user: User) -> None:
    _, viewers = ensure_roles()
    user.groups.set([viewers])


def _running_run(queue: str = "mail") -> AuditEntry:
    return AuditEntry.objects.create(username="someone", queue=queue, action="retry_all", scope="queue",
                                     outcome="running")


async def _cancel(communicator: WebsocketCommunicator) -> str:
    """Asks the run socket to cancel; returns its note, or "closed <code>"."""
    await communicator.send_to(text_data=json.dumps({"action": "cancel"}))
    while True:
        output = await communicator.receive_output(timeout=10)
        if output["type"] == "websocket.close":
            return f"closed {output.get('code')}"
        if "run-note" in output.get("text", "") or "refused:" in output.get("text", ""):
            return str(output["text"])


async def test_an_operator_demoted_to_viewer_loses_the_cancel_button_within_5_s_and_her_cancel_is_refused(
        console_mq: EchoMQ) -> None:
    olga = await sync_to_async(user_create)(username="olga", password="olga-password", role=OPERATORS)
    run = await sync_to_async(_running_run)()
    communicator = await _open(f"/ws/actions/run/?id={run.pk}", await sync_to_async(_session)(olga))
    assert "Cancel</button>" in await communicator.receive_from(timeout=10)

    await sync_to_async(_demote)(olga)
    started = time.monotonic()
    progress = await communicator.receive_from(timeout=WITHIN_S + 5)
    took = time.monotonic() - started
    note = await _cancel(communicator)

    assert "Cancel</button>" not in progress and took < WITHIN_S, f"the button went after {took:.1f} s"
    assert "refused:" in note and "viewers see everything and change nothing" in note
    await sync_to_async(run.refresh_from_db)()
    assert run.cancel_requested_by == "" and run.outcome == "running"
    refusal = await sync_to_async(AuditEntry.objects.get)(action="cancel_run")
    assert (refusal.username, refusal.outcome, refusal.parameters) == ("olga", "refused", {"run": run.pk})
    await communicator.disconnect()


@pytest.mark.parametrize("revoke", ["deactivated", "logged out"])
async def test_a_revoked_operator_cannot_cancel_on_a_socket_opened_before(console_mq: EchoMQ, revoke: str) -> None:
    olga = await sync_to_async(user_create)(username="olga", password="olga-password", role=OPERATORS)
    run = await sync_to_async(_running_run)()
    session = await sync_to_async(_session)(olga)
    communicator = await _open(f"/ws/actions/run/?id={run.pk}", session)
    assert "Cancel</button>" in await communicator.receive_from(timeout=10)

    await sync_to_async(_deactivate if revoke == "deactivated" else _log_out)(olga if revoke == "deactivated"
                                                                             else session)  # type: ignore[arg-type]
    # At once, before the next periodic check: the cancel itself asks who is there.
    answer = await _cancel(communicator)

    assert answer == "closed 4401"
    await sync_to_async(run.refresh_from_db)()
    assert run.cancel_requested_by == "" and run.outcome == "running"
