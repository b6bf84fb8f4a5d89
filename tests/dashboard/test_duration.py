"""The first render writes durations in Python (the ``duration`` filter); the browser then ticks them in
static/console.js. Both must write the same text for the same value, or a countdown jumps on its first tick."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dashboard.templatetags.console import duration

NODE = shutil.which("node") or "/usr/bin/node"
CONSOLE_JS = Path(__file__).resolve().parents[2] / "static" / "console.js"

pytestmark = pytest.mark.skipif(not os.access(NODE, os.X_OK), reason="node is not installed (apt-get install nodejs)")


def js_durations(values: list[float]) -> list[str]:
    """console.js's own ``duration``, cut from the file and run by node on each value."""
    found = re.search(r"^  const duration = \(ms\) => \{$.*?^  \};$", CONSOLE_JS.read_text(), re.S | re.M)
    assert found, "console.js no longer defines `const duration = (ms) => {...};` at its top level"
    program = found.group(0) + """
const values = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(values.map(duration)));
"""
    ran = subprocess.run([NODE, "-e", program], input=json.dumps(values), capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(ran.stdout)


def test_python_and_javascript_write_every_duration_alike() -> None:
    values: list[float] = list(range(-20_007, 20_008))  # every ms either side of the 10 s and 60 s steps
    values += list(range(20_008, 10 * 86_400_000, 49_999))  # minutes, hours and days
    values += [0.05, 49.999, 50.0, 249.9999, 250.0001, 9_949.999, 9_950.0, 9_999.9, 59_999.999,
               3_599_999.0, 86_399_999.0, 86_400_000.0, 1e15]
    python = [duration(v) for v in values]
    javascript = js_durations(values)
    differ = [(v, p, j) for v, p, j in zip(values, python, javascript, strict=True) if p != j]
    assert differ == [], f"{len(differ)} of {len(values)} differ (value, Python, JavaScript): {differ[:10]}"


def test_a_tenth_of_a_second_tie_rounds_up_in_both() -> None:
    assert duration(250) == duration(-250) == js_durations([250])[0] == "0.3 s"
    assert duration(1_250) == "1.3 s"
    assert duration(9_960) == "10.0 s"
