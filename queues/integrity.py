"""The integrity check: walk a queue in bounded steps and report every job whose
hash and set membership disagree.

Each step is one read script (queues/lua/check.lua) over at most ``step``
jobs, so the check never blocks Redis for long and a job that moves while it
runs is judged at one instant, never reported as torn by mistake.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .client import EchoMQ
from .keys import STATES, QueueKeys
from .moves import Call, _int, _text


@dataclass(frozen=True, slots=True)
class Problem:
    id: str
    problem: str
    detail: str

    def describe(self) -> str:
        return f"{self.id}: {self.problem} ({self.detail})" if self.detail else f"{self.id}: {self.problem}"


@dataclass
class IntegrityReport:
    queue: str
    looked_at: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "looked_at": self.looked_at, "ok": self.ok,
                "problems": [{"id": p.id, "problem": p.problem, "detail": p.detail} for p in self.problems]}


def check_step(queue: str, what: str, cursor: str, count: int) -> Call[tuple[str, int, list[Problem]]]:
    keys = QueueKeys(queue)
    pattern = keys.job_pattern()

    def parse(reply: list[Any]) -> tuple[str, int, list[Problem]]:
        next_cursor, looked, *flat = reply
        problems = [Problem(_text(flat[i]), _text(flat[i + 1]), _text(flat[i + 2])) for i in range(0, len(flat), 3)]
        return _text(next_cursor), int(looked), problems

    return Call("check", keys.script_keys(None), [what, cursor, _int(count, "step", 1, 1000), pattern], parse)


def check_queue(mq: EchoMQ, queue: str, *, step: int = 500) -> IntegrityReport:
    report = IntegrityReport(QueueKeys(queue).queue)
    seen: set[tuple[str, str]] = set()
    for what in (*STATES, "hashes"):
        cursor = "0"
        while True:
            cursor, looked, problems = mq.run(check_step(queue, what, cursor, step))
            if what != "hashes":
                report.looked_at += looked
            for problem in problems:
                # A job in two sets is seen by both walks: report it once.
                if (problem.id, problem.problem) not in seen:
                    seen.add((problem.id, problem.problem))
                    report.problems.append(problem)
            if cursor == "0":
                break
    return report
