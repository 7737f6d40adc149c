"""`black --check` text output (stderr): `would reformat PATH` per file."""

from __future__ import annotations

from incidents.checks.parsers import ParseError, RawFinding, ToolOutput, tail

_WOULD = "would reformat "
_CANNOT = "error: cannot format "


def parse(out: ToolOutput) -> list[RawFinding]:
    if out.exit_code not in (0, 1, 123):
        raise ParseError(f"black exited {out.exit_code}: {tail(out.stderr)}")
    findings: list[RawFinding] = []
    crashes: list[str] = []
    for line in out.stderr.splitlines():
        if line.startswith(_WOULD):
            path = line[len(_WOULD) :].strip()
            findings.append(RawFinding(path, None, None, "black", "File would be reformatted"))
        elif line.startswith(_CANNOT):
            rest = line[len(_CANNOT) :]
            # a file that does not parse is a syntax finding of ruff/mypy, not black's
            if ": cannot parse" not in rest.lower() and "Cannot parse" not in rest:
                crashes.append(rest)
    if crashes:
        raise ParseError(f"black could not format: {'; '.join(crashes)[:400]}")
    if out.exit_code == 1 and not findings:
        raise ParseError(f"black exited 1 without naming a file: {tail(out.stderr)}")
    return findings
