"""Every parser on outputs captured from the real tools (tests/fixtures/tools/)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from incidents.checks.parsers import ParseError, ToolOutput, junit, mypy, ruff
from incidents.vocab import Category, Severity
from tests.checks.conftest import captured, parse

W = "/tmp/incidents-capture"


def test_ruff_findings_keep_codes_rows_and_syntax_errors() -> None:
    found = parse("ruff-json", "ruff_findings")
    assert [(f.path, f.line, f.column, f.code) for f in found] == [
        (f"{W}/bad.py", 1, 1, "I001"),
        (f"{W}/bad.py", 1, 8, "F401"),
        (f"{W}/bad.py", 2, 8, "F401"),
        (f"{W}/bad.py", 2, 13, "F401"),
        (f"{W}/bad.py", 6, 5, "F841"),
        (f"{W}/bad.py", 6, 9, "F821"),
        (f"{W}/syn.py", 1, 7, "invalid-syntax"),
        (f"{W}/syn.py", 1, 8, "invalid-syntax"),
    ]
    assert found[5].message == "Undefined name `undefined_name`"


def test_ruff_clean_and_io_error() -> None:
    assert parse("ruff-json", "ruff_clean") == []
    [io] = parse("ruff-json", "ruff_missing_file")
    assert io.code == "E902"


@pytest.mark.parametrize(
    ("stdout", "code"), [("", 2), ("not json", 1), ('{"a": 1}', 1), ("[]", 2), ("[]", None)]
)
def test_ruff_unreadable_output_is_a_parse_error(stdout: str, code: int | None) -> None:
    with pytest.raises(ParseError):
        ruff.parse_check(ToolOutput(stdout, "error: boom", code))


def test_ruff_format_reports_files_and_leaves_syntax_to_ruff_check() -> None:
    found = parse("ruff-format-json", "ruff_format_findings")
    assert [(f.path, f.code) for f in found] == [(f"{W}/fmt.py", "unformatted")]
    assert parse("ruff-format-json", "ruff_format_clean") == []


def test_black_reports_files_and_skips_unparsable_ones() -> None:
    found = parse("black-text", "black_findings")
    assert [(f.path, f.code) for f in found] == [("fmt.py", "black")]
    assert parse("black-text", "black_clean") == []


def test_black_internal_error_is_a_parse_error() -> None:
    out = ToolOutput(
        "", "error: cannot format x.py: INTERNAL ERROR: Black produced invalid code\n", 123
    )
    with pytest.raises(ParseError, match="INTERNAL ERROR"):
        parse_black(out)


def parse_black(out: ToolOutput) -> object:
    from incidents.checks.parsers import black

    return black.parse(out)


def test_mypy_findings_with_one_based_columns() -> None:
    found = parse("mypy-json", "mypy_findings")
    assert [(f.path, f.line, f.column, f.code) for f in found] == [
        ("bad.py", 6, 9, "name-defined"),
        ("bad.py", 7, 12, "return-value"),
    ]
    assert all(f.severity is Severity.ERROR for f in found)


def test_mypy_syntax_error_stops_it_and_is_reported() -> None:
    found = parse("mypy-json", "mypy_syntax")
    assert {f.path for f in found} == {"syn.py"}
    assert {f.code for f in found} == {"syntax"}


def test_mypy_clean_and_cannot_read_file() -> None:
    assert parse("mypy-json", "mypy_clean") == []
    with pytest.raises(ParseError, match="Cannot read file"):
        parse("mypy-json", "mypy_missing_file")


def test_mypy_notes_are_not_findings() -> None:
    line = '{"file": "a.py", "line": 1, "column": 0, "message": "See docs", "hint": null, "code": null, "severity": "note"}'
    err = '{"file": "a.py", "line": 1, "column": 0, "message": "bad", "hint": null, "code": "misc", "severity": "error"}'
    assert [f.message for f in mypy.parse(ToolOutput(f"{line}\n{err}\n", "", 1))] == ["bad"]


def test_pytest_failures_errors_and_collection_errors() -> None:
    found = parse("junit-xml", "pytest_failures")
    assert [(f.path, f.line, f.code) for f in found] == [
        ("t/test_coll.py", None, "collection-error"),
        ("t/test_a.py", 8, "test-failure"),
        ("t/test_a.py", 17, "test-error"),
    ]
    assert "No module named 'nonexistent_module_xyz'" in found[0].message
    assert found[1].message == "t.test_a::test_fail: AssertionError: one is not two"


def test_pytest_no_tests_collected_is_clean_unless_tests_were_selected() -> None:
    assert parse("junit-xml", "pytest_no_tests") == []
    no_tests = captured("pytest_no_tests")
    found = junit.parse(replace(no_tests, selected=("test_calc.py", "test_calc.py::test_add")))
    assert [(f.path, f.code, f.message) for f in found] == [
        ("test_calc.py", "no-tests", "test_calc.py: selected, but pytest collected no test from it"),
        ("test_calc.py", "test-not-run", "test_calc.py::test_add: named in the failure's log, did not run"),
    ]  # fmt: skip


def test_a_selected_test_counts_only_when_it_ran_and_passed() -> None:
    """test_ok passed; test_skip was skipped; test_gone is not there; test_fail and test_err
    have their own findings, and so does every test of t/test_coll.py (it did not import)."""
    out = replace(captured("pytest_failures"), selected=(
        "t/test_a.py", "t/test_coll.py", "t/test_a.py::test_ok", "t/test_a.py::test_skip",
        "t/test_a.py::test_gone", "t/test_a.py::test_fail", "t/test_a.py::test_err",
        "t/test_coll.py::test_x", "t/test_b.py",
    ))  # fmt: skip
    extra = junit.parse(out)[len(parse("junit-xml", "pytest_failures")) :]
    assert [(f.path, f.code, f.message.partition(": ")[2]) for f in extra] == [
        ("t/test_a.py", "test-not-run", "named in the failure's log, was skipped"),
        ("t/test_a.py", "test-not-run", "named in the failure's log, did not run"),
        ("t/test_b.py", "no-tests", "selected, but pytest collected no test from it"),
    ]


@pytest.mark.parametrize(
    ("classname", "name", "node"),
    [
        ("test_calc", "test_add", "test_calc.py::test_add"),
        ("test_calc", "test_add[1-2-3]", "test_calc.py::test_add[1-2-3]"),
        ("tests.test_calc.TestAdd", "test_one[a.b]", "tests/test_calc.py::TestAdd::test_one[a.b]"),
        ("", "tests.test_calc", "tests/test_calc.py"),
    ],
)
def test_junit_cases_map_back_to_node_ids(classname: str, name: str, node: str) -> None:
    path = node.partition("::")[0]
    file = path if "::" in node else node
    case = f'<testcase classname="{classname}" name="{name}" file="{file}" line="3"/>'
    report = f"<testsuites><testsuite>{case}</testsuite></testsuites>"
    assert junit.parse(ToolOutput("", "", 0, report, selected=(node,))) == []
    assert junit.parse(ToolOutput("", "", 0, report, selected=(node + "x",)))[0].code in (
        "test-not-run", "no-tests",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("code", "report"),
    [(3, "<testsuites/>"), (4, None), (1, None), (1, "<not xml"), (1, "<testsuites/>")],
)
def test_pytest_internal_usage_or_missing_report_is_a_parse_error(
    code: int, report: str | None
) -> None:
    with pytest.raises(ParseError):
        junit.parse(ToolOutput("", "", code, report))


def test_bandit_findings_map_severity_and_normalise_paths() -> None:
    found = parse("bandit-json", "bandit_findings")
    assert [(f.path, f.line, f.code, f.severity) for f in found] == [
        ("sec.py", 1, "B404", Severity.INFO),
        ("sec.py", 5, "B602", Severity.ERROR),
        ("sec.py", 6, "B105", Severity.INFO),
        ("sec.py", 7, "B101", Severity.INFO),
    ]
    assert parse("bandit-json", "bandit_clean") == []


def test_pssa_list_single_and_empty_outputs() -> None:
    found = parse("pssa-json", "pssa_findings")
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found] == [
        ("deploy.ps1", 3, "PSAvoidUsingCmdletAliases"),
        ("deploy.ps1", 7, "PSAvoidUsingPlainTextForPassword"),
        ("deploy.ps1", 9, "PSUseConsistentIndentation"),
        ("deploy.ps1", 11, "PSAvoidUsingWriteHost"),
        ("broken.ps1", 2, "MissingEndCurlyBrace"),
    ]
    assert found[-1].category is Category.SYNTAX and found[-1].severity is Severity.ERROR
    [one] = parse("pssa-json", "pssa_single")
    assert (one.code, one.severity) == ("PSUseApprovedVerbs", Severity.WARNING)
    assert parse("pssa-json", "pssa_clean") == []
    with pytest.raises(ParseError, match="PSScriptAnalyzer"):
        parse("pssa-json", "pssa_module_missing")


def test_pester_nunit_failures_point_at_the_test_line() -> None:
    found = parse("nunit-xml", "pester_failures")
    assert [(f.path.rsplit("/", 1)[-1], f.line) for f in found] == [
        ("Deploy.Tests.ps1", 5),
        ("thing.ps1", 12),
    ]
    assert found[0].message == "Get-Thing.returns two: Expected 2, but got 1."
    [one] = parse("pester-json", "pester_json_single")
    assert (one.path, one.line) == ("tests/Deploy.Tests.ps1", 5)
