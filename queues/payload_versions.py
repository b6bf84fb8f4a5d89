"""A job's kept payload versions, and the JSON Schema a queue's edits are checked against.

edit and restore (``queues/lua/edit.lua``, ``restore.lua``) keep the payload they replace in the job's
own hash (PROTOCOL.md, section 2a): at most :data:`VERSIONS_MAX` versions and :data:`VERSIONS_MAX_BYTES`
bytes of them per job, the oldest dropped first. The schema lives in ``emq:{Q}:schema`` (the queue's
slot), set by ``schema_set``; an edit's payload is checked against it here, before the script runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from jsonschema import Draft202012Validator, SchemaError, validators

from .errors import InvalidInput
from .keys import QueueKeys, validate_job_id
from .moves import Call, _int, _text, digits, refused_whole

# The bounds the scripts keep (payload_versions.lua); a test holds them equal.
VERSIONS_MAX: Final = 8
VERSIONS_MAX_BYTES: Final = 1024 * 1024
SCHEMA_MAX_BYTES: Final = 65536
# The longest version a read returns whole (a page diffs at most this much).
VERSION_READ_MAX: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class PayloadVersion:
    """One kept version: its number, when it was replaced (ms), its length, by which move and whom."""

    seq: int
    replaced_ms: int
    length: int
    move: str
    actor: str


@dataclass(frozen=True, slots=True)
class Versions:
    now_ms: int
    exists: bool
    versions: list[PayloadVersion]
    # One version's bytes when asked for (None: not asked, or not kept); ``cut`` when longer than asked.
    version: bytes | None = None
    version_length: int = 0
    cut: bool = False
    # Set when the index is not one the scripts wrote (shown, never acted on).
    odd: str = ""

    def get(self, seq: int) -> PayloadVersion | None:
        return next((v for v in self.versions if v.seq == seq), None)


def _unescape(text: str) -> str:
    """A field as the scripts escape it (escape_field: control bytes and '%' as %XX), back to its text."""
    return re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), text)


def parse_index(text: str) -> tuple[list[PayloadVersion], str]:
    """The index field as versions, oldest first, and what is odd about it ('' when nothing)."""
    found: list[PayloadVersion] = []
    for line in text.split("\n") if text else []:
        parts = line.split("\t")
        seq, ts, length = (digits(p) for p in parts[:3]) if len(parts) == 5 else (None, None, None)
        if seq is None or ts is None or length is None:
            return found, f"the versions index holds a line the scripts do not write: {line[:80]!r}"
        found.append(PayloadVersion(seq, ts, length, parts[3], _unescape(parts[4])))
    return found, ""


def versions(queue: str, job_id: str, *, version: int | None = None,
             max_bytes: int = VERSION_READ_MAX) -> Call[Versions]:
    """A job's kept versions (the index), and the bytes of ``version`` when given, whole up to ``max_bytes``."""
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)
    seq = "" if version is None else _int(version, "version", 1)
    limit = _int(max_bytes, "max bytes", 0, VERSION_READ_MAX)

    def parse(reply: list[Any]) -> Versions:
        refused_whole("versions", reply, job_id)
        now, kind, index, index_length, length, data = reply
        found, odd = parse_index(_text(index))
        if int(index_length) > len(index):
            odd = f"the versions index is {int(index_length)} bytes, longer than the scripts write"
        listed = version is not None and any(v.seq == version for v in found)
        asked = bytes(data) if listed else None
        return Versions(int(now), _text(kind) == "hash", found, asked, int(length),
                        asked is not None and len(asked) < int(length), odd)

    return Call("versions", keys.script_keys(job_id), [job_id, seq, limit], parse)


@dataclass(frozen=True, slots=True)
class QueueSchema:
    """The JSON Schema a queue's edits are checked against ('' when none is set)."""

    queue: str
    text: str
    set_by: str
    set_ms: int | None
    odd: str = ""

    @property
    def is_set(self) -> bool:
        return bool(self.text)


def schema_key(queue: str) -> str:
    return QueueKeys(queue).prefix + "schema"


def schema(queue: str) -> Call[QueueSchema]:
    name = QueueKeys(queue).queue

    def parse(reply: list[Any]) -> QueueSchema:
        kind, text, set_by, set_ms = (_text(v) for v in reply)
        odd = f"{schema_key(name)} holds a {kind}, not a hash: no schema is applied" if kind not in ("hash", "none") \
            else ""
        return QueueSchema(name, text, set_by, digits(set_ms), odd)

    return Call("schema", [schema_key(name)], [], parse)


def schema_problem(text: str) -> str:
    """Why ``text`` is not a JSON Schema an edit can be checked against, in words ('' when it is one)."""
    if len(text.encode()) > SCHEMA_MAX_BYTES:
        return f"a schema must be at most {SCHEMA_MAX_BYTES} bytes"
    try:
        document = json.loads(text)
    except ValueError as error:
        return f"the schema is not JSON: {error}"
    if not isinstance(document, dict):
        return "a schema must be a JSON object"
    try:
        validators.validator_for(document, default=Draft202012Validator).check_schema(document)
    except SchemaError as error:
        return f"the schema is not a valid JSON Schema: {error.message}"
    return ""


@dataclass(frozen=True, slots=True)
class SchemaChange:
    queue: str
    previous: str


def schema_set(queue: str, text: str, *, actor: str = "") -> Call[SchemaChange]:
    """Sets the queue's schema (``text`` must be a valid JSON Schema), or removes it with ``''``."""
    name = QueueKeys(queue).queue
    if not isinstance(text, str):
        raise InvalidInput("a schema is JSON text")
    text = text.strip()
    problem = schema_problem(text) if text else ""
    if problem:
        raise InvalidInput(problem)

    def parse(reply: list[Any]) -> SchemaChange:
        if _text(reply[0]) == "REFUSED" and _text(reply[1]) == "missing":
            raise InvalidInput(f"{name} has no schema to remove")
        refused_whole("schema_set", reply)
        return SchemaChange(name, _text(reply[1]))

    return Call("schema_set", [schema_key(name)], [text, actor], parse)


def payload_problems(schema_text: str, payload: bytes, *, limit: int = 10) -> list[str]:
    """Why ``payload`` does not satisfy the schema, each in words with where in the payload; [] when it does."""
    if not schema_text:
        return []
    broken = schema_problem(schema_text)
    if broken:
        # Written by another writer than schema_set: no edit passes until it is fixed or removed.
        return [f"the queue's schema cannot be used ({broken}): fix or remove it first"]
    document = json.loads(schema_text)
    try:
        value = json.loads(payload)
    except ValueError as not_json:
        return [f"the payload is not JSON, which the queue's schema asks for: {not_json}"]
    checker = validators.validator_for(document, default=Draft202012Validator)(document)
    found = sorted(checker.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{_where(list(error.absolute_path))}: {error.message}" for error in found[:limit]]


def _where(path: list[object]) -> str:
    """Where in the payload, as a reader writes it: ``to``, ``items[2].name``; the whole payload when empty."""
    if not path:
        return "the payload"
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
