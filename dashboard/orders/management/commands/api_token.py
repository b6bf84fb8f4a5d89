from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from dashboard.orders.models import ApiToken
from dashboard.orders.tokens import api_token_create, api_tokens_revoke


class Command(BaseCommand):
    help = ("Creates an API token (for /api/, /metrics and POST /api/orders) and prints it (once); "
            "--list shows the tokens (never their secrets), --revoke NAME deletes them.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", help="whose token (with --list or --revoke: only theirs)")
        parser.add_argument("--name", default="api", help="what the token is for")
        parser.add_argument("--scope", choices=[s.value for s in ApiToken.Scope], default=ApiToken.Scope.READ,
                            help="read: reads only (the default); act: may also do what the user may")
        parser.add_argument("--expires-days", type=float, default=None, help="the token lapses after this many days")
        parser.add_argument("--grant", action="store_true", help="also give the user the place_orders permission")
        parser.add_argument("--list", action="store_true", help="list the tokens: user, name, scope, created, expires")
        parser.add_argument("--revoke", metavar="NAME", help="delete the tokens of this name")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["username"]
        user = get_user_model().objects.filter(username=name).first() if name else None
        if name and user is None:
            raise CommandError(f"no user named {name!r}")
        if options["list"]:
            self._list(user)
            return
        if options["revoke"]:
            revoked = api_tokens_revoke(name=options["revoke"], user=user)
            if not revoked:
                raise CommandError(f"no token named {options['revoke']!r}" + (f" of {name}" if name else ""))
            self.stdout.write(f"revoked {revoked} token{'' if revoked == 1 else 's'} named {options['revoke']!r}")
            return
        if user is None:
            raise CommandError("name the user the token is for")
        if options["grant"]:
            user.user_permissions.add(Permission.objects.get(codename="place_orders", content_type__app_label="orders"))
        days = options["expires_days"]
        if days is not None and days <= 0:
            raise CommandError("--expires-days must be more than 0")
        expires_at = timezone.now() + timedelta(days=days) if days is not None else None
        self.stdout.write(api_token_create(user=user, name=options["name"], scope=options["scope"],
                                           expires_at=expires_at))

    def _list(self, user: Any) -> None:
        tokens = ApiToken.objects.select_related("user").order_by("user__username", "name", "created_at")
        if user is not None:
            tokens = tokens.filter(user=user)
        now = timezone.now()
        for token in tokens:
            expires = ("never" if token.expires_at is None else
                       f"{'expired' if token.expires_at <= now else 'expires'} {token.expires_at:%Y-%m-%dT%H:%M:%SZ}")
            self.stdout.write(f"{token.user.get_username()}\t{token.name}\t{token.scope}\t"
                              f"created {token.created_at:%Y-%m-%dT%H:%M:%SZ}\t{expires}")
