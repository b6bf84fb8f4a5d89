"""The console's buttons, confirmations, API and audit labels come from the table of operator moves."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.actions.models import audit_actions
from dashboard.actions.previews import job_needs_confirmation, selection_needs_confirmation
from dashboard.api.schemas import JobActionIn, QueueActionIn, SelectionActionIn
from dashboard.templatetags.console import move_buttons
from queues import EchoMQ, QueueKeys
from queues.operator_moves import BATCH_MOVES, BUTTON_MOVE_NAMES, OPERATOR_MOVES


def _buttons(html: str, form_class: str) -> list[str]:
    form = html[html.index(f'class="{form_class}'):]
    form = form[:form.index("</form>")]
    return re.findall(r'name="move" value="([a-z_]+)"', form)


@pytest.mark.parametrize("state, delayed, lapsed, shown", [
    ("failed", False, False, ["retry", "delete"]),
    ("pending", False, False, ["cancel", "delete"]),
    ("pending", True, False, ["promote", "cancel", "delete"]),
    ("active", False, True, ["recover", "cancel", "delete"]),
    ("done", False, False, ["delete", "rerun"]),
    ("odd", False, False, ["delete"]),  # odd data stays repairable: delete takes any state shown
])
def test_a_job_is_offered_the_moves_the_table_offers_for_its_state(state: str, delayed: bool, lapsed: bool,
                                                                    shown: list[str]) -> None:
    assert [b.move for b in move_buttons(state, delayed, lapsed)] == shown


def test_delete_is_marked_as_asking_and_recover_of_a_live_lease_is_quiet() -> None:
    buttons = {b.move: b for b in move_buttons("active", lapsed=False)}

    assert buttons["delete"].css_class == "danger" and buttons["delete"].title.endswith("asks to confirm")
    assert buttons["recover"].css_class == "quiet"
    assert {b.move: b for b in move_buttons("active", lapsed=True)}["recover"].css_class == ""


def test_the_queue_page_renders_the_tables_buttons_for_each_row_and_the_ticked_ones(operator_client: Client,
                                                                                  console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "later", job_id="delayed-job", delay_ms=3_600_000)

    html = operator_client.get("/queue/?q=mail&state=pending").content.decode()

    assert _buttons(html, "job-actions") == ["promote", "cancel", "delete"]
    assert _buttons(html, "selection-bar") == ["promote", "cancel", "delete"]


def test_the_job_page_renders_the_tables_buttons(operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    [job] = console_mq.claim("mail")
    console_mq.redis.zadd(QueueKeys("mail").active, {"a": 1000})

    html = operator_client.get("/job/?q=mail&id=a").content.decode()

    assert _buttons(html, "job-actions") == ["recover", "cancel", "delete"]
    assert 'value="recover" title="a lapsed lease → pending" data-permission="recover_leases">Recover</button>' in html


@pytest.mark.parametrize("move, state, asks", [
    ("delete", "done", True), ("delete", "pending", True), ("cancel", "active", True), ("cancel", "pending", False),
    ("retry", "failed", False), ("explode", "failed", False),
])
def test_one_job_asks_first_where_the_table_says(move: str, state: str, asks: bool) -> None:
    assert job_needs_confirmation(move, state) is asks


def test_ticked_jobs_ask_first_for_a_move_that_ever_asks_or_when_many() -> None:
    assert selection_needs_confirmation("cancel", 1) and selection_needs_confirmation("delete", 1)
    assert not selection_needs_confirmation("retry", 1) and selection_needs_confirmation("retry", 21)


def test_every_move_is_an_audit_action_labelled_as_the_table_says() -> None:
    assert {move.name: move.label for move in OPERATOR_MOVES}.items() <= dict(audit_actions()).items()


def test_the_api_takes_the_moves_of_the_table() -> None:
    def enum(schema: type, field: str) -> list[str]:
        return schema.model_json_schema()["properties"][field]["enum"]  # type: ignore[attr-defined]

    assert enum(JobActionIn, "move") == enum(SelectionActionIn, "move") == list(BUTTON_MOVE_NAMES)
    assert enum(QueueActionIn, "action") == list(BATCH_MOVES)
