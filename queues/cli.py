r"""``emq``: the EchoMQ command line. One line of output per result.

Exit codes: 0 done (output cut short by a closed pipe, as ``emq jobs q failed | head``, included),
2 bad input, 3 nothing to claim (or the queue is paused), 4 refused (stale token,
job moved on), 5 not replicated, 6 out of memory (nothing written), 7 no such job,
1 anything else (Redis unreachable included).

Times print as ISO 8601 in UTC (``2026-12-01T20:15:03.250Z``); under ``--json`` they are epoch
milliseconds (fields ending in ``_ms``). Moves record who made them: ``--actor``, by default
``$USER@host``.

Everything printed from the keyspace (ids, actors, errors, payload text) is
written so that it cannot act on the terminal: control characters, bidi
controls and other invisible ones are shown as escapes (``\x1b``, ``\u202e``),
a backslash as ``\\`` and a byte that is not UTF-8 as ``\xNN``. JSON output
keeps the exact text, with the same characters written as JSON ``\u`` escapes.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import socket
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

from . import latency, moves, slo
from .alert_cli import ALERT_COMMANDS, add_alert_commands
from .cli_schedules import add_commands as add_schedule_commands
from .client import EchoMQ
from .deploys import deploy_mark, deploy_marks
from .errors import Duplicate, EmqError, InvalidInput, JobMissing
from .failure_explain import explain_failures
from .failures import group_failed, groups
from .health import warn_if_evicting, warn_if_evicting_at
from .integrity import check_queue
from .keys import STATES
from .moves import DEFAULT_BACKOFF_MS, DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS, MAX_INT
from .operator_moves import JOB_MOVES, job_move
from .payload_versions import payload_problems, schema, versions
from .scripts import script
from .search import FILTERS, MATCH_MOVES, Limits, MoveTally, Query, Search, check_match_move, move_matches, parse_moment
from .visible import INVISIBLE, visible


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 too; keep its usage line
        self.print_usage(sys.stderr)
        print(f"emq: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _json_escape(match: re.Match[str]) -> str:
    return json.dumps(match.group())[1:-1]


def _out(value: Any, as_json: bool = True) -> None:
    if as_json:
        print(INVISIBLE.sub(_json_escape, json.dumps(value, ensure_ascii=False, separators=(",", ":"))))
    else:
        print(visible(str(value)))


def _payload_arg(args: argparse.Namespace) -> bytes:
    data: bytes = sys.stdin.buffer.read() if args.payload == "-" else args.payload.encode()
    if not args.raw:
        try:
            json.loads(data)
        except ValueError as error:
            raise InvalidInput(f"payload is not JSON ({error}); pass --raw to enqueue it as it is") from None
    return data


def iso_time(ms: int | None) -> str:
    """Epoch milliseconds as ISO 8601 in UTC; '-' for none (and for a value no calendar holds)."""
    if ms is None:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def default_actor() -> str:
    """Who is at the keyboard, for the history and the pause banner: ``$USER@host``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "?"
    return f"{user}@{socket.gethostname()}"


def _text(data: bytes) -> str:
    """For JSON output: exact text, a byte that is not UTF-8 as U+FFFD."""
    return data.decode(errors="replace")


def _shown(data: bytes | str) -> str:
    """For plain output: the text with every odd character and byte escaped (see :func:`visible`)."""
    return visible(data.decode(errors="surrogateescape") if isinstance(data, bytes) else data)


def cmd_enqueue(mq: EchoMQ, args: argparse.Namespace) -> None:
    try:
        print(mq.enqueue(args.queue, _payload_arg(args), job_id=args.id, delay_ms=args.delay_ms,
                         max_attempts=args.max_attempts))
    except Duplicate as duplicate:
        print(f"emq: {_shown(str(duplicate))}; nothing written", file=sys.stderr)
        print(_shown(duplicate.job_id))


def cmd_claim(mq: EchoMQ, args: argparse.Namespace) -> None:
    for job in mq.claim(args.queue, lease_ms=args.lease_ms, count=args.count):
        _out({"id": job.id, "token": str(job.token), "payload": _text(job.payload),
              "lease_deadline_ms": job.lease_deadline_ms})


def cmd_extend(mq: EchoMQ, args: argparse.Namespace) -> None:
    print(f"extended: lease deadline {iso_time(mq.extend(args.queue, args.id, args.token, lease_ms=args.lease_ms))}")


