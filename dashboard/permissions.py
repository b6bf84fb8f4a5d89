"""What each console action needs: one Django permission per kind of action, and which action needs which.

The permissions hang on :class:`dashboard.models.Console` (app label ``emq_console``), made by a
migration, so a host project that mounts the console gets them too. The roles are default bundles of
them (``dashboard.roles``); per-queue grants add one of them on some queues
(``dashboard.actions.models.ActionGrant``); ``dashboard.actions.access.may`` is the one place that
decides.

``NEEDS`` names, for everything an operator can do (each operator move of
``queues.operator_moves`` and each other action the audit log records), the
permission it needs. A move missing from it needs :data:`ALL_ACTIONS`, the
bundle that means every action: a new move is an operator's until its row here says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

V = TypeVar("V", bound=Callable[..., Any])

# The bundle every operator held before there was one permission per action; it still means "every action",
# so accounts and databases made then keep working.
ALL_ACTIONS: Final = "act_on_jobs"
VIEW: Final = "view_console"

# Codename → what the admin shows for it. The first is reading; every other one is an action.
PERMISSIONS: Final[dict[str, str]] = {
    VIEW: "Can see queues, jobs, metrics and the audit log",
    "retry_jobs": "Can retry failed jobs",
    "cancel_jobs": "Can cancel pending and running jobs",
    "delete_jobs": "Can delete jobs",
    "promote_jobs": "Can promote delayed jobs",
    "purge_queues": "Can purge done and failed jobs",
    "recover_leases": "Can recover lapsed leases",
    "pause_queues": "Can pause and resume queues",
    "edit_payloads": "Can edit and restore payloads and set a queue's payload schema",
    "rerun_jobs": "Can re-run and clone jobs",
    "remove_keys": "Can remove a state key of another type",
    "mark_deploys": "Can mark deploys",
    "manage_schedules": "Can add, edit, pause, resume, run and delete schedules",
    "manage_alerts": "Can make and delete alert rules and silences",
    "manage_slos": "Can set and delete latency objectives",
    "manage_tokens": "Can list and revoke every user's API tokens",
}
ACTION_PERMISSIONS: Final[tuple[str, ...]] = tuple(name for name in PERMISSIONS if name != VIEW)
# Its description is the one it was made with (a permission row keeps the name it was created with).
LEGACY_PERMISSIONS: Final[dict[str, str]] = {ALL_ACTIONS: "Can retry, recover, promote, cancel, delete and purge jobs"}

# What is done (an operator move's name, or an action the audit log names) → the permission it needs.
NEEDS: Final[dict[str, str]] = {
    "retry": "retry_jobs", "retry_all": "retry_jobs",
    "recover": "recover_leases", "recover_all": "recover_leases",
    "promote": "promote_jobs",
    "cancel": "cancel_jobs",
    "delete": "delete_jobs",
    "rerun": "rerun_jobs", "clone": "rerun_jobs",
    "edit": "edit_payloads", "restore": "edit_payloads", "schema_set": "edit_payloads", "redaction_set": "edit_payloads",
    "purge_done": "purge_queues", "purge_failed": "purge_queues",
    "pause": "pause_queues", "resume": "pause_queues",
    "remove_key": "remove_keys",
    "mark_deploy": "mark_deploys",
    "slo_set": "manage_slos", "slo_delete": "manage_slos",
    "alert_add": "manage_alerts", "alert_delete": "manage_alerts", "alert_silence": "manage_alerts",
    "alert_unsilence": "manage_alerts",
    "schedule_add": "manage_schedules", "schedule_edit": "manage_schedules", "schedule_pause": "manage_schedules",
    "schedule_resume": "manage_schedules", "schedule_run": "manage_schedules", "schedule_delete": "manage_schedules",
    "token_revoke": "manage_tokens",
}


def permission_for(action: str) -> str:
    """The codename ``action`` needs: ``action`` itself when it is one, its ``NEEDS`` entry, else every action's."""
    if action in PERMISSIONS or action == ALL_ACTIONS:
        return action
    return NEEDS.get(action, ALL_ACTIONS)


def qualified(codename: str) -> str:
    """The name ``user.has_perm`` takes."""
    return f"emq_console.{codename}"


@dataclass(frozen=True, slots=True)
class Performs:
    """What a view (or a socket message) can do, as the permission matrix test reads it: it walks every URL pattern
    and socket route and tries each of these actions as each role and queue grant.

    ``field`` names the request field that says which action ("" when the view does only the one; "run" when the
    action is the bulk run's it names); ``on_queue`` says whether the action is on one queue (so a queue grant may
    allow it) or every queue's (a deploy mark, another user's token), which only a permission held everywhere allows.
    """

    actions: tuple[str, ...]
    field: str = ""
    on_queue: bool = True
    # The permission when it is none of the console's (placing an exchange order).
    permission: str = ""


def performs(*actions: str, field: str = "", on_queue: bool = True, permission: str = "") -> Callable[[V], V]:
    """Marks a view with the actions it performs (see :class:`Performs`); nothing else reads it."""

    def mark(view: V) -> V:
        view.emq_performs = Performs(tuple(dict.fromkeys(actions)), field, on_queue, permission)  # type: ignore[attr-defined]
        return view

    return mark

