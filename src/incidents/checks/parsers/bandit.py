"""`bandit -f json`: results[]; errors[] are files bandit could not parse (syntax)."""

from __future__ import annotations

import posixpath

from incidents.checks.parsers import ParseError, RawFinding, ToolOutput, tail
from incidents.checks.parsers._json import as_int, load
from incidents.vocab import Severity

_SEVERITY = {"HIGH": Severity.ERROR, "MEDIUM": Severity.WARNING, "LOW": Severity.INFO}


def parse(out: ToolOutput) -> list[RawFinding]:
    if out.exit_code not in (0, 1):
        raise ParseError(f"bandit exited {out.exit_code}: {tail(out.stderr)}")
    doc = load(out.stdout, "bandit output")
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ParseError("bandit output has no results list")
    findings = []
    for r in doc["results"]:
        if not isinstance(r, dict) or "filename" not in r:
            raise ParseError(f"unexpected bandit result: {r!r}"[:300])
        col = as_int(r.get("col_offset"))
        findings.append(
            RawFinding(
                path=posixpath.normpath(str(r["filename"])),
                line=as_int(r.get("line_number")),
                column=None if col is None else col + 1,
                code=str(r.get("test_id") or "bandit"),
                message=str(r.get("issue_text", "")),
                severity=_SEVERITY.get(str(r.get("issue_severity", "")).upper(), Severity.WARNING),
            )
        )
    return findings
