"""Masked payload values: the paths a queue keeps, and the masking of whole payloads and of their first bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from queues import EchoMQ, InvalidInput, QueueKeys
from queues.redaction import MASK, WITHHELD, Masker, config, config_set, parse_masked_path, parse_masked_paths
from queues.search import FieldFilter
from tests.support.keyspace import keyspace_dump

SECRET = "s3cr3t-PLANTED-42"


def test_paths_are_set_read_and_removed_with_who_set_them(mq: EchoMQ) -> None:
    assert not mq.run(config("mail")).is_set

    change = mq.run(config_set("mail", "card.number\n\n $..ssn ", mask_all=True, actor="op"))

    found = mq.run(config("mail"))
    assert change.previous_paths == "" and not change.previous_mask_all
    assert [p.text for p in found.paths] == ["card.number", "$..ssn"] and found.mask_all and found.set_by == "op"
    assert mq.run(config_set("mail", "", mask_all=False)).previous_mask_all
    assert not mq.run(config("mail")).is_set and mq.redis.exists(QueueKeys("mail").redaction) == 0
    with pytest.raises(InvalidInput, match="no masked paths to remove"):
        mq.run(config_set("mail", "", mask_all=False))


def test_a_path_that_does_not_read_is_refused_in_words_with_nothing_written(mq: EchoMQ) -> None:
    before = keyspace_dump(mq.redis)

    for text in ("card..number", "$", "a[", "\n".join(f"k{n}" for n in range(33))):
        with pytest.raises(InvalidInput):
            mq.run(config_set("mail", text, mask_all=False))

    assert keyspace_dump(mq.redis) == before


def test_a_key_another_writer_left_masks_for_everyone_and_says_so(mq: EchoMQ) -> None:
    mq.redis.set(QueueKeys("mail").redaction, "x")

    found = mq.run(config("mail"))

    assert found.mask_all and "holds a string" in found.odd
    assert found.masker().strict


def test_default_names_are_masked_at_any_depth_whatever_their_case_and_paths_where_they_point() -> None:
    masker = Masker(parse_masked_paths("card.number\n$..ssn\nitems[*].code"))
    payload = {"Password": SECRET, "card": {"number": SECRET, "exp": "12/29"}, "a": {"b": {"ssn": SECRET}},
               "items": [{"code": SECRET}], "nested": {"TOKEN": {"deep": SECRET}}, "keep": "visible"}

    shown = json.loads(masker.payload(json.dumps(payload).encode()))

    assert SECRET not in json.dumps(shown)
    assert shown["card"] == {"number": MASK, "exp": "12/29"} and shown["nested"] == {"TOKEN": MASK}
    assert shown["keep"] == "visible"


def test_a_payload_with_nothing_to_mask_is_shown_byte_for_byte() -> None:
    payload = b'{ "to" : "ann",  "n": 1.50 }'

    assert Masker().payload(payload) == payload
    assert Masker().head(payload[:12], len(payload)) == payload[:12]


def test_text_that_is_not_json_is_withheld_only_where_the_queue_masks_paths_of_its_own() -> None:
    assert Masker().payload(b"password=" + SECRET.encode()) == b"password=" + SECRET.encode()
    assert Masker(strict=True).payload(b"plain text") == WITHHELD.encode()
    # Starts like JSON but is not: where its values lie cannot be told.
    assert Masker().payload(b'{"password": "' + SECRET.encode() + b'" oops') == WITHHELD.encode()
    assert Masker().payload(b"[" * 100 + b"]" * 100) == WITHHELD.encode()


def test_a_field_inside_a_masked_value_cannot_be_searched_by() -> None:
    masker = Masker(parse_masked_paths("card"))

    assert "masked for you" in masker.field_filter_problem(FieldFilter.parse("card.number=1"))
    assert "masked for you" in masker.field_filter_problem(FieldFilter.parse("user.password=x"))
    assert masker.field_filter_problem(FieldFilter.parse("user.id=1")) == ""


def test_masked_path_spellings() -> None:
    assert parse_masked_path("$.User.SSN").segments == ("user", "ssn")
    assert parse_masked_path("$..ssn").anywhere and parse_masked_path("items[*].code").segments == ("items", "*", "code")
    assert parse_masked_path("rows[2]").segments == ("rows", 2)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "card", "number", "é"]), children, max_size=3),
    max_leaves=12)


@st.composite
def planted(draw: st.DrawFn) -> Any:
    """A JSON document with the secret planted under a default name or a configured path, somewhere."""
    document = draw(st.dictionaries(st.sampled_from(["x", "y", "list"]), json_values, max_size=3))
    where = draw(st.sampled_from(["top", "nested", "path", "list"]))
    if where == "top":
        document["Authorization"] = SECRET
    elif where == "nested":
        document["x"] = {"inner": [1, {"secret": {"v": SECRET}}]}
    elif where == "path":
        document["card"] = {"number": SECRET}
    else:
        document["list"] = [{"token": SECRET}, "after"]
    return document


@settings(max_examples=300, deadline=None)
@given(planted(), st.integers(min_value=0, max_value=400), st.booleans())
def test_no_cut_of_a_payload_shows_a_masked_value(document: Any, cut: int, pretty: bool) -> None:
    payload = json.dumps(document, indent=2 if pretty else None, ensure_ascii=False).encode()
    masker = Masker(parse_masked_paths("card.number"))

    head = masker.head(payload[:cut], len(payload))

    assert SECRET.encode() not in masker.payload(payload)
    # Not even a part of it long enough to tell: the first 6 bytes of the secret.
    assert SECRET[:6].encode() not in head