def cmd_complete(mq: EchoMQ, args: argparse.Namespace) -> None:
    mq.complete(args.queue, args.id, args.token)
    print(f"completed: job {_shown(args.id)} is now done")


def cmd_fail(mq: EchoMQ, args: argparse.Namespace) -> None:
    state = mq.fail(args.queue, args.id, args.token, error=args.error, backoff_ms=args.backoff_ms)
    print(f"failed: job {_shown(args.id)} is now {state}")


def cmd_operator(mq: EchoMQ, args: argparse.Namespace) -> None:
    row = job_move(args.command)
    arguments = {name: _move_argument(name, args) for name in row.arguments}
    given = arguments.get("payload", arguments.get("new_payload"))
    if given is not None:
        # As the console does: a payload the queue's JSON Schema refuses is never written.
        found = mq.run(schema(args.queue))
        problems = payload_problems(found.text, given) if found.is_set else []
        if problems:
            raise InvalidInput(f"the payload does not match the JSON Schema of {args.queue}, so nothing was written: "
                               + "; ".join(problems))
    result = mq.operator_move(args.command, args.queue, args.id, expect_state=args.expect_state,
                              expect_attempts=args.expect_attempts, arguments=arguments)
    due = f", due {iso_time(result.due_ms)}" if result.due_ms is not None else ""
    print(_shown(result.describe() + due))


def _payload_option(args: argparse.Namespace) -> bytes | None:
    """The bytes of --payload or --payload-file (- for stdin), None when neither is given."""
    if args.payload is not None:
        return str(args.payload).encode()
    if args.payload_file is None:
        return None
    if args.payload_file == "-":
        return sys.stdin.buffer.read(moves.MAX_PAYLOAD_BYTES + 1)
    try:
        with open(args.payload_file, "rb") as source:
            return source.read(moves.MAX_PAYLOAD_BYTES + 1)
    except OSError as error:
        raise InvalidInput(f"cannot read {args.payload_file}: {error.strerror}") from None


def _move_argument(name: str, args: argparse.Namespace) -> Any:
    if name in ("payload", "new_payload"):
        return _payload_option(args)
    if name == "new_id":
        return args.new_id if args.new_id is not None else moves.new_job_id()
    return getattr(args, name)


def _add_move_arguments(p: argparse.ArgumentParser, names: tuple[str, ...]) -> None:
    """The options of a move's own arguments (its row's ``arguments``), one per name."""
    for name in names:
        if name == "payload":
            given = p.add_mutually_exclusive_group(required=True)
            given.add_argument("--payload", help="the new payload, as text")
            given.add_argument("--payload-file", help="a file holding the new payload's bytes, - for stdin")
        elif name == "max_attempts":
            p.add_argument("--max-attempts", default="", help="claims allowed (default: unchanged)")
        elif name == "retry":
            p.add_argument("--retry", action="store_true", help="a failed job is retried in the same step")
        elif name == "version":
            p.add_argument("--version", type=int, required=True, help="the kept version's number (emq show lists them)")
        elif name == "new_id":
            p.add_argument("--new-id", help="the new job's id (default: a new random id); refused if it is taken")
        elif name == "new_payload":
            given = p.add_mutually_exclusive_group()
            given.add_argument("--payload", help="the new job's payload, as text (default: this job's, byte for byte)")
            given.add_argument("--payload-file", help="a file holding the new job's payload, - for stdin")
        elif name == "delay_ms":
            p.add_argument("--delay-ms", type=int, default=0, help="due after this many ms (default: now)")
        else:
            raise ValueError(f"emq has no option for the move argument {name!r}: add it here")


def cmd_recover(mq: EchoMQ, args: argparse.Namespace) -> None:
    if args.id:
        cmd_operator(mq, args)
        return
    total = mq.recover_expired(args.queue)
    print(f"recovered {total.moved} lapsed leases ({total.to_failed} to failed, {total.missing} missing, "
          f"{total.skipped} skipped)")


def cmd_retry_all(mq: EchoMQ, args: argparse.Namespace) -> None:
    total = mq.retry_failed(args.queue)
    print(f"retried {total.moved} failed jobs ({total.missing} missing, {total.skipped} skipped)")


def cmd_purge(mq: EchoMQ, args: argparse.Namespace) -> None:
    total = mq.purge(args.queue, args.state, older_than_ms=args.older_than_ms)
    print(f"purged {total.moved} {args.state} jobs ({total.missing} missing, {total.skipped} skipped)")


