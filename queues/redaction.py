"""Masked payload values: which JSON paths a queue's payloads show masked, and the masking itself.

A queue's own paths (and whether they are masked for everyone, operators too) live in
``emq:{Q}:redaction`` (the queue's slot), set by ``redaction_set``. Beside them, every queue masks the
values of the keys :data:`DEFAULT_NAMES` at any depth. Who may see masked values is the caller's to decide;
this module only masks, in pure Python, what a reader who may not see them is shown:

- a JSON payload: the value at each masked key or path is :data:`MASK` (a whole object or array under
  it too); a payload with nothing to mask is shown byte for byte;
- the first bytes of a payload (a preview): the same, read as the start of a JSON document, so a value
  the cut falls inside of is masked like a whole one;
- anything else: what cannot be read as JSON is shown as is on a queue without paths of its own (the
  default names are JSON keys: plain text has none), and withheld (:data:`WITHHELD`) on a queue with
  paths of its own or masked for everyone, and always when it starts like JSON (``{`` or ``[``) but is
  not, or is nested deeper than :data:`MAX_DEPTH`, since where its values lie cannot be told.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Final

from .errors import InvalidInput
from .keys import QueueKeys
from .moves import Call, _text, digits, refused_whole
from .reads import JobRow, JobView
from .search import FieldFilter, Match, parse_path

MASK: Final = "••• masked"
WITHHELD: Final = "••• withheld: this payload is not JSON whose masked values could be found, so it is not shown"
# Masked on every queue, at any depth, whatever the case of the key.
DEFAULT_NAMES: Final = frozenset({"password", "passwd", "token", "secret", "authorization", "api_key", "apikey",
                                  "access_token", "refresh_token", "client_secret", "private_key"})
# As the scripts keep them (redaction_set.lua).
PATHS_MAX_BYTES: Final = 4096
MAX_PATHS: Final = 32
# Deeper JSON is withheld, not walked.
MAX_DEPTH: Final = 64

Segment = str | int


@dataclass(frozen=True, slots=True)
class MaskedPath:
    """One configured path: keys (lowercase, ``*`` for any key or index) and indexes from the payload's root,
    or, ``anywhere``, ending where they end at any depth."""

    text: str
    segments: tuple[Segment, ...]
    anywhere: bool = False

    def matches(self, path: tuple[Segment, ...]) -> bool:
        if len(path) < len(self.segments) or (not self.anywhere and len(path) != len(self.segments)):
            return False
        tail = path[len(path) - len(self.segments):]
        return all(_segment_matches(want, got) for want, got in zip(self.segments, tail))


def _segment_matches(want: Segment, got: Segment) -> bool:
    if want == "*":
        return True
    if isinstance(want, int):
        return isinstance(got, int) and want == got
    return isinstance(got, str) and want == got.lower()


def parse_masked_path(text: str) -> MaskedPath:
    """``card.number``, ``$.user.ssn``, ``items[*].token``, ``$..ssn`` (``..``: at any depth)."""
    source = text.strip()
    anywhere = source.startswith(("$..", ".."))
    body = source[3:] if source.startswith("$..") else source[2:] if anywhere else \
        source[2:] if source.startswith("$.") else source
    body = body.replace("[*]", ".*")
    body = body[1:] if body.startswith(".*") else body
    if not body or body == "$":
        raise InvalidInput(f"{text!r} names no field: write a path like card.number or $..ssn (to mask whole "
                           "payloads, mask for everyone)")
    segments = tuple(s.lower() if isinstance(s, str) else s for s in parse_path(body))
    return MaskedPath(source, segments, anywhere)


def parse_masked_paths(text: str) -> tuple[MaskedPath, ...]:
    """The paths of ``text``, one a line (blank lines skipped); :class:`InvalidInput` in words for a bad one."""
    if len(text.encode(errors="surrogatepass")) > PATHS_MAX_BYTES:
        raise InvalidInput(f"the masked paths must be at most {PATHS_MAX_BYTES} bytes")
    found = tuple(parse_masked_path(line) for line in text.splitlines() if line.strip())
    if len(found) > MAX_PATHS:
        raise InvalidInput(f"a queue masks at most {MAX_PATHS} paths, not {len(found)}")
    return found


@dataclass(frozen=True, slots=True)
class RedactionConfig:
    """A queue's masked paths (beyond the default names), and whether they are masked for everyone."""

    queue: str
    paths_text: str = ""
    mask_all: bool = False
    set_by: str = ""
    set_ms: int | None = None
    odd: str = ""

    @property
    def paths(self) -> tuple[MaskedPath, ...]:
        try:
            return parse_masked_paths(self.paths_text)
        except InvalidInput:
            return ()

    @property
    def is_set(self) -> bool:
        return bool(self.paths_text) or self.mask_all

    def masker(self) -> Masker:
        # Paths another writer stored that do not read as paths: mask as if for everyone, and withhold text.
        return Masker(self.paths, strict=self.is_set or bool(self.odd))

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "paths": [p.text for p in self.paths], "mask_all": self.mask_all,
                "default_names": sorted(DEFAULT_NAMES), "set_by": self.set_by, "set_ms": self.set_ms, "odd": self.odd}


