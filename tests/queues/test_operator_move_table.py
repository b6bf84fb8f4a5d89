"""One table of operator moves: the library, the CLI and the search's bulk moves read it."""

from __future__ import annotations

import argparse

import pytest

from queues import EchoMQ, InvalidInput
from queues.cli import build_parser
from queues.moves import operator_move
from queues.operator_moves import JOB_MOVES, OPERATOR_MOVES, job_move
from queues.scripts import MOVES, script
from queues.search import MATCH_MOVES


@pytest.mark.parametrize("move", OPERATOR_MOVES, ids=lambda move: move.name)
def test_every_move_of_the_table_sends_a_move_script(move: object) -> None:
    name = move.script  # type: ignore[attr-defined]
    assert name in MOVES and script(name).writes


# What a move with arguments of its own is given here (the library's names, then emq's options).
SAMPLE_ARGUMENTS = {"payload": ("x", ["--payload", "x"]), "version": (1, ["--version", "1"]), "new_id": ("b", ["--new-id", "b"])}


def _sample(move: object) -> dict[str, object]:
    return {name: SAMPLE_ARGUMENTS[name][0] for name in move.arguments if name in SAMPLE_ARGUMENTS}  # type: ignore[attr-defined]


@pytest.mark.parametrize("move", JOB_MOVES, ids=lambda move: move.name)
def test_a_move_on_one_job_expects_by_default_the_first_state_it_applies_to(move: object) -> None:
    call = operator_move(move.name, "q", "a", arguments=_sample(move))  # type: ignore[attr-defined]

    assert call.script == move.script  # type: ignore[attr-defined]
    assert call.args[1] == move.applies_to[0]  # type: ignore[attr-defined]


@pytest.mark.parametrize("move", JOB_MOVES, ids=lambda move: move.name)
def test_every_move_on_one_job_is_an_emq_command_with_the_words_you_saw(move: object) -> None:
    options = [o for name in move.arguments if name in SAMPLE_ARGUMENTS for o in SAMPLE_ARGUMENTS[name][1]]  # type: ignore[attr-defined]
    args = build_parser().parse_args([move.name, "q", "a", "--expect-attempts", "1", *options])  # type: ignore[attr-defined]

    assert (args.queue, args.id, args.expect_state, args.expect_attempts) == ("q", "a", move.starts_from, "1")  # type: ignore[attr-defined]


def test_the_cli_help_says_what_each_move_does() -> None:
    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {choice.dest: choice.help for choice in commands._choices_actions}

    assert all(helps[move.name] for move in JOB_MOVES)
    assert helps["retry"] == job_move("retry").summary


def test_a_search_offers_every_move_on_one_job_but_recover_and_those_made_from_a_form() -> None:
    assert MATCH_MOVES == {move.name: move.applies_to for move in JOB_MOVES
                           if move.name != "recover" and move.on_button}


def test_a_move_result_says_what_happened_in_the_tables_words(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a", delay_ms=60_000)

    assert mq.promote("q", "a").describe() == "promoted: job a is now pending (attempts 0)"


@pytest.mark.parametrize("name", ["purge_done", "pause", "explode", "", None])
def test_only_a_move_on_one_job_is_one(name: object) -> None:
    with pytest.raises(InvalidInput, match="unknown move"):
        operator_move(name, "q", "a")  # type: ignore[arg-type]