def cmd_pause(mq: EchoMQ, args: argparse.Namespace) -> None:
    print(_shown(mq.pause(args.queue, reason=args.reason).describe()))


def cmd_resume(mq: EchoMQ, args: argparse.Namespace) -> None:
    print(_shown(mq.resume(args.queue).describe()))


def cmd_workers(mq: EchoMQ, args: argparse.Namespace) -> None:
    from . import reads

    names = [args.queue] if args.queue else mq.queues()
    for start in range(0, len(names), 500):
        chunk = names[start:start + 500]
        for name, found in zip(chunk, mq.run_many([reads.workers(q) for q in chunk])):
            if isinstance(found, Exception):
                print(_shown(f"emq: {name}: {found}"), file=sys.stderr)
                continue
            for w in found.workers:
                if args.json:
                    _out(w.as_dict())
                else:
                    beat = (found.now_ms - w.heartbeat_ms) / 1000 if w.heartbeat_ms else None
                    print("\t".join(_shown(part) for part in (
                        w.queue, w.id, f"{w.host} pid {w.pid}", w.runtime, f"concurrency {w.concurrency}",
                        f"holds {w.held}", f"heartbeat {'?' if beat is None else f'{beat:.1f} s ago'}")))


def cmd_why(mq: EchoMQ, args: argparse.Namespace) -> None:
    answer = mq.queue_why(args.queue) if args.id is None else mq.job_why(args.queue, args.id)
    if args.json:
        _out(answer.as_dict())
    else:
        for reason in answer.reasons:
            print(f"{reason.code}\t{_shown(reason.text)}")
    if answer.top.code == "unknown":
        raise SystemExit(1)


def cmd_stats(mq: EchoMQ, args: argparse.Namespace) -> None:
    stats = mq.stats(args.queue)
    summary = latency.summarize(mq.run(latency.summary_read(args.queue)))
    if args.json:
        _out({**stats.as_dict(), **summary.as_dict(stats.due)})
        return
    c = stats.counts
    print(f"{stats.queue}: pending {c['pending']} (due {stats.due}, delayed {stats.delayed}) "
          f"active {c['active']} (lapsed {stats.lapsed}) done {c['done']} failed {c['failed']}"
          + (_shown(f" PAUSED by {stats.paused_by or '?'}: {stats.paused_reason}") if stats.paused else ""))
    print(latency.describe(summary, stats.due))


def cmd_slo_set(mq: EchoMQ, args: argparse.Namespace) -> None:
    change = mq.run(slo.slo_set(args.queue, metric=args.metric, under_ms=args.under_ms, target=args.target,
                                window_days=args.window_days, actor=mq.actor))
    now = mq.run(slo.slos()).for_queue(args.queue) if not any(c in args.queue for c in "*?[") else None
    was = f" (was: {change.previous.describe()})" if change.previous else ""
    shown = now.describe() if now else f"{args.target} % under {args.under_ms} ms"
    print(_shown(f"{args.queue}: {shown}{was}"))


def cmd_slo_delete(mq: EchoMQ, args: argparse.Namespace) -> None:
    change = mq.run(slo.slo_delete(args.queue))
    print(_shown(f"{args.queue}: objective removed ({change.previous.describe() if change.previous else '?'})"))


# At most this many queues a pattern's objective is shown for in `emq slo list`.
SLO_LIST_QUEUES = 50


def cmd_slo_list(mq: EchoMQ, args: argparse.Namespace) -> None:
    found = mq.run(slo.slos())
    known = mq.known_queues().names
    for objective in found.slos:
        queues = [q for q in known if found.for_queue(q) == objective][:SLO_LIST_QUEUES] \
            if objective.is_pattern else [objective.name]
        if not queues and getattr(args, "json", False):
            _out({"queue": None, **objective.as_dict()})
        elif not queues:
            print(_shown(f"{objective.name}: {objective.describe()}; no queue matches"))
        for queue in queues:
            status = slo.slo_status(mq, queue, objective)
            if getattr(args, "json", False):
                _out(status.as_dict())
                continue
            attained = "not measured" if status.attainment is None else f"{status.attainment * 100:.3f} %"
            burn = ", ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in status.burn.items())
            print(_shown(f"{queue}: {objective.describe()}: attained {attained} ({status.measured} jobs); "
                         f"burn rate {burn}" + ("; BURNING FAST" if status.burning_fast else "")))
    for name in found.unreadable:
        print(_shown(f"{name}: an objective not written by slo_set (unreadable)"))


