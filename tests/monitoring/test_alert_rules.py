"""The example alert rules are valid Prometheus rules and fire as their unit tests say (promtool)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "monitoring" / "alerts.yml"
RULE_TESTS = ROOT / "monitoring" / "alerts_test.yml"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    assert binary, "promtool is missing: ./dev test installs Debian's prometheus package"
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, cwd=RULES.parent)


def test_the_rules_pass_promtool_check() -> None:
    done = promtool("check", "rules", str(RULES))

    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 9 rules found" in done.stdout


def test_the_rules_fire_as_their_unit_tests_expect() -> None:
    done = promtool("test", "rules", str(RULE_TESTS))

    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_has_a_unit_test() -> None:
    rules = {line.split(":", 1)[1].strip() for line in RULES.read_text().splitlines() if "- alert:" in line}
    tested = {line.split(":", 1)[1].strip() for line in RULE_TESTS.read_text().splitlines()
              if line.strip().startswith("alertname:")}

    assert rules == tested, rules ^ tested
