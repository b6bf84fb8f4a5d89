r"""Text from the keyspace made safe to look at: characters that act instead of showing, shown as escapes.

Another writer may put anything in a name, an id, an error or an actor: an escape sequence that
recolours a terminal, a right-to-left override (U+202E) that reverses the text around it, a zero-width
space that makes two different names look the same. The CLI and the console show each such character
as an escape (``\x1b``, ``\u202e``, ``\u200b``) so what an operator reads is what Redis holds.
"""

from __future__ import annotations

import re
from typing import Final

# C0 and C1 controls, DEL, the bidi controls (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), the
# other invisible format characters (soft hyphen, zero-width spaces and joiners, word joiners, BOM, tags),
# line and paragraph separators, and lone surrogates (bytes that were not UTF-8).
INVISIBLE: Final = re.compile("[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                              "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]")


def escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str, *, backslashes: bool = True) -> str:
    """Text that cannot move the cursor, recolour the terminal or reverse the text around it.

    With ``backslashes`` a backslash is written ``\\`` so that an escape cannot be mistaken for text
    (the CLI); the console flags escaped text instead and leaves backslashes as they are.
    """
    return INVISIBLE.sub(escape_char, text.replace("\\", "\\\\") if backslashes else text)


def has_invisible(text: str) -> bool:
    return INVISIBLE.search(text) is not None


__all__ = ["INVISIBLE", "visible", "has_invisible"]
