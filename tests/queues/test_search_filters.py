"""A search filter is one row of queues.search.FILTERS: every surface offers the row, and its matcher exists."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils.html import escape

from dashboard.search.requests import FORM_FIELDS, SearchRequest
from queues.cli import build_parser
from queues.search import FILTERS, Query, SearchFilter

ROOT = Path(__file__).resolve().parents[2]
TYPED = {"id_prefix": "ord-", "payload": "ACME", "field": "user.id=42", "error": "Timeout", "worker": "host-1",
         "group": "0123456789ab", "release": "v1.5.0", "host": "host-1", "enqueued_after": "1000",
         "enqueued_before": "2000", "finished_after": "3000",
         "finished_before": "4000"}
# Every field of the console's search form: the short form's and the search page's.
FORM = Template("{% load search_tags %}{% filter_fields form short=True %}{% filter_fields form short=False %}")


def test_every_filter_is_an_attribute_of_a_query_and_every_query_attribute_a_filter() -> None:
    attributes = {f.name for f in dataclasses.fields(Query)} - {"state", "order"}

    assert attributes == {f.attribute for f in FILTERS}


@pytest.mark.parametrize("row", [f for f in FILTERS if f.lua], ids=lambda f: f.name)
def test_search_lua_reads_every_filter_under_its_name(row: SearchFilter) -> None:
    assert f"name == '{row.lua}'" in (ROOT / "queues" / "lua" / "search.lua").read_text()


@pytest.mark.parametrize("row", FILTERS, ids=lambda f: f.name)
def test_emq_search_takes_every_filter_as_its_option(row: SearchFilter) -> None:
    args = build_parser().parse_args(["search", "q", "--state", "failed", row.flag, TYPED[row.name]])

    assert getattr(args, row.name) == TYPED[row.name]


@pytest.mark.parametrize("row", FILTERS, ids=lambda f: f.name)
def test_the_console_form_has_a_field_for_every_filter_holding_what_was_typed(row: SearchFilter) -> None:
    html = FORM.render(Context({"form": TYPED}))

    assert row.name in FORM_FIELDS
    assert html.count(f'name="{row.name}"') == 1
    assert f'<label>{escape(row.label)} <input name="{row.name}" value="{escape(TYPED[row.name])}"' in html


def test_the_short_form_has_the_filters_marked_for_it_and_a_failure_group_only_when_a_link_gave_one() -> None:
    short = Template("{% load search_tags %}{% filter_fields form short=True %}").render(Context({"form": None}))
    html = FORM.render(Context({"form": {}}))

    assert re.findall(r'name="(\w+)"', short) == [f.name for f in FILTERS if f.short_form]
    assert 'name="group"' not in html and 'name="worker"' in html


def test_a_query_typed_with_every_filter_reads_back_from_the_form_and_the_audit_row_unchanged() -> None:
    query = Query.parse(state="failed", now_ms=10_000, **TYPED)
    again = SearchRequest.parse({**SearchRequest(query, "mail").params()}, now_ms=10_000).query

    assert again == query == Query.from_dict(query.as_dict())
    assert query.describe().count(" and ") == len(FILTERS) - 1
    assert dict(zip(query.filter_args()[::2], query.filter_args()[1::2], strict=True)).keys() == \
        {f.lua for f in FILTERS if f.lua}


def test_a_filter_name_no_row_has_is_a_mistake_not_a_silent_match_of_everything() -> None:
    with pytest.raises(TypeError, match="no search filter is called payloda"):
        Query.parse(state="failed", payloda="x")
