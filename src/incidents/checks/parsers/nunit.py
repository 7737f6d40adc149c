"""Pester results: NUnit 2.5 XML (Pester's default report) or a JSON list of failed tests.

The JSON form is what `incidents/checks/ps/pester.ps1` prints when asked for JSON:
`[{"path", "line", "name", "message"}]` (a single object when there is one, since
ConvertTo-Json unwraps one-element arrays).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from incidents.checks.parsers import ParseError, RawFinding, ToolOutput, tail
from incidents.checks.parsers._json import as_int, load
from incidents.vocab import Severity

_AT_LINE = re.compile(r"at [^\n]{0,400}?, (?P<path>(?:[A-Za-z]:)?[^:\n]+\.ps1):(?P<line>\d+)")


def parse(out: ToolOutput) -> list[RawFinding]:
    if out.exit_code not in (0, 1) and not out.report:
        raise ParseError(f"Pester exited {out.exit_code}: {tail(out.stderr or out.stdout)}")
    if not out.report:
        raise ParseError(f"Pester wrote no NUnit report: {tail(out.stderr or out.stdout)}")
    try:
        root = ET.fromstring(out.report)
    except ET.ParseError as exc:
        raise ParseError(f"Pester's NUnit report is not XML: {exc}") from None
    findings: list[RawFinding] = []
    suites: list[tuple[ET.Element, str]] = []
    _walk(root, "", suites)
    for case, path in suites:
        if case.get("result") not in ("Failure", "Error") and case.get("success") != "False":
            continue
        if case.get("executed") == "False":
            continue
        failure = case.find("failure")
        message = failure.findtext("message", "") if failure is not None else ""
        stack = failure.findtext("stack-trace", "") if failure is not None else ""
        m = _AT_LINE.search(stack)
        findings.append(
            RawFinding(
                path=m.group("path") if m else path,
                line=int(m.group("line")) if m else None,
                column=None,
                code="test-failure",
                message=f"{case.get('name', '?')}: {message.strip().splitlines()[0] if message.strip() else 'failed'}",
                severity=Severity.ERROR,
            )
        )
    return findings


def _walk(node: ET.Element, path: str, acc: list[tuple[ET.Element, str]]) -> None:
    for child in node:
        if child.tag == "test-suite":
            here = path
            if child.get("type") == "TestFixture" or (child.get("name", "").endswith(".ps1")):
                here = child.get("name", path) if child.get("name", "").endswith(".ps1") else path
            _walk(child, here, acc)
        elif child.tag == "test-case":
            acc.append((child, path))
        else:
            _walk(child, path, acc)


def parse_pester_json(out: ToolOutput) -> list[RawFinding]:
    if out.exit_code not in (0, 1):
        raise ParseError(f"Pester exited {out.exit_code}: {tail(out.stderr or out.stdout)}")
    text = (out.report if out.report is not None else out.stdout).strip()
    if not text:
        return []
    doc = load(text, "Pester JSON")
    items = [doc] if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise ParseError("Pester JSON is neither an object nor a list")
    findings = []
    for d in items:
        if not isinstance(d, dict) or "path" not in d:
            raise ParseError(f"unexpected Pester result: {d!r}"[:300])
        findings.append(
            RawFinding(
                path=str(d["path"]),
                line=as_int(d.get("line")),
                column=None,
                code="test-failure",
                message=f"{d.get('name', '?')}: {d.get('message', 'failed')}",
                severity=Severity.ERROR,
            )
        )
    return findings
