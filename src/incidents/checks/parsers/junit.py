"""pytest's JUnit XML (`-o junit_family=xunit1`, which keeps `file` and `line`).

One finding per <failure> or <error> (a test failing and erroring on teardown is two,
as pytest counts it). Collection errors are <error> cases whose name is the module.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from incidents.checks.parsers import ParseError, RawFinding, ToolOutput, tail
from incidents.vocab import Severity

NO_TESTS = 5


def _line(value: str | None) -> int | None:
    try:
        return int(value) + 1 if value is not None else None  # xunit1 lines are 0-based
    except ValueError:
        return None


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def parse(out: ToolOutput) -> list[RawFinding]:
    if out.exit_code not in (0, 1, 2, NO_TESTS):
        raise ParseError(f"pytest exited {out.exit_code}: {tail(out.stdout + out.stderr)}")
    if not out.report:
        raise ParseError(f"pytest wrote no JUnit report: {tail(out.stdout + out.stderr)}")
    try:
        root = ET.fromstring(out.report)
    except ET.ParseError as exc:
        raise ParseError(f"pytest's JUnit report is not XML: {exc}") from None
    findings: list[RawFinding] = []
    for case in root.iter("testcase"):
        for child in case:
            if child.tag not in ("failure", "error"):
                continue
            name, classname = case.get("name", ""), case.get("classname", "")
            test_id = f"{classname}::{name}" if classname else name
            what = child.get("message") or _first_line(child.text)
            collection = child.tag == "error" and what == "collection failure"
            if collection:
                what = _last_error_line(child.text) or what
            findings.append(
                RawFinding(
                    path=case.get("file") or classname.replace(".", "/") + ".py",
                    line=_line(case.get("line")),
                    column=None,
                    code="collection-error" if collection else f"test-{child.tag}",
                    message=f"{test_id}: {_first_line(what)}"[:2000],
                    severity=Severity.ERROR,
                )
            )
    if out.exit_code in (1, 2) and not findings:
        raise ParseError(f"pytest exited {out.exit_code} but its report lists no failure")
    return findings


def _last_error_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip().startswith("E ")]
    return lines[-1][1:].strip() if lines else ""
