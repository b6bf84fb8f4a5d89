"""``emq schedule add|list|pause|resume|run|delete`` and ``emq scheduler``: recurring jobs from a shell."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .client import EchoMQ
from .moves import DEFAULT_MAX_ATTEMPTS
from .scheduler import DEFAULT_INTERVAL_S, scheduler_lock
from .schedules import (
    Definition,
    Schedule,
    add_schedule,
    delete_schedule,
    get_schedule,
    pause_schedule,
    resume_schedule,
    run_now,
    schedule_statuses,
    update_schedule,
)
from .visible import visible


def _iso(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _line(s: Schedule) -> str:
    when = s.when.describe() if s.when else "unreadable definition"
    state = "paused" if s.paused else f"next {_iso(s.next_ms)}"
    spark = "".join({"done": "+", "failed": "x", "pending": ".", "active": ">"}.get(r.state, "?") for r in s.recent)
    return "\t".join([visible(s.queue), visible(s.name), visible(when), state, f"last {_iso(s.last_tick_ms)}",
                      s.last_outcome or "-", spark or "-"])


def cmd_schedule_add(mq: EchoMQ, args: argparse.Namespace) -> None:
    definition = Definition.of(cron=args.cron, tz=args.tz, every_ms=args.every_ms, payload=args.payload,
                               max_attempts=args.max_attempts, missed=args.missed, paused=args.paused)
    if args.replace:
        change = update_schedule(mq, args.queue, args.name, definition)
    else:
        change = add_schedule(mq, args.queue, args.name, definition)
    print(visible(f"{args.queue}/{args.name}: {definition.when.describe()}, "
                  f"{'paused' if definition.paused else f'first tick {_iso(change.next_ms)}'} (version {change.version})"))


def cmd_schedule_list(mq: EchoMQ, args: argparse.Namespace) -> None:
    limit, as_json = getattr(args, "limit", 100), getattr(args, "json", False)
    found = schedule_statuses(mq, queue=getattr(args, "queue", None), limit=limit)
    for s in found.schedules:
        print(json.dumps(s.as_dict(), ensure_ascii=True) if as_json else _line(s))
    for queue, why in found.unreadable.items():
        print(visible(f"emq: {queue}: {why}"), file=sys.stderr)
    if found.after is not None:
        print(f"emq: more schedules than --limit {limit}", file=sys.stderr)
    if not found.schedules:
        print("emq: no schedules", file=sys.stderr)


def cmd_schedule_pause(mq: EchoMQ, args: argparse.Namespace) -> None:
    change = pause_schedule(mq, args.queue, args.name)
    print(visible(f"{args.queue}/{args.name}: {'paused already' if change.already else 'paused'}"))


def cmd_schedule_resume(mq: EchoMQ, args: argparse.Namespace) -> None:
    change = resume_schedule(mq, args.queue, args.name)
    print(visible(f"{args.queue}/{args.name}: " + ("running already" if change.already
                                                    else f"resumed, next tick {_iso(change.next_ms)}")))


def cmd_schedule_run(mq: EchoMQ, args: argparse.Namespace) -> None:
    print(visible(f"{args.queue}/{args.name}: enqueued {run_now(mq, args.queue, args.name)}"))


def cmd_schedule_delete(mq: EchoMQ, args: argparse.Namespace) -> None:
    found = get_schedule(mq, args.queue, args.name)
    delete_schedule(mq, args.queue, args.name, expected_version=found.version)
    print(visible(f"{args.queue}/{args.name}: deleted (its {found.ticks + found.runs} jobs stay in the queue)"))


def cmd_scheduler(mq: EchoMQ, args: argparse.Namespace) -> None:
    """Runs the ticks in the foreground, under the scheduler lock, until SIGINT or SIGTERM."""
    from .scheduler import Scheduler
    lock = scheduler_lock(url=args.url, interval_s=args.interval_s, holder=f"scheduler@{mq.actor}")
    scheduler = Scheduler(mq, lock, interval_s=args.interval_s)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"emq scheduler: ticking every {args.interval_s} s as {lock.holder} while it holds {lock.key}",
          file=sys.stderr)
    try:
        while not stop.is_set():
            report = scheduler.run_once()
            if report is not None and (report.enqueued or report.errors):
                for job_id in report.enqueued:
                    print(visible(f"enqueued {job_id}"))
                for where, why in report.errors.items():
                    print(visible(f"emq scheduler: {where}: {why}"), file=sys.stderr)
                sys.stdout.flush()
            stop.wait(args.interval_s)
    finally:
        lock.release()


def add_commands(command: Callable[[str, Any, str], argparse.ArgumentParser]) -> None:
    p = command("schedule", cmd_schedule_list, "recurring jobs: add, list, pause, resume, run, delete")
    sub = p.add_subparsers(dest="schedule_command")

    def named(name: str, handler: Any, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(run=handler)
        p.add_argument("queue")
        p.add_argument("name", help="1..64 of A-Z a-z 0-9 . _ -; each tick's job is NAME:TICK_MS")
        return p

    p = named("add", cmd_schedule_add, "add a schedule (--replace: replace an existing one's definition)")
    p.add_argument("payload")
    p.add_argument("--cron", help="5 fields, e.g. '0 2 * * *' (with --tz)")
    p.add_argument("--tz", default=None, help="the cron's IANA time zone (default UTC)")
    p.add_argument("--every-ms", type=int, help="an interval instead of a cron (ticks at its multiples since the epoch)")
    p.add_argument("--max-attempts", type=int, default=DEFAULT_MAX_ATTEMPTS)
    p.add_argument("--missed", choices=("once", "skip"), default="once",
                   help="a tick reached over 60 s late: enqueue it once (default) or skip it")
    p.add_argument("--paused", action="store_true", help="add it paused")
    p.add_argument("--replace", action="store_true", help="replace the definition of an existing schedule")
    p = sub.add_parser("list", help="every schedule: next and last tick, last outcome, recent outcomes")
    p.set_defaults(run=cmd_schedule_list)
    p.add_argument("queue", nargs="?")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--json", action="store_true")
    named("pause", cmd_schedule_pause, "enqueue nothing until resumed")
    named("resume", cmd_schedule_resume, "tick again from the next tick after now (missed ones are not made up)")
    named("run", cmd_schedule_run, "enqueue one job of the schedule now (NAME:run:STAMP), paused or not")
    named("delete", cmd_schedule_delete, "remove the schedule (its jobs stay)")
    p = command("scheduler", cmd_scheduler, "run the schedules' ticks here, one process at a time (a lock)")
    p.add_argument("--interval-s", type=float, default=DEFAULT_INTERVAL_S)
