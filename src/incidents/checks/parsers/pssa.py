"""PSScriptAnalyzer DiagnosticRecords through `ConvertTo-Json` (see ps/pssa.ps1).

ConvertTo-Json writes enums as numbers (Severity: 0 Information, 1 Warning, 2 Error,
3 ParseError) unless `-EnumsAsStrings`; one record comes out as an object, not a list;
no records is empty output.
"""

from __future__ import annotations

from incidents.checks.parsers import ParseError, RawFinding, ToolOutput, tail
from incidents.checks.parsers._json import as_int, load
from incidents.vocab import Category, Severity

_SEVERITY: dict[object, Severity] = {
    0: Severity.INFO, 1: Severity.WARNING, 2: Severity.ERROR, 3: Severity.ERROR,
    "Information": Severity.INFO, "Warning": Severity.WARNING, "Error": Severity.ERROR,
    "ParseError": Severity.ERROR,
}  # fmt: skip


def parse(out: ToolOutput) -> list[RawFinding]:
    if out.exit_code != 0:
        raise ParseError(f"PSScriptAnalyzer exited {out.exit_code}: {tail(out.stderr)}")
    text = out.stdout.strip()
    if not text:
        return []
    doc = load(text, "PSScriptAnalyzer output")
    items = [doc] if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise ParseError("PSScriptAnalyzer output is neither an object nor a list")
    findings = []
    for d in items:
        if not isinstance(d, dict) or "RuleName" not in d:
            raise ParseError(f"unexpected PSScriptAnalyzer record: {d!r}"[:300])
        sev = d.get("Severity")
        parse_error = sev in (3, "ParseError")
        path = d.get("ScriptPath") or d.get("ScriptName") or ""
        findings.append(
            RawFinding(
                path=str(path),
                line=as_int(d.get("Line")),
                column=as_int(d.get("Column")),
                code=str(d["RuleName"]),
                message=str(d.get("Message", "")),
                severity=_SEVERITY.get(sev, Severity.WARNING),
                category=Category.SYNTAX if parse_error else None,
            )
        )
    return findings
