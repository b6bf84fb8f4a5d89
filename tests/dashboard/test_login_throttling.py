"""Login throttling (django-axes): ten failures lock a user name from one address, or an address, until the cool-off;
each refusal is audited. A user name alone is never locked: nobody can lock its owner out from elsewhere."""

from __future__ import annotations

from datetime import timedelta

from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import AuditEntry

LIMIT = 10


def _log_in(client: Client, username: str, password: str, address: str = "198.51.100.7") -> int:
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address).status_code


def _fail(client: Client, times: int, username: str = "vera", address: str = "198.51.100.7") -> list[int]:
    return [_log_in(client, username, f"wrong-{n}", address) for n in range(times)]


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_nine_failures_still_let_the_right_password_in(client: Client, viewer: User) -> None:
    assert _fail(client, LIMIT - 1) == [200] * (LIMIT - 1)  # the form again, with its error

    assert _log_in(client, "vera", "vera-password") == 302 and _signed_in(client)


def test_after_ten_failures_the_right_password_is_refused_too(client: Client, viewer: User) -> None:
    # The tenth failure is answered with the lockout already.
    assert _fail(client, LIMIT) == [200] * (LIMIT - 1) + [429]

    response = client.post("/login/", {"username": "vera", "password": "vera-password"}, REMOTE_ADDR="198.51.100.7")

    assert response.status_code == 429 and not _signed_in(client)
    assert "Too many failed logins" in response.content.decode()


def test_a_lockout_attempt_from_10_addresses_does_not_lock_the_real_user_out(client: Client, viewer: User) -> None:
    for n in range(LIMIT):
        _fail(client, LIMIT, address=f"198.51.100.{n + 1}")
    assert _log_in(client, "vera", "vera-password", address="198.51.100.1") == 429

    assert _log_in(client, "vera", "vera-password", address="203.0.113.9") == 302 and _signed_in(client)


def test_the_lock_on_a_user_name_holds_from_the_address_that_failed(client: Client, viewer: User,
                                                                    operator: User) -> None:
    _fail(client, LIMIT, username="vera", address="198.51.100.7")

    assert _log_in(client, "vera", "vera-password", address="198.51.100.7") == 429 and not _signed_in(client)


def test_the_lock_on_an_address_holds_for_every_user_name(client: Client, viewer: User, operator: User) -> None:
    for n in range(LIMIT):
        _fail(client, 1, username=f"guess-{n}")

    assert _log_in(client, "otto", "otto-password") == 429
    # From another address, a name nobody guessed logs in.
    assert _log_in(client, "otto", "otto-password", address="203.0.113.9") == 302 and _signed_in(client)


def test_after_the_cool_off_the_right_password_works_again(client: Client, viewer: User) -> None:
    _fail(client, LIMIT)
    assert _log_in(client, "vera", "vera-password") == 429

    # As if 15 minutes had passed without an attempt.
    for attempt in AccessAttempt.objects.all():
        AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=attempt.attempt_time - timedelta(minutes=16))

    assert _log_in(client, "vera", "vera-password") == 302 and _signed_in(client)


def test_attempts_during_a_lockout_do_not_prolong_it(client: Client, viewer: User) -> None:
    _fail(client, LIMIT)
    locked_at = AccessAttempt.objects.get(username="vera").attempt_time

    for _ in range(5):
        assert _log_in(client, "vera", "vera-password") == 429

    assert AccessAttempt.objects.get(username="vera").attempt_time == locked_at


def test_every_refused_login_is_counted_in_the_audit_log(client: Client, viewer: User) -> None:
    _fail(client, LIMIT)
    for _ in range(3):
        _log_in(client, "vera", "vera-password")

    # The tenth failure locks (a row); each of the three attempts after it is refused, counted on that row.
    [row] = AuditEntry.objects.filter(action=AuditEntry.Action.LOGIN)
    assert (row.username, row.outcome, row.scope, row.parameters) == (
        "vera", "refused", "account", {"address": "198.51.100.7", "repeats": 3})
    assert row.result.startswith("locked out: 10 failed logins")


def test_a_long_user_name_is_kept_bounded(client: Client, db: None) -> None:
    long_name = "n" * 5000
    for n in range(LIMIT):
        _log_in(client, long_name, f"wrong-{n}")

    assert AccessAttempt.objects.get().username == "n" * 150
    assert AuditEntry.objects.get(action=AuditEntry.Action.LOGIN).username == "n" * 150