def cmd_jobs(mq: EchoMQ, args: argparse.Namespace) -> None:
    page = mq.page(args.queue, args.state, offset=args.offset, limit=args.limit, order=args.order)
    for row in page.rows:
        if args.json:
            _out({"id": row.id, "score": row.score, "state": row.state, "attempts": row.attempts,
                  "payload_head": _text(row.payload_head), "payload_length": row.payload_length,
                  "payload_source": row.payload_source, "last_error": row.last_error, "exists": row.exists,
                  "key_type": row.key_type})
        else:
            print("\t".join([_shown(row.id), iso_time(row.score), _shown(row.state), _shown(row.attempts),
                             _shown(row.payload_head[:60]), f"{row.payload_length} bytes", _shown(row.last_error[:80])]))


def cmd_show(mq: EchoMQ, args: argparse.Namespace) -> None:
    view = mq.job(args.queue, args.id)
    if not view.exists and not view.scores:
        raise JobMissing(args.queue, args.id)
    try:
        history, history_error = mq.job_events(args.queue, args.id), ""
    except EmqError as error:
        history, history_error = [], str(error)
    if args.json:
        _out({**view.as_dict(), "history": [e.as_dict() for e in reversed(history)], "history_error": history_error})
        return
    left = view.lease_left_ms
    lease = f" lease {left / 1000:.1f}s left" if left is not None else ""
    print(_shown(f"{view.id}: {view.state or '?'} attempts {view.attempts or '?'}{lease} ") + "payload "
          + _shown(view.payload[:200]) + f" ({view.payload_length} bytes)"
          + "".join(f" [warning: {_shown(w)}]" for w in view.warnings))
    last_error = view.text("last_error")
    if last_error:
        print("last error: " + _shown(last_error))
    if history_error:
        print("history: " + _shown(history_error))
    for event in reversed(history):  # oldest first, as a log reads
        print("\t".join([iso_time(event.ts_ms), _shown(event.move),
                         f"{_shown(event.source or '-')}->{_shown(event.target or '-')}",
                         f"attempts {_shown(event.attempts or '?')}", _shown(event.actor or '-')]
                        + ([_shown(event.error)] if event.error else [])))


def cmd_versions(mq: EchoMQ, args: argparse.Namespace) -> None:
    """The payloads edit and restore kept (newest last); with --show N, version N's bytes as stored."""
    kept = mq.run(versions(args.queue, args.id, version=args.show))
    if not kept.exists:
        raise JobMissing(args.queue, args.id)
    if kept.odd:
        print(f"emq: {_shown(kept.odd)}", file=sys.stderr)
    if args.show is not None:
        if kept.version is None or kept.cut:
            raise InvalidInput(f"job {args.id} keeps no version {args.show}")
        sys.stdout.flush()
        sys.stdout.buffer.write(kept.version)
        return
    for v in kept.versions:
        if args.json:
            _out({"version": v.seq, "replaced_ms": v.replaced_ms, "bytes": v.length, "move": v.move, "actor": v.actor})
        else:
            print("\t".join([str(v.seq), iso_time(v.replaced_ms), v.move, f"{v.length} bytes", _shown(v.actor or "-")]))


def cmd_queues(mq: EchoMQ, args: argparse.Namespace) -> None:
    known = mq.known_queues()
    if known.stale:
        raise EmqError(known.stale)
    for name in mq.discover_queues() if args.discover else known.names:
        _out({"queue": name}) if args.json else print(_shown(name))
    for entry in known.odd:
        print(f"emq: the registry also holds {_shown(entry)}, which is not a queue name (left out)", file=sys.stderr)


def cmd_events(mq: EchoMQ, args: argparse.Namespace) -> None:
    for event in reversed(mq.events(args.queue, count=args.count)):
        if args.json:
            _out(event.as_dict())
        else:
            print("\t".join([event.id, iso_time(event.ts_ms) if event.ts_ms else "-", _shown(event.move),
                             _shown(event.job_id),
                             f"{_shown(event.source or '-')}->{_shown(event.target or '-')}",
                             f"attempts {_shown(event.attempts)}", _shown(event.actor)]))


def cmd_check(mq: EchoMQ, args: argparse.Namespace) -> None:
    report = check_queue(mq, args.queue)
    if args.json:
        _out(report.as_dict())
    else:
        for problem in report.problems:
            print(_shown(problem.describe()))
        print(f"{report.queue}: {report.looked_at} jobs looked at, {len(report.problems)} problems")
    if not report.ok:
        raise SystemExit(1)


