"""Free text made safe for a terminal: what a person or another tool wrote (a group
decision's reason, an incident's message, a classifier's note) is shown as text, never
obeyed as a command by the terminal.

`one_line` is for a value shown inside a line (and for a reason before it is stored):
escape sequences (ANSI colours, cursor moves, OSC titles and hyperlinks) are removed, every
other control character (newlines and tabs too, C1 controls, DEL) and the invisible
characters that reorder or hide text (bidirectional overrides, line and paragraph
separators) become a space, and runs of spaces collapse. `printable` is the same for a
block of lines (`output.out`'s last step): newlines and tabs stay, so a table still reads as one.

Standard library only, and compiled on first use: `output` imports it lazily.
"""

from __future__ import annotations

import re

__all__ = ["one_line", "printable"]

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other two-character escapes, and the
# 8-bit CSI and OSC introducers
_ESCAPE = (
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
# C0 but tab and newline, DEL, C1, bidirectional marks and overrides, line/paragraph separators
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
_block: re.Pattern[str] | None = None
_spaces: re.Pattern[str] | None = None


def printable(text: str) -> str:
    """`text` with escape sequences removed and control characters but newlines and tabs as spaces."""
    global _block
    if text.isprintable():  # the common case: nothing to do (a newline is not printable)
        return text
    if _block is None:
        _block = re.compile(f"(?P<esc>{_ESCAPE})|{_CONTROL}")
    return _block.sub(lambda m: "" if m.group("esc") else " ", text)


def one_line(text: object) -> str:
    """`text` (any value, as `str` shows it) on one line: `printable`, newlines as spaces,
    runs of whitespace as one, no space at either end."""
    global _spaces
    shown = text if isinstance(text, str) else str(text)
    if shown.isprintable() and "  " not in shown and shown == shown.strip():
        return shown
    if _spaces is None:
        _spaces = re.compile(r"\s+")
    return _spaces.sub(" ", printable(shown)).strip()
