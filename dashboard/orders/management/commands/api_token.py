from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.orders.tokens import api_token_create


class Command(BaseCommand):
    help = "Creates an API token (for /api/, /metrics and POST /api/orders) and prints it (once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="api", help="what the token is for")
        parser.add_argument("--grant", action="store_true", help="also give the user the place_orders permission")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        if options["grant"]:
            user.user_permissions.add(Permission.objects.get(codename="place_orders", content_type__app_label="orders"))
        self.stdout.write(api_token_create(user=user, name=options["name"]))