def _query(mq: EchoMQ, args: argparse.Namespace, clock_queue: str | None = None) -> Query:
    return Query.parse(state=args.state, order=args.order, now_ms=mq.server_time_ms(clock_queue or args.queue),
                       **{f.name: getattr(args, f.name) for f in FILTERS})


def cmd_search(mq: EchoMQ, args: argparse.Namespace) -> None:
    if bool(args.queue) == args.all_queues:
        raise InvalidInput("name the queue to search, or give --all-queues (not both)")
    names = mq.queues() if args.all_queues else [args.queue]
    if not names:
        print("emq: no queue is registered: nothing to search", file=sys.stderr)
        raise SystemExit(3)
    query = _query(mq, args, names[0])
    if args.limit is not None and args.limit < 1:
        raise InvalidInput("--limit must be at least 1")
    engine = Search(query, names, Limits(max_matches=args.limit, seconds=None, redis_seconds=None))
    for step in engine.steps(mq):
        for match in step.matches:
            if args.json:
                _out(match.as_dict())
            else:
                print((f"{_shown(match.queue)}\t" if args.all_queues else "")
                      + f"{_shown(match.id)}\t{_shown(match.state)}\t{_shown(match.attempts or '0')}\t{match.score}"
                      f"\t{_shown(match.payload_head[:60])}\t{_shown(match.last_error[:80])}")
        sys.stdout.flush()
    print(f"emq: {_shown(query.describe())}: {_shown(engine.summary())}", file=sys.stderr)
    if not engine.matched:
        raise SystemExit(3)


def cmd_failures(mq: EchoMQ, args: argparse.Namespace) -> None:
    if args.group_ungrouped:
        start = grouped = 0
        while True:
            step = mq.run(group_failed(args.queue, start=start))
            grouped, start = grouped + step.grouped, step.next_start
            if not step.more:
                break
        print(f"emq: {grouped} failed jobs that were in no group are grouped now", file=sys.stderr)
    if args.explain or args.release or args.host or args.sort != "count":
        _explained(mq, args)
        return
    read = mq.run(groups(args.queue, limit=args.limit))
    if read.problem:
        raise EmqError(read.problem)
    for group in read.groups:
        if args.json:
            _out(group.as_dict())
        else:
            print(f"{group.id}\t{group.count}\t{_shown(group.signature)}\tfirst {iso_time(group.first_ms)}\tlast "
                  f"{iso_time(group.last_ms)}\tsample {_shown(group.sample_id)}")
            if group.unread:
                print(f"  {group.unread_note}")
    if not read.failed and not read.groups:
        print(f"emq: no failed jobs in {_shown(args.queue)}", file=sys.stderr)
        return
    print(f"emq: {read.failed} failed jobs, {read.grouped} in the {len(read.groups)} largest of {read.group_count} "
          "groups", file=sys.stderr)


def _explained(mq: EchoMQ, args: argparse.Namespace) -> None:
    """The groups with what explains them (queues.failure_explain), one line each and a line per finding."""
    read = explain_failures(mq, args.queue, release=args.release or "", host=args.host or "", sort=args.sort)
    if read.problem:
        raise EmqError(read.problem)
    for found in read.groups:
        if args.json:
            _out(found.as_dict())
            continue
        group = found.group
        new = f"\tnew since release {_shown(found.new_since)}" if found.new_since else ""
        print(f"{group.id}\t{group.count}\t{_shown(group.signature)}\tfirst {iso_time(group.first_ms)}\tlast "
              f"{iso_time(group.last_ms)}\tlast hour {found.last_hour}\thour before {found.hour_before}{new}")
        print(f"  releases {', '.join(_shown(r) for r in found.releases_ever) or '(not recorded)'}; of "
              f"{found.sampled} sampled: " + ", ".join(f"{_shown(r)} {n}" for r, n in found.releases)
              + "; hosts " + ", ".join(f"{_shown(h)} {n}" for h, n in found.hosts))
        for share in found.fields:
            print(f"  {_shown(share.describe())}")
        if group.unread:
            print(f"  {group.unread_note}")
    print(f"emq: {read.failed} failed jobs; read from {read.bounds()}", file=sys.stderr)
    for note in read.notes:
        print(f"emq: note: {_shown(note)}", file=sys.stderr)


