"""Every line a user sees goes through here, so tests capture exactly what a user sees,
and every line is redacted (`incidents.redact`): what a command shows may come from a
bundle another tool wrote by hand, which never went through capture's redaction. Nor do
escape sequences or control characters reach the terminal (`incidents.termtext`): free
text is shown, never obeyed."""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any


def out(text: str = "") -> None:
    from incidents.redact import redact
    from incidents.termtext import printable

    sys.stdout.write(printable(redact(text)) + "\n")


def err(text: str) -> None:
    from incidents.redact import redact
    from incidents.termtext import printable

    sys.stderr.write(printable(redact(text)) + "\n")


def out_json(doc: Any) -> None:
    from incidents.redact import redact_json

    text = json.dumps(redact_json(doc), indent=2, ensure_ascii=False, sort_keys=False)
    sys.stdout.write(text + "\n")


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain, aligned text table (no colour: it must read the same in a log file)."""
    # column by column and one format string: a 10,000-row `status --all-hosts` spent
    # 70 ms here cell by cell
    widths = (
        [
            max(len(h), *map(len, column))
            for h, column in zip(headers, zip(*rows, strict=True), strict=True)
        ]
        if rows
        else [len(h) for h in headers]
    )
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(line.format(*row).rstrip() for row in (headers, *rows))
