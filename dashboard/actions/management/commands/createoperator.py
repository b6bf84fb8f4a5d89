"""manage.py createoperator NAME [--queue PATTERN ...]: a console user who may act on jobs."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from dashboard.roles import OPERATORS

from ._console_user import ConsoleUserCommand


class Command(ConsoleUserCommand):
    help = "Creates (or resets) an operator: a console user who may retry, recover, promote, cancel, delete and purge."
    role = OPERATORS
    what = "operator"

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--queue", action="append", metavar="PATTERN",
                            help="restrict to queues matching this name or shell pattern (repeatable); default: all")

    def scope(self, options: dict[str, Any]) -> str:
        patterns = options.get("queue") or []
        return f", acting on {', '.join(patterns)} only" if patterns else ", acting on every queue"