def cmd_bulk(mq: EchoMQ, args: argparse.Namespace) -> None:
    query = _query(mq, args)
    check_match_move(args.move, query.state)
    if not args.yes:
        engine = Search(query, [args.queue], Limits(max_matches=None, seconds=None, redis_seconds=None, detail=0))
        for _ in engine.steps(mq):
            pass
        raise InvalidInput(f"{args.move} would act on the {engine.matched} {_shown(query.describe())} of "
                           f"{_shown(args.queue)}: add --yes to do it")
    engine = Search(query, [args.queue], Limits(max_matches=None, seconds=None, redis_seconds=None, detail=0))
    total = MoveTally()
    for tally in move_matches(mq, args.move, engine, actor=mq.actor):
        total.add(tally)
    print(total.describe())


def cmd_deploy_mark(mq: EchoMQ, args: argparse.Namespace) -> None:
    at = None if args.at is None else parse_moment(args.at, now_ms=mq.run(deploy_marks(since_ms=0, until_ms=0,
                                                                                      limit=1)).now_ms)
    marked = mq.run(deploy_mark(args.label, at_ms=at))
    print(_shown(f"deploy {args.label} marked at {iso_time(marked.at_ms)}")
          + ("" if marked.new else " (marked in that minute already: one mark)"))


def cmd_deploy_list(mq: EchoMQ, args: argparse.Namespace) -> None:
    found = mq.run(deploy_marks(since_ms=0, until_ms=MAX_INT - 1, limit=args.limit))
    for mark in found.marks:
        _out(mark.as_dict()) if args.json else print(f"{iso_time(mark.at_ms)}\t{_shown(mark.label)}")
    if not found.marks:
        print("emq: no deploy marks", file=sys.stderr)


def cmd_script(mq: EchoMQ | None, args: argparse.Namespace) -> None:
    print(script(args.name).source, end="")


def cmd_top(mq: EchoMQ | None, args: argparse.Namespace) -> None:
    from .console_api import ConsoleAPI
    from .top import run

    run(ConsoleAPI(args.console, args.token), interval_s=max(0.5, args.interval), queue=args.queue)


