"""manage.py createviewer NAME: a console user who sees everything and changes nothing."""

from __future__ import annotations

from dashboard.roles import VIEWERS

from ._console_user import ConsoleUserCommand


class Command(ConsoleUserCommand):
    help = "Creates (or resets) a viewer: a console user who sees every page and can change nothing."
    role = VIEWERS
    what = "viewer"
