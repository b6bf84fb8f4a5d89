"""Every public function and method of ``queues`` says what it returns: ``Any`` tells a caller nothing.

mypy has no switch for an explicit ``-> Any`` short of forbidding ``Any`` everywhere, so this test reads
the source.
"""

from __future__ import annotations

import ast
from pathlib import Path

import queues

PACKAGE = Path(queues.__file__).parent


def _public_definitions() -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Module-level functions and methods of module-level classes, by ``file:Class.name``."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for node in ast.parse(path.read_text()).body:
            members = node.body if isinstance(node, ast.ClassDef) else [node]
            prefix = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
            for member in members:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and not member.name.startswith("_"):
                    found[f"{where}:{prefix}{member.name}"] = member
    return found


def _returns_any(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    returns = definition.returns
    if returns is None:
        return True
    text = returns.value if isinstance(returns, ast.Constant) else ast.unparse(returns)
    return text in ("Any", "typing.Any")


def test_no_public_function_of_queues_returns_any_or_nothing_said() -> None:
    definitions = _public_definitions()
    assert len(definitions) > 100, "the walk found too few definitions to mean anything"
    untyped = {name for name, definition in definitions.items() if _returns_any(definition)}
    assert untyped == set(), "these return Any (or say nothing): give them their real type"