def config(queue: str) -> Call[RedactionConfig]:
    """The queue's redaction (a key of another type or unreadable paths: masked for everyone, and said)."""
    key = QueueKeys(queue).redaction
    name = QueueKeys(queue).queue

    def parse(reply: list[Any]) -> RedactionConfig:
        kind, paths, mask_all, set_by, set_ms = (_text(v) for v in reply)
        odd = ""
        if kind == "long":
            odd = f"{key} holds paths over {PATHS_MAX_BYTES} bytes: every payload is masked for everyone"
        elif kind not in ("hash", "none"):
            odd = f"{key} holds a {kind}, not a hash: every payload is masked for everyone"
        else:
            try:
                parse_masked_paths(paths)
            except InvalidInput as error:
                odd = f"{key} holds paths that do not read ({error}): every payload is masked for everyone"
        return RedactionConfig(name, paths, mask_all == "1" or bool(odd), set_by, digits(set_ms), odd)

    return Call("redaction", [key], [], parse)


@dataclass(frozen=True, slots=True)
class RedactionChange:
    queue: str
    previous_paths: str
    previous_mask_all: bool


def config_set(queue: str, paths: str, *, mask_all: bool, actor: str = "") -> Call[RedactionChange]:
    """Sets the queue's masked paths (one a line) and whether they are masked for everyone; no paths and
    ``mask_all`` False removes the queue's redaction (the default names stay masked)."""
    keys = QueueKeys(queue)
    if not isinstance(paths, str):
        raise InvalidInput("the masked paths are text, one a line")
    parsed = parse_masked_paths(paths)
    text = "\n".join(p.text for p in parsed)

    def parse(reply: list[Any]) -> RedactionChange:
        if _text(reply[0]) == "REFUSED" and _text(reply[1]) == "missing":
            raise InvalidInput(f"{keys.queue} has no masked paths to remove")
        refused_whole("redaction_set", reply)
        return RedactionChange(keys.queue, _text(reply[1]), _text(reply[2]) == "1")

    return Call("redaction_set", [keys.redaction], [text, "1" if mask_all else "0", actor], parse)


class _Cut(Exception):
    """The text ends here: it was the start of a document."""


class _NotJson(Exception):
    """Not JSON (or deeper than MAX_DEPTH): where its values lie cannot be told."""


_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*', re.DOTALL)
_NUMBER: Final = re.compile(r"-?[0-9][0-9.eE+-]*|-")
_SPACE: Final = re.compile(r"[ \t\r\n]*")
_LITERALS: Final = ("true", "false", "null")


