"""Confirmations the server checks, for every destructive or large action.

The first POST of such an action answers with what it would do now (how many
jobs, of which queue) and a token; only a second POST carrying that token runs
it. The token is signed with the console's SECRET_KEY (it cannot be forged),
names its user, carries a digest of the action and its parameters, and lapses
after MAX_AGE_S; the database row it names is spent on first use, so a replay
is refused by every console process, not only the one that issued it. It also
names the deployment it was shown for (``dashboard.deployments``): it runs on
no other, and on a production deployment only with the queue's name typed.

Any action that acts on "all matching" describes itself as a :class:`Proposal`
and goes through :func:`confirmation_issue` and :func:`confirmation_redeem`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

from django.core import signing
from django.utils import timezone

from dashboard.deployments import current

from .models import Confirmation

SALT: Final = "dashboard.actions.confirmation"
MAX_AGE_S: Final = 120
# Spent and lapsed rows are kept a while for whoever looks, then dropped as new ones are issued.
KEEP_ROWS: Final = timedelta(hours=1)


class ConfirmationRefused(Exception):
    """Why a confirmation does not let the action run, as a sentence."""


@dataclass(frozen=True)
class Proposal:
    """An action exactly as it would run: what a confirmation is bound to."""

    action: str
    queue: str
    scope: str
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        text = json.dumps([self.action, self.queue, self.scope, dict(self.parameters)], sort_keys=True,
                          separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Confirmed:
    """What a redeemed confirmation said when it was shown: how many jobs, counted at which server time."""

    count: int
    as_of_ms: int | None


def confirmation_issue(*, user: Any, proposal: Proposal, count: int, as_of_ms: int | None = None) -> str:
    """A token that lets ``user`` run ``proposal`` once, within MAX_AGE_S, on at most ``count`` jobs.

    The count and the time it was read at travel signed in the token: the run
    is bound to them, not to what the queue holds when it starts.
    """
    now = timezone.now()
    Confirmation.objects.filter(created_at__lt=now - KEEP_ROWS).delete()
    nonce = secrets.token_hex(16)
    Confirmation.objects.create(nonce=nonce, user=user, action=proposal.action, queue=proposal.queue,
                                digest=proposal.digest, count=count)
    return signing.dumps({"n": nonce, "u": user.pk, "d": proposal.digest, "c": count, "t": as_of_ms,
                          "x": current().name}, salt=SALT)


def typed_name_wanted(proposal: Proposal) -> str:
    """What the operator must type to confirm ``proposal`` on the current deployment: its queue's name (the
    deployment's, for a run over several queues) on a production deployment; "" elsewhere."""
    shown = current()
    return (proposal.queue or shown.name) if shown.production else ""


def confirmation_redeem(*, user: Any, token: str, proposal: Proposal, typed: str = "") -> Confirmed:
    """Spends the token for ``proposal`` and says what it confirmed; raises ConfirmationRefused (and spends
    nothing) when it may not run. ``typed``: what the operator typed, which a production deployment checks."""
    try:
        claims = signing.loads(token, salt=SALT, max_age=MAX_AGE_S)
    except signing.SignatureExpired:
        raise ConfirmationRefused(f"this confirmation has expired (it lasts {MAX_AGE_S // 60} minutes): "
                                  "nothing was done, ask again") from None
    except signing.BadSignature:
        raise ConfirmationRefused("this confirmation was not issued by the console: nothing was done") from None
    if not isinstance(claims, dict) or not isinstance(claims.get("n"), str):
        raise ConfirmationRefused("this confirmation was not issued by the console: nothing was done")
    if claims.get("u") != user.pk:
        raise ConfirmationRefused("this confirmation was issued to another user: nothing was done")
    if claims.get("d") != proposal.digest:
        raise ConfirmationRefused("this confirmation was for another action, queue or jobs: nothing was done")
    shown = current()
    if claims.get("x") != shown.name:
        raise ConfirmationRefused(f"this confirmation was shown for the deployment {str(claims.get('x'))[:40]}, "
                                  f"not {shown.name}: nothing was done")
    wanted = typed_name_wanted(proposal)
    if wanted and typed.strip() != wanted:
        raise ConfirmationRefused(f"{shown.name} is a production deployment: type {wanted} to confirm; "
                                  "nothing was done")
    count, as_of = claims.get("c"), claims.get("t")
    if not isinstance(count, int) or not (as_of is None or isinstance(as_of, int)):
        raise ConfirmationRefused("this confirmation does not say how many jobs it was for: nothing was done, "
                                  "ask again")
    spent = Confirmation.objects.filter(nonce=claims["n"], user=user, used_at__isnull=True).update(
        used_at=timezone.now())
    if spent != 1:
        raise ConfirmationRefused("this confirmation has already been used: nothing was done again")
    return Confirmed(count, as_of)
