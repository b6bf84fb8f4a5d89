"""The recipe in queues/operator_moves.py works: a throwaway move added its way runs on every surface.

In a copy of the tree, "requeue" (done → pending, due now) is added exactly as the recipe says: its Lua
file, its row in the protocol table, ``python -m queues.protocol_moves``, its row in the operator
table. Then a test inside the copy drives it through the library (script, history, counters), the
``emq`` CLI, the job page's button, the JSON API and the audit log, and Django finds no migration to
make.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from queues.moves import operator_move
from queues.operator_moves import JOB_MOVES, OperatorMove
from queues.protocol_moves import BY_NAME as PROTOCOL_ROWS

ROOT = Path(__file__).resolve().parents[2]

RERUN_LUA = """#!lua
--@include common.lua
-- requeue (operator): a done job runs again: done -> pending, due now.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state (must be 'done'), 3 expected attempts ('' = any), 4 actor
-- Reply: {'OK', 'pending', attempts}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or expected state.
local unknown_move = check_moves('requeue')
if unknown_move then return unknown_move end
--@include operator_args.lua
local refused = check_types(1, 3, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {done = true}, expect_state, expect_attempts)
if refusal then return refusal end

local now = now_ms()
redis.call('ZREM', KEYS[3], id)
redis.call('ZADD', KEYS[1], now, id)
redis.call('HSET', KEYS[6], 'state', 'pending')
emit(KEYS[5], 'requeue', id, 'done', 'pending', attempts, ARGV[4] or '', now, KEYS[6])
return {'OK', 'pending', attempts}
"""

PROTOCOL_ROW = '    ProtocolMove("requeue", ("done",), (Target("pending", "q"),)),\n'
OPERATOR_ROW = ('    OperatorMove("requeue", "job", "requeue", "Requeue", "requeue", "done → pending, due now",\n'
                '                 "run a done job again",\n'
                '                 ("done",)),\n')

END_TO_END = '''
from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard.actions.models import AuditEntry
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ, reads
from queues.cli import main
from tests.support.jobs import done_jobs

pytestmark = pytest.mark.django_db(transaction=True)


def test_requeue_moves_a_done_job_on_every_surface(operator_client: Client, operator, console_mq: EchoMQ,
                                                  redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    first, second, third = done_jobs(console_mq, "mail", 3)

    # The library: the script, its history entry and its counter.
    assert console_mq.operator_move("requeue", "mail", first).describe() == (
        "requeue: job " + first + " is now pending (attempts 1)")
    job = console_mq.job("mail", first)
    assert job.state == "pending"
    assert [(e.move, e.source, e.target) for e in console_mq.job_events("mail", first)][0] == ("requeue", "done", "pending")
    assert console_mq.run(reads.counts("mail"))["requeue"] == 1

    # The CLI.
    assert main(["--url", redis_url, "requeue", "mail", second]) == 0
    assert console_mq.job("mail", second).state == "pending"

    # The job page offers the button, and pressing it moves the job and writes the audit log.
    page = operator_client.get(f"/job/?q=mail&id={third}").content.decode()
    assert 'name="move" value="requeue"' in page
    response = operator_client.post("/actions/job/", {"q": "mail", "id": third, "move": "requeue", "state": "done",
                                                      "attempts": "1"}, headers={"HX-Request": "true"})
    assert response.status_code == 200, response.content
    assert console_mq.job("mail", third).state == "pending"
    assert AuditEntry.objects.get(action="requeue").outcome == "moved"
    assert "run a done job again" in operator_client.get("/audit/").content.decode()

    # The API, after the job is done again.
    [claimed] = console_mq.claim("mail", count=1)
    console_mq.complete("mail", claimed.id, claimed.token)
    token = api_token_create(user=operator, name="api")
    answer = Client().post("/api/job/actions", json.dumps({"queue": "mail", "id": claimed.id, "move": "requeue",
                                                           "expect_state": "done"}),
                           content_type="application/json", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.content
    assert console_mq.job("mail", claimed.id).state == "pending"
    assert console_mq.run(reads.counts("mail"))["requeue"] == 4
'''


def _copy_tree(target: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True)
    files = listed.stdout.split(b"\0")
    for name in (f.decode() for f in files if f):
        source = ROOT / name
        if source.is_symlink():
            # The app's templates and static files are links to the top-level folders: keep them links.
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).symlink_to(os.readlink(source))
        elif source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _insert_after(path: Path, anchor: str, row: str) -> None:
    text = path.read_text()
    assert anchor in text, f"{path.name} no longer has {anchor!r}: update the recipe and this test"
    path.write_text(text.replace(anchor, anchor + row, 1))


def _run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=600)


def test_a_move_added_as_the_recipe_says_works_on_every_surface_with_no_migration(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _copy_tree(tree)
    # 1. The Lua file.
    (tree / "queues" / "lua" / "requeue.lua").write_text(RERUN_LUA)
    # 2. The protocol row, then the generated Lua table.
    _insert_after(tree / "queues" / "protocol_moves.py", "PROTOCOL_MOVES: Final[tuple[ProtocolMove, ...]] = (\n",
                  PROTOCOL_ROW)
    generated = _run(tree, "-m", "queues.protocol_moves")
    assert generated.returncode == 0, generated.stderr
    assert "if move == 'requeue' and to == 'pending' then return 'q'," in (tree / "queues" / "lua" / "moves.lua").read_text()
    # 3. The operator row.
    _insert_after(tree / "queues" / "operator_moves.py", "OPERATOR_MOVES: Final[tuple[OperatorMove, ...]] = (\n",
                  OPERATOR_ROW)
    # 4. A test, run in the copy.
    (tree / "tests" / "dashboard" / "test_requeue_end_to_end.py").write_text(END_TO_END)

    migrations = _run(tree, "manage.py", "makemigrations", "--check", "--dry-run")
    run = _run(tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/dashboard/test_requeue_end_to_end.py")

    assert migrations.returncode == 0, migrations.stdout + migrations.stderr
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-4000:] + run.stderr[-2000:]


# A sample value for each argument a move may take (queues.moves.MOVE_ARGUMENTS), so that its call can be built.
SAMPLE = {"payload": "x", "max_attempts": 2, "retry": False, "version": 1, "new_id": "b", "new_payload": "y",
          "delay_ms": 0}
# A command that writes, as a script sends it, or a shared function that writes (common.lua and its includes).
WRITES = re.compile(r"redis\.call\('(?:HSET|HDEL|ZADD|ZREM|DEL|XADD|HINCRBY|PEXPIRE|SET)'"
                    r"|\b(?:keep_version|set_payload|recover_one|failure_leave|failure_enter|keep_last_error|emit)\(")


@pytest.mark.parametrize("move", JOB_MOVES, ids=lambda move: move.name)
def test_every_move_on_one_job_follows_the_recipe_as_written(move: OperatorMove) -> None:
    source = (ROOT / "queues" / "lua" / f"{move.script}.lua").read_text()
    header = source[:source.index("local unknown_move")]
    # Step 1: promote's shape. A header naming KEYS, ARGV, its replies and errors; the move named before anything
    # else runs, the shared arguments read next; the move emitted after its last check (no write before it).
    assert source.startswith("#!lua\n--@include common.lua\n")
    assert all(word in header for word in ("-- KEYS:", "-- ARGV:", "-- Reply:", "-- Errors (nothing written)"))
    assert source.count(f"check_moves('{move.name}')") == 1
    assert source.index(f"check_moves('{move.name}')") < source.index("--@include operator_args.lua")
    assert f"emit(KEYS[5], '{move.name}'" in source
    returns = [m.start() for m in re.finditer(r"\breturn ", source)]
    first_write = WRITES.search(source)
    assert first_write is not None and returns[-2] < first_write.start() < returns[-1], "a write before a check"
    # The ARGV the header lists are those the library sends: id, state, attempts, [extra,] arguments, then the actor.
    call = operator_move(move.name, "q", "a", arguments={name: SAMPLE[name] for name in move.arguments})
    argv = header[header.index("-- ARGV:"):header.index("-- Reply:")]
    assert re.search(rf"\b{len(call.args)} actor\b", argv), argv
    assert len(call.keys) == 6 + ("new_id" in move.arguments)
    # Step 2: its row in the protocol table, with the states it applies to.
    assert PROTOCOL_ROWS[move.name].sources == move.applies_to