@dataclass(frozen=True, slots=True)
class Masker:
    """Masks payloads for a reader who may not see masked values (see the module's words)."""

    paths: tuple[MaskedPath, ...] = ()
    # The queue has paths of its own (or masks for everyone): text that is not JSON is withheld.
    strict: bool = False

    def hits(self, path: tuple[Segment, ...]) -> bool:
        """Whether the value at ``path`` is masked (its key a default name, or a configured path)."""
        if not path:
            return False
        last = path[-1]
        if isinstance(last, str) and last.lower() in DEFAULT_NAMES:
            return True
        return any(p.matches(path) for p in self.paths)

    def covers(self, path: Iterable[Segment]) -> bool:
        """Whether the value at ``path`` lies in a masked value (at it, or inside one above it)."""
        steps = tuple(path)
        return any(self.hits(steps[:n]) for n in range(1, len(steps) + 1))

    def _not_json(self, data: bytes) -> bytes:
        if data and (self.strict or data.lstrip()[:1] in (b"{", b"[")):
            return WITHHELD.encode()
        return data

    def payload(self, data: bytes) -> bytes:
        """A whole payload as the reader is shown it: masked JSON, the same bytes, or :data:`WITHHELD`."""
        try:
            document = json.loads(data.decode())
        except (UnicodeDecodeError, ValueError, RecursionError):
            return self._not_json(data)
        try:
            masked, count = self._mask(document, (), 0)
        except _NotJson:
            return WITHHELD.encode()
        return data if not count else json.dumps(masked, ensure_ascii=False).encode()

    def head(self, data: bytes, total: int) -> bytes:
        """The first bytes of a payload of ``total`` bytes (or a preview of it) as the reader is shown them."""
        if len(data) >= total:
            return self.payload(data)
        try:
            text = data.decode()
        except UnicodeDecodeError as error:
            # A head cut inside a multi-byte character is still text.
            if error.start < len(data) - 3:
                return self._not_json(data)
            text = data[:error.start].decode(errors="replace")
        try:
            return self._mask_start(text).encode()
        except _NotJson:
            return self._not_json(data)

    def _mask(self, value: Any, path: tuple[Segment, ...], depth: int) -> tuple[Any, int]:
        if depth > MAX_DEPTH:
            raise _NotJson
        if isinstance(value, dict):
            count, out = 0, {}
            for key, item in value.items():
                if self.hits((*path, key)):
                    out[key], count = MASK, count + 1
                else:
                    out[key], n = self._mask(item, (*path, key), depth + 1)
                    count += n
            return out, count
        if isinstance(value, list):
            count, items = 0, []
            for index, item in enumerate(value):
                if self.hits((*path, index)):
                    items.append(MASK)
                    count += 1
                else:
                    masked, n = self._mask(item, (*path, index), depth + 1)
                    items.append(masked)
                    count += n
            return items, count
        return value, 0

    def _mask_start(self, text: str) -> str:
        """``text`` read as the start of a JSON document, each masked value (whole or cut) as MASK."""
        out: list[str] = []
        length = len(text)

        def space(i: int) -> int:
            end = _SPACE.match(text, i)
            assert end is not None
            out.append(end.group())
            if end.end() >= length:
                raise _Cut
            return end.end()

        def value(i: int, path: tuple[Segment, ...], shown: bool, depth: int) -> int:
            if depth > MAX_DEPTH:
                raise _NotJson
            if shown and self.hits(path):
                out.append(json.dumps(MASK, ensure_ascii=False))
                shown = False
            start = len(out)
            try:
                char = text[i]
                if char == "{":
                    out.append("{")
                    i = space(i + 1)
                    if text[i] == "}":
                        i += 1
                    else:
                        while True:
                            if text[i] != '"':
                                raise _NotJson
                            key_end = string(i)
                            try:
                                key = json.loads(text[i:key_end])
                            except ValueError:
                                raise _NotJson from None
                            i = space(key_end)
                            if text[i] != ":":
                                raise _NotJson
                            out.append(":")
                            i = value(space(i + 1), (*path, key), shown, depth + 1)
                            i = space(i)
                            if text[i] == "}":
                                i += 1
                                break
                            if text[i] != ",":
                                raise _NotJson
                            out.append(",")
                            i = space(i + 1)
                        out.append("}")
                elif char == "[":
                    out.append("[")
                    i = space(i + 1)
                    if text[i] == "]":
                        i += 1
                    else:
                        index = 0
                        while True:
                            i = space(value(i, (*path, index), shown, depth + 1))
                            if text[i] == "]":
                                i += 1
                                break
                            if text[i] != ",":
                                raise _NotJson
                            out.append(",")
                            i = space(i + 1)
                            index += 1
                        out.append("]")
                elif char == '"':
                    i = string(i)
                else:
                    i = scalar(i)
            finally:
                if not shown:
                    # Also when the text ends inside the value: none of it is shown.
                    del out[start:]
            return i

        def string(i: int) -> int:
            found = _STRING.match(text, i)
            assert found is not None
            end = found.end()
            if end < length and text[end] == '"':
                out.append(text[i:end + 1])
                return end + 1
            if end >= length - 1:
                out.append(text[i:end])
                raise _Cut
            raise _NotJson

        def scalar(i: int) -> int:
            number = _NUMBER.match(text, i)
            if number is not None:
                out.append(number.group())
                if number.end() >= length:
                    raise _Cut
                return number.end()
            for word in _LITERALS:
                if text.startswith(word, i):
                    out.append(word)
                    return i + len(word)
                if word.startswith(text[i:]):
                    out.append(text[i:])
                    raise _Cut
            raise _NotJson

        try:
            i = space(0)
        except _Cut:
            return text
        try:
            i = value(i, (), True, 0)
            if text[i:].strip(" \t\r\n"):
                raise _NotJson
        except _Cut:
            pass
        return "".join(out)

    def view(self, view: JobView) -> JobView:
        """The job as the reader is shown it: its payload (or the preview read instead) and its preview field."""
        payload = self.payload(view.payload) if view.payload_whole else self.head(view.payload, view.payload_length)
        fields = dict(view.fields)
        if "preview" in fields:
            fields["preview"] = self.head(fields["preview"], view.payload_length)
        return replace(view, payload=payload, fields=fields)

    def row(self, row: JobRow) -> JobRow:
        return replace(row, payload_head=self.head(row.payload_head, row.payload_length))

    def match(self, match: Match) -> Match:
        return replace(match, payload_head=self.head(match.payload_head, match.payload_length))

    def field_filter_problem(self, field: FieldFilter) -> str:
        """Why the reader may not search by ``field`` ('' when they may): its value is masked for them."""
        if self.covers(field.path):
            return f"refused: the payload field {field.text()} is masked for you, so jobs are not found by its value"
        return ""


__all__ = ["MASK", "WITHHELD", "DEFAULT_NAMES", "MaskedPath", "RedactionConfig", "RedactionChange", "Masker",
           "config", "config_set", "parse_masked_path", "parse_masked_paths"]
