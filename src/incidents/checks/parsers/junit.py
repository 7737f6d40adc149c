"""pytest's JUnit XML (`-o junit_family=xunit1`, which keeps `file` and `line`).

One finding per <failure> or <error> (a test failing and erroring on teardown is two,
as pytest counts it). Collection errors are <error> cases whose name is the module.
With a selection (`ToolOutput.selected`), also one finding per selected file that yielded
no test (`no-tests`) and per selected test id that did not run and pass (`test-not-run`):
an exit code of 0 is not evidence that a test passed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from incidents.checks.parsers import ParseError, RawFinding, ToolOutput, tail
from incidents.vocab import Category, Severity

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
    return findings + unmet(out.selected, outcomes(root)) + guard(out, root)


GUARD_PROPERTY = "incidents-guard"  # checks/pytest_guard.py
GUARD_UNAVAILABLE = "incidents-guard: unavailable: "  # checks/pytest_guard.UNAVAILABLE


def guard(out: ToolOutput, root: ET.Element) -> list[RawFinding]:
    """A hard `runner-patched` finding unless the guard plugin's verdict says `intact`."""
    if not out.guarded:
        return []
    verdicts = [
        p.get("value", "") for p in root.iter("property") if p.get("name") == GUARD_PROPERTY
    ]
    if verdicts == ["intact"]:
        return []
    if not verdicts:
        for line in (out.stderr or "").splitlines():
            if line.startswith(GUARD_UNAVAILABLE):  # the guard could not work here
                raise ParseError(
                    f"the test runner's guard could not run: {line[len(GUARD_UNAVAILABLE) :][:500]}"
                )
        what = ("the test runner's guard gave no verdict: the run was cut short or its "
                "report was written by something else")  # fmt: skip
    else:
        what = f"the test runner was patched during the run ({'; '.join(verdicts)[:1500]})"
    path = next((s.partition("::")[0] for s in out.selected), "pytest")
    return [RawFinding(path, None, None, "runner-patched", what + ": not a fix",
                       Severity.ERROR, Category.TAMPER)]  # fmt: skip


def _last_error_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip().startswith("E ")]
    return lines[-1][1:].strip() if lines else ""


def node_id(case: ET.Element) -> tuple[str, str]:
    """(pytest's node id of a <testcase>, its file): `file::Class::name[params]`, or the
    file alone for a module-level case (a collection error, a module skipped)."""
    path, classname, name = case.get("file") or "", case.get("classname", ""), case.get("name", "")
    if not path:  # not xunit1: the module's path is the best guess
        path = (classname or name).replace(".", "/") + ".py"
    module = path.removesuffix(".py").replace("/", ".")
    if not classname and name == module:
        return path, path
    inner = classname[len(module) + 1 :].split(".") if classname.startswith(module + ".") else []
    return "::".join([path, *filter(None, inner), name]), path


def outcomes(root: ET.Element) -> dict[str, tuple[str, str]]:
    """node id -> (its file, passed | failed | error | skipped), a failure winning over a
    later pass of the same id (a test failing on teardown is reported twice)."""
    found: dict[str, tuple[str, str]] = {}
    rank = {"passed": 0, "skipped": 1, "error": 2, "failure": 3}
    for case in root.iter("testcase"):
        node, path = node_id(case)
        tags = [c.tag for c in case if c.tag in rank] or ["passed"]
        outcome = max(tags, key=rank.__getitem__)
        if node not in found or rank[outcome] > rank[found[node][1]]:
            found[node] = (path, outcome)
    return found


def unmet(selected: tuple[str, ...], seen: dict[str, tuple[str, str]]) -> list[RawFinding]:
    """A finding per selected file no test case came from, and per selected test id that
    did not run and pass (without brackets: each of its parametrizations); none for a test
    id that failed or errored, or whose file did not import: those have their own finding."""
    files = {path for path, _ in seen.values()}
    broken = {path for node, (path, outcome) in seen.items() if node == path and outcome == "error"}
    by_function: dict[str, list[tuple[str, str]]] = {}
    for node, (_, outcome) in seen.items():
        by_function.setdefault(node.partition("[")[0], []).append((node, outcome))
    findings: list[RawFinding] = []
    for wanted in selected:
        path, sep, _ = wanted.partition("::")
        if not sep:
            if path not in files:
                message = f"{path}: selected, but pytest collected no test from it"
                findings.append(RawFinding(path, None, None, "no-tests", message, Severity.ERROR))
            continue
        function, bracket, _ = wanted.partition("[")
        ran = [o for n, o in by_function.get(function, []) if not bracket or n == wanted]
        if path in broken or any(o in ("failure", "error") for o in ran):
            continue
        if not ran or "skipped" in ran:
            why = "was skipped" if ran else "did not run"
            message = f"{wanted}: named in the failure's log, {why}"
            findings.append(RawFinding(path, None, None, "test-not-run", message, Severity.ERROR))
    return findings
