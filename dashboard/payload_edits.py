"""The job page's edit panel: the form that changes a payload, the kept versions and a diff.

Built from three bounded reads (the job, its versions index with one version's bytes, the queue's
schema); the diff is of at most DIFF_MAX_BYTES of each side, pretty-printed first when both are JSON.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any, Final

from queues import STATES, InvalidInput, Refused, Unavailable
from queues.keys import job_id_token
from queues.moves import new_job_id
from queues.payload_versions import VERSIONS_MAX, VERSIONS_MAX_BYTES, PayloadVersion, QueueSchema, schema, versions
from queues.reads import JobView
from queues.redaction import Masker

from .actions.models import AuditEntry
from .services import read
from .templatetags.console import payload_escaped

# The longest payload the form edits in the page (a longer one: `emq edit --payload-file`).
EDIT_MAX_BYTES: Final = 64 * 1024
# The most of each side a diff compares, and the most lines it shows.
DIFF_MAX_BYTES: Final = 64 * 1024
DIFF_MAX_LINES: Final = 400
EDITABLE: Final = ("pending", "failed")


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str  # 'add', 'del', 'same' or 'hunk'
    mark: str  # '+', '−', ' ' or '@'
    text: str


@dataclass(frozen=True, slots=True)
class Diff:
    seq: int
    lines: list[DiffLine]
    # Why there is no diff to show ('' when there is).
    note: str = ""
    cut: bool = False

    @property
    def added(self) -> int:
        return sum(1 for line in self.lines if line.kind == "add")

    @property
    def removed(self) -> int:
        return sum(1 for line in self.lines if line.kind == "del")


@dataclass(frozen=True, slots=True)
class EditPanel:
    state: str
    attempts: str
    max_attempts: str
    editable: bool
    # The payload's text for the form ('' when it cannot be edited in the page; then `why_not` says why).
    text: str
    why_not: str
    schema: QueueSchema | None
    versions: list[PayloadVersion] = field(default_factory=list)
    diff: Diff | None = None
    read_error: str = ""
    odd: str = ""
    cap: tuple[int, int] = (VERSIONS_MAX, VERSIONS_MAX_BYTES)

    @property
    def has_cr(self) -> bool:
        return "\r" in self.text

    @property
    def newest_first(self) -> list[PayloadVersion]:
        return list(reversed(self.versions))


def _shown(data: bytes) -> str:
    """A payload as the diff compares it: JSON pretty-printed (so a change of one value is one line)."""
    text = data.decode(errors="backslashreplace")
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def payload_diff(seq: int, before: bytes, after: bytes) -> Diff:
    """The lines that changed from version ``seq`` (``before``) to the current payload (``after``)."""
    if len(before) > DIFF_MAX_BYTES or len(after) > DIFF_MAX_BYTES:
        return Diff(seq, [], note=f"too long to compare here (more than {DIFF_MAX_BYTES // 1024} KiB): download "
                                  "both to compare them")
    if before == after:
        return Diff(seq, [], note="the same bytes as the current payload")
    lines: list[DiffLine] = []
    for line in difflib.unified_diff(_shown(before).split("\n"), _shown(after).split("\n"), n=2, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.append(DiffLine("hunk", "@", line))
        elif line.startswith("+"):
            lines.append(DiffLine("add", "+", line[1:]))
        elif line.startswith("-"):
            lines.append(DiffLine("del", "−", line[1:]))
        else:
            lines.append(DiffLine("same", " ", line[1:]))
    if not lines:
        return Diff(seq, [], note="the same once pretty-printed: only the layout of the JSON differs")
    return Diff(seq, lines[:DIFF_MAX_LINES], cut=len(lines) > DIFF_MAX_LINES)


def _form_text(view: JobView) -> tuple[str, str]:
    if view.state not in EDITABLE:
        why = ("it is active: its worker may be running it" if view.state == "active"
               else f"it is {view.state or 'without a state'}")
        return "", f"A job is edited while pending or failed; {why}."
    return _payload_text(view)


def _payload_text(view: JobView, command: str = "edit") -> tuple[str, str]:
    """The payload as text a form may hold, or '' and why it may not (``command``: the emq command to use instead)."""
    if view.payload_length > EDIT_MAX_BYTES:
        return "", (f"The payload is {view.payload_length} bytes, more than the {EDIT_MAX_BYTES // 1024} KiB this form "
                    f"edits: use emq {command} with --payload-file.")
    if not view.payload_whole:
        return "", "The payload was not read whole: reload the page."
    try:
        text = view.payload.decode()
    except UnicodeDecodeError:
        return "", f"The payload is not UTF-8 text: edit it with emq {command} and --payload-file."
    if payload_escaped(text):
        # A form would hold them unseen, and an edit would carry them on unseen.
        return "", (f"The payload holds invisible or bidi characters (shown above as escapes): edit it with emq "
                    f"{command} and --payload-file, where you see its bytes.")
    return text, ""


@dataclass(frozen=True, slots=True)
class ClonePanel:
    """The job page's clone form: the source as shown, a new id to start from, the payload's text when it can be
    edited in the page (else only the source's bytes are offered, and ``why_not`` says why)."""

    state: str
    attempts: str
    max_attempts: str
    new_id: str
    text: str
    why_not: str

    @property
    def has_cr(self) -> bool:
        return "\r" in self.text


def clone_panel(view: JobView, *, masker: Masker | None = None) -> ClonePanel | None:
    """The clone form for ``view``, or None when the job cannot be cloned (no state of the four: odd data);
    a payload shown masked (``masker``) is offered only as the source's bytes, never as the masked text."""
    if view.state not in STATES:
        return None
    text, why_not = _payload_text(view, "clone")
    if masker is not None and not why_not:
        text, why_not = "", "The payload's masked values are not shown to you, so it is not edited here."
    return ClonePanel(view.state, view.text("attempts"), view.text("max_attempts") or "3", new_job_id(), text, why_not)


def edit_panel(view: JobView, compare: str = "", *, masker: Masker | None = None) -> EditPanel:
    """The panel for ``view`` (read with its payload whole up to the page's limit, masked by ``masker`` when the
    reader may not see masked values); ``compare``: the version the diff is of (default the newest)."""
    text, why_not = _form_text(view)
    if masker is not None and not why_not:
        # The form would hold the masked text, and saving it would write the marks over the values.
        text, why_not = "", "The payload's masked values are not shown to you, so it is not edited here."
    panel = EditPanel(view.state, view.text("attempts"), view.text("max_attempts") or "3", not why_not, text, why_not,
                      None)
    asked = int(compare) if compare.isascii() and compare.isdigit() and 0 < len(compare) < 15 else None
    try:
        # One round trip: the schema and the index (with the version asked for, when the page names one).
        results = read(lambda mq: mq.run_many([schema(view.queue), versions(view.queue, view.id, version=asked,
                                                                            max_bytes=DIFF_MAX_BYTES)]))
        for result in results:
            if isinstance(result, Exception):
                raise result
        found, kept = results
        seq = asked if asked is not None else (kept.versions[-1].seq if kept.versions else None)
        if seq is not None and asked is None:
            kept = read(lambda mq: mq.run(versions(view.queue, view.id, version=seq, max_bytes=DIFF_MAX_BYTES)))
        diff = None
        if seq is not None and kept.get(seq):
            if kept.version is None or kept.cut or not view.payload_whole:
                diff = Diff(seq, [], note=f"too long to compare here (more than {DIFF_MAX_BYTES // 1024} KiB): "
                                          "download both to compare them")
            else:
                before = kept.version if masker is None else masker.payload(kept.version)
                diff = payload_diff(seq, before, view.payload)
    except (Unavailable, Refused, InvalidInput) as error:
        return EditPanel(panel.state, panel.attempts, panel.max_attempts, panel.editable, panel.text, panel.why_not,
                         None, read_error=str(error))
    return EditPanel(panel.state, panel.attempts, panel.max_attempts, panel.editable, panel.text, panel.why_not,
                     found, kept.versions, diff, odd=kept.odd or found.odd)


def edit_done(user: Any, queue: str, job_id: str, done: str) -> AuditEntry | None:
    """The user's own edit or restore of this job that the page was reloaded after (``?done=`` its audit row)."""
    if not (done.isascii() and done.isdigit() and len(done) < 19):
        return None
    entry = AuditEntry.objects.filter(pk=int(done), user_id=user.pk, queue=queue,
                                      action__in=("edit", "restore")).first()
    if entry is None or not entry.jobs or entry.jobs[0].get("id") != job_id_token(job_id):
        return None
    return entry
