"""`mypy -O json`: one JSON object per line. Columns are 0-based there; ours are 1-based."""

from __future__ import annotations

from incidents.checks.parsers import ParseError, RawFinding, ToolOutput, tail
from incidents.checks.parsers._json import as_int, load
from incidents.vocab import Severity


def parse(out: ToolOutput) -> list[RawFinding]:
    if out.exit_code not in (0, 1, 2):
        raise ParseError(f"mypy exited {out.exit_code}: {tail(out.stderr or out.stdout)}")
    findings: list[RawFinding] = []
    for line in out.stdout.splitlines():
        if not line.startswith("{"):
            continue  # the summary line ("Found 1 error ...") is text even with -O json
        d = load(line, "mypy output line")
        if not isinstance(d, dict) or "file" not in d or "message" not in d:
            raise ParseError(f"unexpected mypy output line: {line[:200]!r}")
        if d.get("severity") != "error":
            continue  # notes hang off an error; mypy does not count them
        col = as_int(d.get("column"))
        code = d.get("code")
        findings.append(
            RawFinding(
                path=str(d["file"]),
                line=as_int(d.get("line")),
                column=None if col is None or col < 0 else col + 1,
                code=code if isinstance(code, str) else None,
                message=str(d["message"]),
                severity=Severity.ERROR,
            )
        )
    if out.exit_code != 0 and not findings:
        # usage errors, "Cannot read file", duplicate modules, crashes: all on stderr
        raise ParseError(f"mypy exited {out.exit_code}: {tail(out.stderr + out.stdout)}")
    return findings
