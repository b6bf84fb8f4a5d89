"""The protocol's move table is the only list of moves: every other list is generated from it or agrees with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from dashboard.monitoring.exposition import OUTCOMES
from queues import EchoMQ, QueueKeys
from queues.operator_moves import JOB_MOVES, OPERATOR_MOVES
from queues.protocol_moves import BY_NAME, COUNT_FIELDS, HISTORY_CODES, MOVES_LUA, PROTOCOL_MOVES, moves_lua
from queues.reads import parse_history
from queues.scripts import MOVES, script

ROOT = Path(__file__).resolve().parents[2]
EMIT = re.compile(r"\bemit\([^,()]+, '(\w+)'")
DECLARED = re.compile(r"^local unknown_move = check_moves\(([^)]*)\)\nif unknown_move then return unknown_move end$",
                      re.MULTILINE)


def test_the_moves_lua_file_is_what_the_table_generates() -> None:
    assert MOVES_LUA.read_text() == moves_lua(), "run: python -m queues.protocol_moves"


def test_the_history_codes_are_one_letter_each_and_name_one_move_and_state() -> None:
    codes = [target.code for move in PROTOCOL_MOVES for target in move.targets if target.code]

    assert all(re.fullmatch(r"[A-Za-z]", code) for code in codes)
    assert len(codes) == len(set(codes)) == len(HISTORY_CODES)


@pytest.mark.parametrize("name", [m for m in MOVES if EMIT.search(script(m).source)])
def test_a_script_declares_every_move_it_records_at_its_top_and_the_table_knows_each(name: str) -> None:
    source = script(name).source
    text = (ROOT / "queues" / "lua" / f"{name}.lua").read_text()
    declared = DECLARED.findall(text)
    emitted = set(EMIT.findall(source))
    # Only the header, its includes and blank lines come before the check: no read, no write, no argument.
    before = text[:text.index("local unknown_move = check_moves(")].splitlines()

    assert len(declared) == 1, f"{name}.lua: one check_moves(...) line before its first write"
    assert all(line.startswith(("#!", "--")) or not line.strip() for line in before), \
        f"{name}.lua: check_moves(...) is its first statement"
    names = set(re.findall(r"'(\w+)'", declared[0]))
    assert names == emitted
    assert names <= set(BY_NAME)


def test_every_move_on_one_job_has_its_row_with_the_states_it_applies_to() -> None:
    for move in JOB_MOVES:
        assert BY_NAME[move.name].sources == move.applies_to, move.name


def test_every_queue_wide_move_names_the_states_its_recorded_move_starts_from() -> None:
    recorded = {"recover_all": "recover", "retry_all": "retry", "purge_done": "purge", "purge_failed": "purge"}
    for move in OPERATOR_MOVES:
        if move.scope == "queue" and move.applies_to:
            assert set(move.applies_to) <= set(BY_NAME[recorded[move.name]].sources), move.name


def test_the_audit_log_can_hold_every_operator_move_name() -> None:
    assert all(len(move.name) <= 16 and len(move.label) <= 100 for move in OPERATOR_MOVES)


def test_the_metrics_count_only_fields_the_moves_write() -> None:
    assert {field for fields in OUTCOMES.values() for field in fields} <= set(COUNT_FIELDS)


def test_protocol_md_lists_the_history_codes_of_the_table() -> None:
    text = (ROOT / "PROTOCOL.md").read_text()
    section = text[text.index("## 9. A job's history"):text.index("## 9a.")]
    listed = {code: (move, to) for code, move, to in re.findall(r"`(\w)` \| (\w+)(?: \([^)]*\))? → (\w+)", section)}

    assert listed == HISTORY_CODES


def test_protocol_md_lists_the_counter_fields_of_the_moves_that_lead_to_more_than_one_state() -> None:
    text = (ROOT / "PROTOCOL.md").read_text()
    split = [f for f in COUNT_FIELDS if ":" in f]

    assert all(f"`{field}`" in text for field in split)


def test_each_history_code_reads_back_as_its_move_and_state() -> None:
    for code, (move, to) in HISTORY_CODES.items():
        [event] = parse_history("a", f"{code}1000".encode())
        assert (event.move, event.target) == (move, to)


def test_a_script_recording_a_move_the_table_does_not_know_is_refused_before_its_first_write(mq: EchoMQ) -> None:
    # promote, as if someone copied it for a new move and forgot the table's row (the table's own text,
    # included in the script, stays as it is).
    table = moves_lua().rstrip("\n")
    head, tail = script("promote").source.split(table)
    source = head.replace("'promote'", "'requeue'") + table + tail.replace("'promote'", "'requeue'")
    client: redis.Redis = mq.redis  # type: ignore[assignment]
    mq.enqueue("q", "x", job_id="a", delay_ms=60_000)
    keys = QueueKeys("q")
    before = {key: client.dump(key) for key in client.scan_iter()}

    with pytest.raises(redis.exceptions.ResponseError, match="requeue is not in the protocol table"):
        client.eval(source, 6, *keys.script_keys("a"), "a", "pending", "", "op")

    assert {key: client.dump(key) for key in client.scan_iter()} == before
