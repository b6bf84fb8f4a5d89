"""What createoperator and createviewer share: a console user in one role, with a checked password."""

from __future__ import annotations

import getpass
import os
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from dashboard.actions.models import QueueGrant
from dashboard.roles import user_create


class ConsoleUserCommand(BaseCommand):
    """The password is asked for on a terminal, or read from $EMQ_PASSWORD; never from the command line,
    where it would stay in the shell's history and show in the process list."""

    role: str
    what: str

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def password(self, username: str) -> str:
        password = os.environ.get("EMQ_PASSWORD", "")
        if not password and sys.stdin.isatty():
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                raise CommandError("the two passwords differ")
        if not password:
            raise CommandError("give a password: run it on a terminal to be asked, or set EMQ_PASSWORD")
        try:
            model = get_user_model()
            validate_password(password, user=model(**{model.USERNAME_FIELD: username}))
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        return password

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"].strip()
        if not username:
            raise CommandError("the username must not be empty")
        password = self.password(username)
        with transaction.atomic():
            user = user_create(username=username, password=password, role=self.role)
            QueueGrant.objects.filter(user=user).delete()
            for pattern in options.get("queue") or []:
                QueueGrant.objects.create(user=user, pattern=pattern)
        self.stdout.write(f"{self.what} {username} is ready{self.scope(options)}.")

    def scope(self, options: dict[str, Any]) -> str:
        return ""
