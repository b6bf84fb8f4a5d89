"""A script of another package runs as a move: loaded from PACKAGE/lua/, building on queues' own parts."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from queues import EchoMQ, InvalidInput
from queues.moves import enqueue_by_script
from queues.scripts import script

_packages = itertools.count()

# Writes a pending job with the payload given and notes the id in the caller's own key, in one step.
STAMP = """#!lua
--@include common.lua
--@include stamp_parts.lua
local job_id, payload = ARGV[1], ARGV[2]
if KEYS[6] ~= PREFIX .. 'job:' .. job_id then return redis.error_reply('emq: KEYS[6] is not the job') end
local now = now_ms()
redis.call('HSET', KEYS[6], 'state', 'pending', 'attempts', 0, 'payload', payload)
redis.call('ZADD', KEYS[1], now, job_id)
redis.call('HSET', KEYS[7], job_id, stamp_of(now))
return {'STAMPED', now}
"""


def caller_package(root: Path, lua: dict[str, str]) -> str:
    name = f"caller_package_{next(_packages)}"
    (root / name / "lua").mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    for file, text in lua.items():
        (root / name / "lua" / file).write_text(text)
    return name


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return caller_package(tmp_path, {
        "stamp.lua": STAMP,
        # common.lua (now_ms, PREFIX) is not here: it is found in queues/lua.
        "stamp_parts.lua": "local function stamp_of(ms) return 'stamped at ' .. ms end\n",
    })


def test_a_callers_script_is_expanded_from_its_own_folder_then_from_queues(package: str) -> None:
    source = script(f"{package}:stamp").source

    assert re.search("^--@include", source, re.MULTILINE) is None
    assert "local function now_ms()" in source  # common.lua, from queues/lua
    assert "local function stamp_of(ms)" in source  # its own part
    assert script(f"{package}:stamp").writes


def test_a_job_written_by_a_callers_script_is_an_ordinary_job(mq: EchoMQ, package: str) -> None:
    def parse(reply: list[Any]) -> int:
        return int(reply[1])

    stamped = mq.run(enqueue_by_script(f"{package}:stamp", "mail", "a", ["a", "hello"], parse, own_keys=["stamps"]))

    assert mq.queues() == ["mail"]
    assert mq.redis.hgetall("emq:{mail}:stamps") == {b"a": f"stamped at {stamped}".encode()}
    [job] = mq.claim("mail")
    assert (job.id, job.payload) == ("a", b"hello")
    mq.complete("mail", "a", job.token)
    assert mq.job("mail", "a").state == "done"


def test_a_callers_script_error_is_invalid_input_and_writes_nothing(mq: EchoMQ, package: str) -> None:
    call = enqueue_by_script(f"{package}:stamp", "mail", "a", ["b", "hello"], lambda reply: reply, own_keys=["stamps"])

    with pytest.raises(InvalidInput, match="KEYS\\[6\\] is not the job"):
        mq.run(call)

    assert mq.redis.dbsize() == 0


def test_a_callers_key_may_not_be_one_the_protocol_uses(package: str) -> None:
    with pytest.raises(InvalidInput, match="cannot name a caller's key"):
        enqueue_by_script(f"{package}:stamp", "mail", "a", [], lambda reply: reply, own_keys=["pending"])


@pytest.mark.parametrize("name", ["no_such_package_here:stamp", "a:b:c", "", "../claim"])
def test_a_script_of_no_package_or_a_bad_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError):
        script(name)


def test_the_moves_write_and_the_reads_do_not() -> None:
    from queues.scripts import MOVES, READS

    assert all(script(name).writes for name in MOVES)
    assert not any(script(name).writes for name in READS)
