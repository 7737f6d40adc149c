"""`ruff check --output-format=json` and `ruff format --check --output-format=json`."""

from __future__ import annotations

from incidents.checks.parsers import ParseError, RawFinding, ToolOutput, tail
from incidents.checks.parsers._json import as_int, load


def _items(out: ToolOutput) -> list[dict[str, object]]:
    if out.exit_code not in (0, 1, 2):
        raise ParseError(f"ruff exited {out.exit_code}: {tail(out.stderr)}")
    doc = load(out.stdout or "", "ruff output")
    if not isinstance(doc, list) or not all(isinstance(d, dict) for d in doc):
        raise ParseError("ruff output is not a list of diagnostics")
    if out.exit_code == 2 and not doc:  # bad config, unreadable file: nothing reported
        raise ParseError(f"ruff failed: {tail(out.stderr)}")
    return doc


def _finding(d: dict[str, object]) -> RawFinding:
    loc = d.get("location")
    loc = loc if isinstance(loc, dict) else {}
    code = d.get("code")
    if "filename" not in d or "message" not in d:
        raise ParseError(f"ruff diagnostic without filename/message: {d!r}"[:300])
    return RawFinding(
        path=str(d["filename"]),
        line=as_int(loc.get("row")),
        column=as_int(loc.get("column")),
        code=code if isinstance(code, str) else "invalid-syntax",
        message=str(d["message"]),
    )


def parse_check(out: ToolOutput) -> list[RawFinding]:
    return [_finding(d) for d in _items(out)]


def parse_format(out: ToolOutput) -> list[RawFinding]:
    """Files that would be reformatted. Parse failures are `ruff check`'s to report."""
    return [_finding(d) for d in _items(out) if d.get("code") not in ("invalid-syntax", None)]