def cmd_worker(mq: EchoMQ | None, args: argparse.Namespace) -> None:
    from .worker import Worker, load_handler

    warn_if_evicting_at(args.url)
    Worker(queue=args.queue, handler=load_handler(args.handler), concurrency=args.concurrency,
           prefetch=args.prefetch, lease_ms=args.lease_ms, url=args.url, wait_replicas=args.wait_replicas,
           wait_timeout_ms=args.wait_timeout_ms).run()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="emq", description="EchoMQ: every move one Lua script.")
    parser.add_argument("--url", help="Redis URL (default: $EMQ_REDIS_URL or redis://127.0.0.1:6379/0)")
    parser.add_argument("--actor", help="who the history and the pause banner name (default: $USER@host)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, handler: Any, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(run=handler)
        return p

    def job(p: argparse.ArgumentParser, token: bool = False) -> None:
        p.add_argument("queue")
        p.add_argument("id")
        if token:
            p.add_argument("--token", required=True, help="the fencing token the claim printed")

    p = command("enqueue", cmd_enqueue, "add a job; prints its id")
    p.add_argument("queue")
    p.add_argument("payload", help="JSON text, or - to read stdin")
    p.add_argument("--id")
    p.add_argument("--delay-ms", type=int, default=0)
    p.add_argument("--max-attempts", type=int, default=DEFAULT_MAX_ATTEMPTS)
    p.add_argument("--raw", action="store_true", help="do not require the payload to be JSON")

    p = command("claim", cmd_claim, "claim due jobs; prints {id, token, payload} per job")
    p.add_argument("queue")
    p.add_argument("--lease-ms", type=int, default=DEFAULT_LEASE_MS)
    p.add_argument("--count", type=int, default=1)

    p = command("extend", cmd_extend, "heartbeat: push the lease deadline")
    job(p, token=True)
    p.add_argument("--lease-ms", type=int, default=DEFAULT_LEASE_MS)
    job(command("complete", cmd_complete, "the lease holder finished the job"), token=True)
    p = command("fail", cmd_fail, "the lease holder's handler failed")
    job(p, token=True)
    p.add_argument("--error", default="")
    p.add_argument("--backoff-ms", type=int, default=DEFAULT_BACKOFF_MS)

    for move in JOB_MOVES:
        if move.name == "recover":
            # Without an id it recovers every lapsed lease of the queue (the sweeper's move, by hand).
            p = command("recover", cmd_recover, "recover every lapsed lease of a queue, or one job's")
            p.add_argument("queue")
            p.add_argument("id", nargs="?")
        else:
            p = command(move.name, cmd_operator, move.summary)
            job(p)
            _add_move_arguments(p, move.arguments)
        p.add_argument("--expect-state", default=move.starts_from,
                       help="the state you saw (the move refuses if the job moved on)")
        p.add_argument("--expect-attempts", help="the attempts you saw")
    p = command("versions", cmd_versions, "a job's kept payload versions (edit and restore keep them)")
    job(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--show", type=int, help="print this version's bytes as stored")
    command("retry-all", cmd_retry_all, "retry every failed job, in batches").add_argument("queue")
    p = command("workers", cmd_workers, "the live workers (of one queue, or of every registered queue)")
    p.add_argument("queue", nargs="?")
    p.add_argument("--json", action="store_true")
    p = command("pause", cmd_pause, "claims refuse the queue until resume (enqueue and running jobs go on)")
    p.add_argument("queue")
    p.add_argument("--reason", default="", help="why, for whoever looks (the console shows it)")
    command("resume", cmd_resume, "let claims take the queue's jobs again").add_argument("queue")
    p = command("purge", cmd_purge, "delete done or failed jobs older than an age, in batches")
    p.add_argument("queue")
    p.add_argument("state", choices=["done", "failed"])
    p.add_argument("--older-than-ms", type=int, default=0)

    p = command("why", cmd_why, "why a queue is not draining, or why a job is not moving: reasons, most decisive first")
    p.add_argument("queue")
    p.add_argument("id", nargs="?")
    p.add_argument("--json", action="store_true")
    p = command("slo", cmd_slo_list, "latency objectives: set, list, delete (see PROTOCOL.md, 8a)")
    slo_sub = p.add_subparsers(dest="slo_command")
    p = slo_sub.add_parser("set", help="set a queue's (or a name pattern's) objective, replacing any")
    p.set_defaults(run=cmd_slo_set)
    p.add_argument("queue", help="a queue, or a pattern such as 'mail-*'")
    p.add_argument("--metric", choices=["wait", "run"], required=True)
    p.add_argument("--under-ms", type=int, required=True)
    p.add_argument("--target", required=True, help="percent of jobs under --under-ms, such as 95 or 99.9")
    p.add_argument("--window-days", type=int, default=30)
    p = slo_sub.add_parser("list", help="every objective, with each queue's attainment and burn rates")
    p.set_defaults(run=cmd_slo_list)
    p.add_argument("--json", action="store_true")
    p = slo_sub.add_parser("delete", help="remove a queue's (or a pattern's) objective")
    p.set_defaults(run=cmd_slo_delete)
    p.add_argument("queue")
    p = command("stats", cmd_stats, "counts per state")
    p.add_argument("queue")
    p.add_argument("--json", action="store_true")
    p = command("jobs", cmd_jobs, "a page of a state")
    p.add_argument("queue")
    p.add_argument("state", choices=STATES)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--order", choices=["asc", "desc"], default="asc")
    p.add_argument("--json", action="store_true")
    p = command("show", cmd_show, "one job")
    job(p)
    p.add_argument("--json", action="store_true")
    p = command("queues", cmd_queues, "the queues that exist")
    p.add_argument("--json", action="store_true")
    p.add_argument("--discover", action="store_true", help="also SCAN for unregistered queues")
    p = command("events", cmd_events, "a queue's recent events, oldest first")
    p.add_argument("queue")
    p.add_argument("--count", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p = command("check", cmd_check, "integrity check (exit 1 when problems are found)")
    p.add_argument("queue")
    p.add_argument("--json", action="store_true")
    def search_filters(p: argparse.ArgumentParser, *, every_queue: bool = False) -> None:
        if every_queue:
            p.add_argument("queue", nargs="?")
            p.add_argument("--all-queues", action="store_true",
                           help="search every registered queue instead (at most 100; the queue is printed first)")
        else:
            p.add_argument("queue")
        p.add_argument("--state", required=True, choices=STATES)
        for f in FILTERS:
            p.add_argument(f.flag, *f.aliases, dest=f.name, help=f.help)
        p.add_argument("--order", choices=["asc", "desc"], help="by the state's score (default: newest first "
                                                                 "for done and failed, oldest first otherwise)")

    p = command("search", cmd_search, "find jobs of a state by id prefix, payload, JSON field, error, worker, time")
    search_filters(p, every_queue=True)
    p.add_argument("--limit", type=int, help="stop after this many matches")
    p.add_argument("--json", action="store_true")
    p = command("failures", cmd_failures, "the failed jobs grouped by cause, largest group first")
    p.add_argument("queue")
    p.add_argument("--limit", type=int, default=50, help="how many groups (at most 200)")
    p.add_argument("--group-ungrouped", action="store_true",
                   help="first put failed jobs that are in no group (failed before groups were kept) into theirs")
    p.add_argument("--explain", action="store_true", help="with each group's rate, releases, hosts and the payload "
                                                          "field values over-represented in it (bounded samples)")
    p.add_argument("--release", help="only groups whose attempts ran on this release ('-': release unknown)")
    p.add_argument("--host", help="only groups with sampled jobs on this host")
    p.add_argument("--sort", choices=["count", "new"], default="count",
                   help="new: the groups that began after the newest deploy mark first")
    p.add_argument("--json", action="store_true")
    p = command("bulk", cmd_bulk, "retry, cancel, delete or promote every job a search finds")
    p.add_argument("move", choices=sorted(MATCH_MOVES))
    search_filters(p)
    p.add_argument("--yes", action="store_true", help="do it (without: say how many it would act on)")
    p = command("deploy", cmd_deploy_list, "deploy marks: mark a release's deploy (drawn on every chart), list them")
    deploy_sub = p.add_subparsers(dest="deploy_command")
    p = deploy_sub.add_parser("mark", help="mark that release LABEL went out (now, or --at); one mark per label a minute")
    p.set_defaults(run=cmd_deploy_mark)
    p.add_argument("label")
    p.add_argument("--at", help="when: epoch ms, ISO time (UTC unless it says) or an age like 10m")
    p = deploy_sub.add_parser("list", help="the marks kept (90 days), oldest first")
    p.set_defaults(run=cmd_deploy_list)
    p.add_argument("--limit", type=int, default=200)
    p.add_argument("--json", action="store_true")
    add_schedule_commands(command)
    add_alert_commands(sub)
    p = command("script", cmd_script, "print a move's Lua source as sent to Redis")
    p.add_argument("name")
    p = command("top", cmd_top, "the console in this terminal, live, acting through the console's API "
                                "(confirmed and audited as on the web)")
    p.add_argument("queue", nargs="?", help="open this queue first")
    p.add_argument("--console", help="the console's URL (default $EMQ_CONSOLE_URL, else http://127.0.0.1:8000/)")
    p.add_argument("--token", help="an API token (default $EMQ_CONSOLE_TOKEN; manage.py api_token USER --scope act)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between reads (default 2)")
    p = command("worker", cmd_worker, "run handlers for a queue")
    p.add_argument("queue")
    p.add_argument("--handler", required=True, help="module:callable")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--prefetch", type=int, default=0,
                   help="jobs claimed ahead of the running handlers (leased and heartbeated; default 0)")
    p.add_argument("--lease-ms", type=int, default=DEFAULT_LEASE_MS)
    p.add_argument("--wait-replicas", type=int, default=0,
                   help="follow every move with WAIT for this many replicas (a move fewer acknowledged is logged "
                        "as not replicated: a failover could undo it); default 0")
    p.add_argument("--wait-timeout-ms", type=int, default=1000, help="how long each WAIT waits (default 1000)")
    return parser


_NO_CLIENT = {cmd_script, cmd_worker, cmd_top, *ALERT_COMMANDS}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    mq: EchoMQ | None = None
    try:
        if args.run not in _NO_CLIENT:
            mq = EchoMQ.from_url(args.url, actor=args.actor or default_actor())
            warn_if_evicting(mq)
        args.run(mq, args)
        sys.stdout.flush()
        return 0
    except BrokenPipeError:
        # The reader stopped (`| head`): what it wanted was printed. Point stdout at nothing so the
        # interpreter's last flush cannot fail again, and end as a Unix tool does, quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except EmqError as error:
        print(f"emq: {_shown(str(error))}", file=sys.stderr)
        return error.exit_code or 1
    except SystemExit as exit_:
        return int(exit_.code or 0)
    except Exception as error:  # the CLI reports, it does not trace back
        print(f"emq: error: {_shown(str(error))}", file=sys.stderr)
        return 1
    finally:
        if mq is not None:
            mq.close()
