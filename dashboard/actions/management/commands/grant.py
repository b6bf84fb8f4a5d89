"""manage.py grant WHO ACTION [--queue PATTERN] [--group] [--revoke] | --list: one action for a user or a group."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from dashboard.actions.models import ActionGrant
from dashboard.permissions import ACTION_PERMISSIONS, NEEDS, permission_for
from dashboard.roles import console_permissions


class Command(BaseCommand):
    help = ("Gives a user (or, with --group, a group) one console action: everywhere, or with --queue on the queues "
            "matching a name or shell pattern only; --revoke takes it back; --list shows the queue grants.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("who", nargs="?", help="a username (a group's name with --group)")
        parser.add_argument("action", nargs="?",
                            help=f"a permission ({', '.join(ACTION_PERMISSIONS)}) or a move or action that needs one "
                                 "(retry, purge_failed, ...)")
        parser.add_argument("--queue", metavar="PATTERN", help="only on the queues matching this name or pattern")
        parser.add_argument("--group", action="store_true", help="WHO is a group")
        parser.add_argument("--revoke", action="store_true", help="take the action back (on PATTERN, with --queue)")
        parser.add_argument("--list", action="store_true", help="list the queue grants (of WHO, when named)")

    def handle(self, *args: Any, **options: Any) -> None:
        who = self._who(options["who"], group=options["group"]) if options["who"] else None
        if options["list"]:
            self._list(who)
            return
        if who is None or not options["action"]:
            raise CommandError("name who and the action: grant USER ACTION [--queue PATTERN]")
        codename = permission_for(options["action"])
        if codename not in ACTION_PERMISSIONS:
            raise CommandError(f"unknown action {options['action']!r}: choose a permission "
                               f"({', '.join(ACTION_PERMISSIONS)}) or one of {', '.join(NEEDS)}")
        pattern = (options["queue"] or "").strip()
        if options["queue"] is not None and not pattern:
            raise CommandError("--queue needs a queue name or pattern")
        to = {"group": who, "user": None} if isinstance(who, Group) else {"user": who, "group": None}
        name = f"group {who.name}" if isinstance(who, Group) else who.get_username()
        if pattern:
            if options["revoke"]:
                removed, _ = ActionGrant.objects.filter(**to, permission=codename, pattern=pattern).delete()
                if not removed:
                    raise CommandError(f"{name} has no grant of {codename} on {pattern}")
                self.stdout.write(f"{name} may no longer {codename} on {pattern} (unless they hold it everywhere)")
            else:
                ActionGrant.objects.get_or_create(**to, permission=codename, pattern=pattern)
                self.stdout.write(f"{name} may {codename} on {pattern}")
            return
        permissions = who.permissions if isinstance(who, Group) else who.user_permissions
        if options["revoke"]:
            permissions.remove(*console_permissions((codename,)))
            self.stdout.write(f"{name} no longer holds {codename} of their own (a group or a queue grant may still "
                              "give it)")
        else:
            permissions.add(*console_permissions((codename,)))
            self.stdout.write(f"{name} may {codename} on every queue")

    def _who(self, text: str, *, group: bool) -> Any:
        if group:
            found = Group.objects.filter(name=text).first()
            if found is None:
                raise CommandError(f"no group named {text!r}")
            return found
        model = get_user_model()
        user = model.objects.filter(**{model.USERNAME_FIELD: text}).first()
        if user is None:
            raise CommandError(f"no user named {text!r}")
        return user

    def _list(self, who: Any) -> None:
        grants = ActionGrant.objects.select_related("user", "group").order_by("permission", "pattern", "id")
        if isinstance(who, Group):
            grants = grants.filter(group=who)
        elif who is not None:
            grants = grants.filter(Q(user=who) | Q(group__in=who.groups.all()))
        for grant in grants:
            holder = f"group {grant.group.name}" if grant.group else grant.user.get_username() if grant.user else "?"
            self.stdout.write(f"{holder}\t{grant.permission}\t{grant.pattern}")
