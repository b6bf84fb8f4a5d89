"""What a Content-Security-Policy without 'unsafe-inline' would refuse in a page: inline scripts, event-handler
and hx-on attributes, style attributes and elements, javascript: links."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class InlineCode(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script" and "src" not in names:
            self.found.append("<script> without src")
        if tag == "style":
            self.found.append("<style>")
        for name, value in attrs:
            if re.fullmatch(r"on\w+|hx-on.*|data-hx-on.*|style", name):
                self.found.append(f"<{tag} {name}={value!r}>")
            if name in {"href", "src", "action"} and (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")


def inline_code(html: str) -> list[str]:
    parser = InlineCode()
    parser.feed(html)
    return parser.found
