"""Template source rules that rendering alone would not catch."""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_no_short_comment_spans_lines_because_django_would_print_it_on_the_page() -> None:
    # Django's {# ... #} ends at the end of its line; a longer one needs {% comment %}.
    spanning = []
    for template in sorted(TEMPLATES.rglob("*.html")):
        for number, line in enumerate(template.read_text().splitlines(), 1):
            start = line.find("{#")
            while start != -1:
                end = line.find("#}", start + 2)
                if end == -1:
                    spanning.append(f"{template.relative_to(TEMPLATES)}:{number}")
                    break
                start = line.find("{#", end + 2)
    assert not spanning, f"use {{% comment %}} for comments over several lines: {', '.join(spanning)}"
