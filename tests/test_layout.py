"""How the tests are laid out: helpers are modules of tests/support/, fixtures live in conftests."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_test_module_imports_from_a_conftest() -> None:
    # pytest loads a conftest as a plugin; imported as a module too it runs twice, and its helpers hide
    # from whoever looks for them in tests/support/.
    importing = [str(path.relative_to(TESTS)) for path in TESTS.rglob("*.py")
                 if re.search(r"^\s*(from\s+[\w.]*conftest\s+import|import\s+[\w.]*conftest)", path.read_text(), re.M)]

    assert importing == []


def test_no_test_module_imports_from_another_test_module() -> None:
    # A helper one test module imports from another hides there, and runs that module's fixtures' imports too.
    importing = [str(path.relative_to(TESTS)) for path in TESTS.rglob("*.py")
                 if re.search(r"^\s*from\s+tests\.(?:[\w]+\.)*test_\w+\s+import", path.read_text(), re.M)]

    # It imports tests, not helpers: the console's browser tests, run again against the console mounted in a host.
    assert importing == ["hostproject/test_mounted_console.py"]
