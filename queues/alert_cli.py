"""``emq alert add|list|silence|unsilence|delete``: the console's alert rules, through the console's JSON API.

Alert rules, their firings and silences are console data (the console's
database: who made them, the audit log, the evaluator that holds the lock),
not protocol, and this package does not import Django. So these commands
call the console over HTTP, as any program would: ``--console URL`` (or
``$EMQ_CONSOLE_URL``, default ``http://127.0.0.1:8000``) with an API token
read from ``$EMQ_CONSOLE_TOKEN`` (an operator's token of scope ``act``:
``python manage.py api_token otto --scope act``; never on the command line,
where it would stay in the shell's history and show in ``ps``). Every
change is audited by the console as the token's user. Exit codes: 2 bad
input (the console's 400), 4 refused (401, 403), 7 no such rule or silence
(404), 1 anything else.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from typing import Any, Final
from urllib.parse import quote

from .errors import EmqError, InvalidInput
from .visible import visible

CONSOLE_ENV: Final = "EMQ_CONSOLE_URL"
TOKEN_ENV: Final = "EMQ_CONSOLE_TOKEN"
DEFAULT_CONSOLE: Final = "http://127.0.0.1:8000"
TIMEOUT_S: Final = 10.0
ANSWER_LIMIT: Final = 4 * 1024 * 1024


class ConsoleRefused(EmqError):
    exit_code = 4


class ConsoleMissing(EmqError):
    exit_code = 7


def console_call(args: argparse.Namespace, method: str, path: str,
                 body: dict[str, Any] | None = None) -> dict[str, Any]:
    """One call of the console's API; its JSON answer, or the error it answered, as the project's errors."""
    base = (args.console or os.environ.get(CONSOLE_ENV) or DEFAULT_CONSOLE).rstrip("/")
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise InvalidInput(f"set {TOKEN_ENV} to an API token of the console (python manage.py api_token USER "
                           "--scope act)")
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}/api{path}", data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json",
        **({"Content-Type": "application/json"} if data is not None else {})})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            said_json = json.loads(answer.read(ANSWER_LIMIT) or b"null")
            # Every answer of these endpoints is a JSON object.
            return said_json if isinstance(said_json, dict) else {}
    except urllib.error.HTTPError as error:
        try:
            said = json.loads(error.read(ANSWER_LIMIT)).get("error", "")
        except (ValueError, AttributeError):
            said = ""
        text = f"the console answered {error.code}: {said or error.reason}"
        if error.code == 400:
            raise InvalidInput(text) from None
        if error.code in (401, 403):
            raise ConsoleRefused(text) from None
        if error.code == 404:
            raise ConsoleMissing(text) from None
        raise EmqError(text) from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise EmqError(f"cannot reach the console at {base}: {getattr(error, 'reason', error)}") from None


def _print(value: Any, as_json: bool) -> None:
    if as_json:
        print(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    else:
        print(visible(str(value)))


def _rule_line(rule: dict[str, Any]) -> str:
    state = f"FIRING since {rule['firing_since']} (#{rule['firings']})" if rule["firing"] else "ok"
    if rule.get("silenced_until"):
        state += f", silenced until {rule['silenced_until']}"
    where = f" on {rule['queue']}" if rule["queue"] else ""
    seen = rule["error"] and f"undecided: {rule['error']}" or rule["observed"] or "not evaluated yet"
    return f"{rule['id']} {rule['name']}: {rule['kind']}{where}: {state}: {seen}"


def cmd_alert_list(mq: object, args: argparse.Namespace) -> None:
    rules = console_call(args, "GET", "/alerts")["rules"]
    silences = console_call(args, "GET", "/silences")["silences"]
    if args.json:
        _print({"rules": rules, "silences": silences}, True)
        return
    for rule in rules:
        _print(_rule_line(rule), False)
    for silence in silences:
        _print(f"silence {silence['id']}: {silence['rule_name'] or 'every rule'} until {silence['ends_at']} "
               f"by {silence['created_by']}" + (f": {silence['reason']}" if silence["reason"] else ""), False)


def cmd_alert_add(mq: object, args: argparse.Namespace) -> None:
    body: dict[str, Any] = {"name": args.name, "kind": args.kind, "queue": args.queue or "",
                            "codes": args.codes or "", "group": args.group or "", "at_least": args.at_least,
                            "threshold": args.threshold, "windows": args.windows, "schedule": args.schedule or "",
                            "grace_s": args.grace_s, "webhook_url": args.webhook or "",
                            "emails": args.email or []}
    if args.view is not None:
        body["view"] = args.view
    if args.secret_file:
        with open(args.secret_file, encoding="utf-8") as secret:
            body["secret"] = secret.read().strip()
    made = console_call(args, "POST", "/alerts", body)
    if args.json:
        _print(made, True)
        return
    _print(f"made alert rule {made['id']} {made['name']}", False)
    if made.get("webhook_url"):
        _print(f"webhook secret (shown once): {made['secret']}", False)


def cmd_alert_silence(mq: object, args: argparse.Namespace) -> None:
    if not args.duration and not args.until:
        raise InvalidInput("say how long (--for 2h) or until when (--until 2026-12-02T06:00Z)")
    made = console_call(args, "POST", "/silences", {"rule": args.rule or "", "duration": args.duration or "",
                                                    "until": args.until or "", "reason": args.reason or ""})
    if args.json:
        _print(made, True)
        return
    _print(f"silence {made['id']}: {made['rule_name'] or 'every rule'} until {made['ends_at']}", False)


def cmd_alert_unsilence(mq: object, args: argparse.Namespace) -> None:
    ended = console_call(args, "DELETE", f"/silences/{args.silence}")
    _print(f"silence {ended['id']} ended at {ended['ends_at']}", False)


def cmd_alert_delete(mq: object, args: argparse.Namespace) -> None:
    deleted = console_call(args, "DELETE", f"/alerts/{quote(args.rule, safe='')}")
    _print(f"deleted alert rule {deleted['deleted']}", False)


ALERT_COMMANDS: Final = {cmd_alert_list, cmd_alert_add, cmd_alert_silence, cmd_alert_unsilence, cmd_alert_delete}


def add_alert_commands(sub: Any) -> None:
    """``emq alert ...`` on the CLI's subcommands."""
    p = sub.add_parser("alert", help="the console's alert rules and silences (through its API: see emq alert -h)",
                       description=__doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else None)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--console", default=argparse.SUPPRESS,
                       help=f"the console's URL (default ${CONSOLE_ENV} or {DEFAULT_CONSOLE})")
    p.set_defaults(run=cmd_alert_list, json=False, console=None)
    p.add_argument("--console", help=f"the console's URL (default ${CONSOLE_ENV} or {DEFAULT_CONSOLE})")
    alert_sub = p.add_subparsers(dest="alert_command")
    q = alert_sub.add_parser("list", parents=[where], help="every rule with its state, and the silences in force")
    q.set_defaults(run=cmd_alert_list)
    q.add_argument("--json", action="store_true")
    q = alert_sub.add_parser("add", parents=[where], help="make a rule (delivered by signed webhook and/or e-mail)")
    q.set_defaults(run=cmd_alert_add)
    q.add_argument("name")
    q.add_argument("--kind", required=True, choices=["why", "failure_group", "slo_burn", "view", "schedule"],
                   help="why: the queue stops draining (or --codes no_consumer); failure_group; slo_burn; view; "
                        "schedule: a tick expected and not seen (the dead-man's switch)")
    q.add_argument("--queue")
    q.add_argument("--codes", help="why: not_draining (default), no_consumer, or why codes, comma separated")
    q.add_argument("--group", help="failure_group: the group, as emq failures prints it")
    q.add_argument("--view", type=int, help="view: the saved view's id")
    q.add_argument("--at-least", type=int, default=1, help="failure_group, view: fire at this many jobs")
    q.add_argument("--threshold", type=float, default=14.4, help="slo_burn: the burn rate to fire at")
    q.add_argument("--windows", default="1h,5m", help="slo_burn: every one of these windows burns that fast")
    q.add_argument("--schedule", help="schedule: the schedule's name (with --queue)")
    q.add_argument("--grace-s", type=float, help="schedule: how late a tick may be (default 60 s, or half its period)")
    q.add_argument("--webhook", help="the URL to POST the signed firing to")
    q.add_argument("--secret-file", help="a file holding the webhook's secret (default: the console makes one and "
                                         "prints it once)")
    q.add_argument("--email", action="append", help="an address to mail (again for more)")
    q.add_argument("--json", action="store_true")
    q = alert_sub.add_parser("silence", parents=[where], help="silence a rule (or every rule) until a time")
    q.set_defaults(run=cmd_alert_silence)
    q.add_argument("rule", nargs="?", help="the rule's id or name (none: every rule)")
    q.add_argument("--for", dest="duration", help="how long: 30m, 2h, 1d")
    q.add_argument("--until", help="until when: an ISO time (UTC unless it says)")
    q.add_argument("--reason")
    q.add_argument("--json", action="store_true")
    q = alert_sub.add_parser("unsilence", parents=[where], help="end a silence now")
    q.set_defaults(run=cmd_alert_unsilence)
    q.add_argument("silence", type=int)
    q = alert_sub.add_parser("delete", parents=[where], help="delete a rule")
    q.set_defaults(run=cmd_alert_delete)
    q.add_argument("rule", help="the rule's id or name")
