"""The operator's moves, in one table.

Every row is a move an operator makes by hand: on one job (retry, recover,
promote, cancel, delete, rerun, edit, restore, clone) or on a whole queue (recover every lapsed lease,
retry every failed job, purge, pause, resume). The library (which scripts a
compare-and-move may send, its defaults and its words), the ``emq`` commands
for one job, the console's buttons, confirmations, bulk moves and API, and the
audit log's labels are all read from :data:`OPERATOR_MOVES`.

A new move on one job, NAME (at most 16 characters):

1. ``queues/lua/NAME.lua``, copied from ``promote.lua``: it takes ``id, expected
   state, expected attempts, [extra attempts | its own arguments,] actor``, answers
   ``{'OK', state, attempts[, more]}``, names its move in its ``check_moves('NAME')``
   line and calls ``emit`` with it after its last check. A move with arguments of
   its own (edit, restore) names them in its row's ``arguments``, each a name of
   ``queues.moves.MOVE_ARGUMENTS`` (add a name there for a new kind of argument). A move that makes
   a new job (clone) names ``new_id`` among them: the new job's hash is sent as KEYS[7], and its script
   checks that key, and that it does not exist, before its first write.
2. Its row in ``queues/protocol_moves.py`` (the states from and to, the history
   letter, whether it is counted), then ``python -m queues.protocol_moves`` to
   write ``queues/lua/moves.lua``; add the letter to PROTOCOL.md's table in
   section 9 (a test compares them).
3. Its row here (words, button, confirmation, audit label). The CLI command,
   the button, the API's enums and the audit log's choices follow; no migration.
   A move with arguments of its own has no bare button: a new kind of argument
   gets its ``emq`` option in ``queues/cli.py`` (``_add_move_arguments`` refuses
   to build the parser without one), and the move its form on the job page, its
   view and its API operation, written as edit's, restore's and clone's are.
4. Its tests. ``tests/queues/test_new_move_recipe.py`` follows these steps for
   a throwaway move in a copy of the tree and drives it end to end, and checks
   every move of the table against them; ``tests/queues/test_no_write_before_check.py``
   needs the script's ARGV (``argv_for``, ``own_arguments``) and, past six, its KEYS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from .errors import InvalidInput
from .keys import STATES, State


@dataclass(frozen=True, slots=True)
class OperatorMove:
    # The console's and the audit log's name for it; for a move on one job also its script
    # (queues/lua/NAME.lua), its emq command and its button's value.
    name: str
    scope: Literal["job", "queue"]
    # The script it sends (a queue-wide move sends a batch script again and again).
    script: str
    # On a button ("Retry"), and in the past tense in a result ("retried: job J is now pending").
    verb: str
    past: str
    # What it does, in a few words: the emq command's help and a button's title.
    summary: str
    # What the audit log calls it.
    label: str
    # A move on one job: the states a job may be shown in for a button, a ticked row or a search to
    # offer it; the first is the state it expects when the caller does not say which it saw.
    # A queue-wide move: the state of the jobs it moves (none for pause and resume).
    applies_to: tuple[State, ...] = ()
    # In which shown states moving one job asks for a confirmation first (ticked jobs always ask then).
    asks_first: tuple[State, ...] = ()
    # When it asks about one job: the question ({job} the id, {shown} its state and attempts as shown,
    # the queue follows), what cannot be taken back, and the two answers.
    ask_one: tuple[str, str, str, str] = ("", "", "", "")
    # Said when it moves many jobs at once: what cannot be taken back.
    warning: str = ""
    # retry gives the job more claims: its script takes one argument more.
    extra_attempts: bool = False
    # delete also takes a job shown in a state that is none of the four, so odd data stays repairable.
    odd_states: bool = False
    # Whether a search's bulk offers it; recover acts on a lapsed lease, which no search finds.
    over_search: bool = True
    # The job page offers it only for a job that is delayed (promote makes one due now) ...
    only_if: Literal["", "delayed"] = ""
    # ... or shows it quieter unless the lease has lapsed (recover of a live lease is refused).
    quiet_unless: Literal["", "lapsed"] = ""
    # The move's own arguments, in its script's ARGV order after the expected attempts (and before the
    # actor), by the names of queues.moves.MOVE_ARGUMENTS, which checks and sends each. A move that takes
    # any is made from a form on the job page, an ``emq`` option each and the API's fields; no bare
    # button, ticked rows or search bulk offer it.
    arguments: tuple[str, ...] = ()

    @property
    def starts_from(self) -> State:
        return self.applies_to[0]

    @property
    def always_asks(self) -> bool:
        return set(self.asks_first) == set(STATES)

    def asks_for(self, shown_state: str) -> bool:
        """Whether moving one job shown in ``shown_state`` asks first (a move that asks in every state asks in an
        odd one too: a delete of a job without a state, or of a job key of another type)."""
        return shown_state in self.asks_first or self.always_asks

    @property
    def on_button(self) -> bool:
        """Whether a bare button makes it (a move with arguments of its own needs a form)."""
        return not self.arguments

    def offered(self, state: str, *, delayed: bool = True) -> bool:
        """Whether a job shown in ``state`` is offered this move (``delayed``: a pending job due later)."""
        applies = state in self.applies_to or (self.odd_states and state not in STATES)
        return applies and (self.only_if != "delayed" or delayed)



OPERATOR_MOVES: Final[tuple[OperatorMove, ...]] = (
    OperatorMove("retry", "job", "retry", "Retry", "retried", "failed → pending, due now, one more attempt", "retry",
                 ("failed",), extra_attempts=True),
    OperatorMove("recover", "job", "recover", "Recover", "recovered", "a lapsed lease → pending", "recover",
                 ("active",), over_search=False, quiet_unless="lapsed"),
    OperatorMove("promote", "job", "promote", "Promote", "promoted", "a delayed job becomes due now", "promote",
                 ("pending",), only_if="delayed"),
    OperatorMove("cancel", "job", "cancel", "Cancel", "cancelled", "pending or active → failed (reason “cancelled”)",
                 "cancel", ("pending", "active"), asks_first=("active",),
                 ask_one=("Cancel running job {job} {shown} of",
                          "It moves to failed with the reason “cancelled”; its worker is refused when it next reports.",
                          "Yes, cancel it", "Let it run"),
                 warning="They move to failed with the reason “cancelled”; running ones' workers are refused when "
                         "they report."),
    OperatorMove("delete", "job", "delete", "Delete", "deleted", "remove the job", "delete",
                 ("pending", "active", "done", "failed"), asks_first=STATES, odd_states=True,
                 ask_one=("Delete job {job} {shown} from", "This cannot be undone.", "Yes, delete it", "Keep it"),
                 warning="This cannot be undone."),
    OperatorMove("rerun", "job", "rerun", "Re-run", "re-run",
                 "a done job runs again, due now, as a new attempt of the same job", "re-run a job",
                 ("done",), asks_first=("done",),
                 ask_one=("Run job {job} {shown} again in",
                          "It goes back to pending, due now, as a new attempt of the same job: its handler runs "
                          "again, with the same payload.", "Yes, run it again", "Keep it"),
                 warning="Each goes back to pending, due now, as a new attempt: its handler runs again."),
    OperatorMove("edit", "job", "edit", "Edit", "edited",
                 "change a pending or failed job's payload (and max attempts), optionally retrying it; the old "
                 "payload is kept as a version", "edit a payload", ("failed", "pending"), over_search=False,
                 arguments=("payload", "max_attempts", "retry")),
    OperatorMove("restore", "job", "restore", "Restore", "restored",
                 "a pending or failed job's payload becomes one of its kept versions, byte for byte",
                 "restore a payload version", ("failed", "pending"), over_search=False, arguments=("version",)),
    OperatorMove("clone", "job", "clone", "Clone", "cloned",
                 "a new job (a new id) in the same queue, with this job's payload or an edited one, due now or "
                 "after a delay; the job cloned stays as it is", "clone a job",
                 ("failed", "done", "pending", "active"), asks_first=STATES, over_search=False,
                 ask_one=("Clone job {job} {shown} of",
                          "A new job is enqueued with the payload shown below; its handler runs it as any job. "
                          "The job cloned stays as it is.", "Yes, clone it", "Don't clone"),
                 arguments=("new_id", "new_payload", "delay_ms", "max_attempts")),
    OperatorMove("recover_all", "queue", "recover_expired", "Recover", "recovered", "recover every lapsed lease",
                 "recover every lapsed lease", ("active",)),
    OperatorMove("retry_all", "queue", "retry_failed", "Retry", "retried", "retry every failed job",
                 "retry every failed job", ("failed",)),
    OperatorMove("purge_done", "queue", "purge", "Purge", "purged", "delete done jobs older than an age",
                 "purge done jobs", ("done",)),
    OperatorMove("purge_failed", "queue", "purge", "Purge", "purged", "delete failed jobs older than an age",
                 "purge failed jobs", ("failed",)),
    OperatorMove("pause", "queue", "pause", "Pause", "paused", "claims refuse the queue until it is resumed",
                 "pause the queue"),
    OperatorMove("resume", "queue", "resume", "Resume", "resumed", "claims take the queue's jobs again",
                 "resume the queue"),
    OperatorMove("remove_key", "queue", "remove_key", "Remove the key", "removed",
                 "delete a state set that holds another type than a sorted set", "remove a key of another type",
                 warning="The key is deleted with what it holds; the ids that were in it are in none of the sets."),
)

BY_NAME: Final[dict[str, OperatorMove]] = {move.name: move for move in OPERATOR_MOVES}
JOB_MOVES: Final[tuple[OperatorMove, ...]] = tuple(m for m in OPERATOR_MOVES if m.scope == "job")
JOB_MOVE_NAMES: Final[tuple[str, ...]] = tuple(m.name for m in JOB_MOVES)
# The moves on one job a bare button makes (and so ticked rows may ask for).
BUTTON_MOVE_NAMES: Final[tuple[str, ...]] = tuple(m.name for m in JOB_MOVES if m.on_button)
# The queue-wide moves that run in batches of jobs of one state (pause and resume move no job).
BATCH_MOVES: Final[dict[str, State]] = {m.name: m.starts_from for m in OPERATOR_MOVES
                                        if m.scope == "queue" and m.applies_to}


def job_move(name: object) -> OperatorMove:
    """The move on one job called ``name``; :class:`InvalidInput` naming the known ones otherwise."""
    move = BY_NAME.get(name) if isinstance(name, str) else None
    if move is None or move.scope != "job":
        raise InvalidInput(f"unknown move {name!r}: choose {', '.join(JOB_MOVE_NAMES)}")
    return move
