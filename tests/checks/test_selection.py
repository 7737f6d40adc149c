"""Which tests the pytest profile runs for a Python target (incidents.checks.selection and
testscan), with real pytest runs on real trees in tmp_path: the tests that import the
target's module, the ones named after it, and the ones the failure's log names, which
must have run and passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from incidents.checks import testscan
from incidents.checks.engine import run_error_pipeline
from incidents.checks.settings import ChecksSettings
from incidents.checks.testscan import named_tests
from incidents.models.pipeline import ErrorPipelineContext
from incidents.models.report import ErrorReport
from tests.checks.test_engine import write_tree

BUGGY = "def add(a: int, b: int) -> int:\n    return a - b\n"
FIXED = "def add(a: int, b: int) -> int:\n    return a + b\n"
TEST_ADD = "def test_add() -> None:\n    assert calc.add(1, 2) == 3\n"


def pytest_on(
    cwd: Path, ctx: ErrorPipelineContext, settings: ChecksSettings, *targets: str,
    named: tuple[str, ...] = (),
) -> ErrorReport:  # fmt: skip
    return run_error_pipeline(
        list(targets), [], ctx, settings=settings, cwd=cwd, tools=["pytest"], named_tests=named
    )


def selected_by(report: ErrorReport) -> list[str]:
    [run] = [r for r in report.tool_runs if r.tool == "pytest"]
    return run.tests


def found(report: ErrorReport) -> set[tuple[str, str | None]]:
    return {(f.path, f.code) for f in report.issues}


def test_the_tests_importing_the_target_or_named_after_it_are_run(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/calc.py": BUGGY,
        "tests/test_arith.py": f"from pkg import calc\n\n\n{TEST_ADD}",
        "tests/unit/test_deep.py": "def test_deep() -> None:\n    import pkg.calc as calc\n\n"
                                   "    assert calc.add(2, 2) == 4\n",
        "tests/test_calc.py": "def test_named_after_it() -> None:\n    assert True\n",
        "tests/test_from.py": "from pkg.calc import add\n\n\ndef test_from() -> None:\n"
                              "    assert add(0, 0) == 0\n",
        "tests/test_package_only.py": "import pkg\n\n\ndef test_pkg() -> None:\n    assert False\n",
        "tests/test_unrelated.py": "def test_other() -> None:\n    assert False\n",
        "tests/test_mentions.py": "# calc is not imported here\ndef test_x() -> None:\n    pass\n",
        ".hidden/test_calc.py": "def test_hidden() -> None:\n    assert False\n",
        "venv/pyvenv.cfg": "", "venv/test_calc.py": "def test_venv() -> None:\n    assert False\n",
    })  # fmt: skip
    report = pytest_on(tmp_path, ctx, settings, "pkg/calc.py")
    assert report.infra_failures == []
    assert selected_by(report) == [
        "tests/test_arith.py",
        "tests/test_calc.py",
        "tests/test_from.py",
        "tests/unit/test_deep.py",
    ]
    assert found(report) == {
        ("tests/test_arith.py", "test-failure"),
        ("tests/unit/test_deep.py", "test-failure"),
    }
    (tmp_path / "pkg/calc.py").write_text(FIXED)
    assert pytest_on(tmp_path, ctx, settings, "pkg/calc.py").issues == []


def test_relative_imports_inside_a_test_package_are_followed(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    write_tree(tmp_path, {
        "app/__init__.py": "",
        "app/calc.py": BUGGY,
        "app/tests/__init__.py": "",
        "app/tests/test_rel.py": f"from .. import calc\n\n\n{TEST_ADD}",
        "app/tests/test_other.py": "from . import helpers\n\n\ndef test_h() -> None:\n    pass\n",
        "app/tests/helpers.py": "",
    })  # fmt: skip
    report = pytest_on(tmp_path, ctx, settings, "app/calc.py")
    assert selected_by(report) == ["app/tests/test_rel.py"]
    assert found(report) == {("app/tests/test_rel.py", "test-failure")}


def test_a_parametrized_test_the_log_names_is_run_and_must_pass(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    """The log names a test in a file that neither imports the target nor is named after
    it: it runs, and the report is clean only once that very test ran and passed."""
    table = ("import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2])\n"
             "def test_table(n: int) -> None:\n    assert open('calc.py').read().count('+') == 1\n")  # fmt: skip
    write_tree(tmp_path, {"calc.py": BUGGY, "checks/test_behaviour.py": table})
    log = ("FAILED checks/test_behaviour.py::test_table[2] - AssertionError: assert 0 == 1\n"
           "1 failed, 1 passed in 0.02s\n")  # fmt: skip
    named = tuple(named_tests(log))
    assert named == ("checks/test_behaviour.py::test_table[2]",)
    report = pytest_on(tmp_path, ctx, settings, "calc.py", named=named)
    assert selected_by(report) == [
        "checks/test_behaviour.py",
        "checks/test_behaviour.py::test_table[2]",
    ]
    assert {f.message.split(":")[2] for f in report.issues} == {"test_table[1]", "test_table[2]"}
    (tmp_path / "calc.py").write_text(FIXED)
    assert pytest_on(tmp_path, ctx, settings, "calc.py", named=named).issues == []
    # exit 0 is not enough: a named test that is gone, or skipped, did not pass
    gone = ("checks/test_behaviour.py::test_table[3]", "checks/test_behaviour.py::test_renamed")
    report = pytest_on(tmp_path, ctx, settings, "calc.py", named=gone)
    assert [(f.code, f.message) for f in report.issues] == [
        ("test-not-run", f"{gone[0]}: named in the failure's log, did not run"),
        ("test-not-run", f"{gone[1]}: named in the failure's log, did not run"),
    ] and report.summary.has_hard_fail
    (tmp_path / "checks/test_behaviour.py").write_text(
        table.replace("def test_table", "@pytest.mark.skip('later')\ndef test_table")
    )
    report = pytest_on(tmp_path, ctx, settings, "calc.py", named=named)
    assert [(f.code, f.message.rpartition(", ")[2]) for f in report.issues] == [
        ("test-not-run", "was skipped")
    ]


def test_a_selected_file_that_yields_no_test_is_not_clean(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    write_tree(tmp_path, {"calc.py": FIXED, "test_calc.py": "import calc\n"})
    report = pytest_on(tmp_path, ctx, settings, "calc.py")
    assert [(f.path, f.code) for f in report.issues] == [("test_calc.py", "no-tests")]
    assert report.tool_runs[0].exit_code == 5 and report.summary.has_hard_fail


def test_named_tests_outside_the_workdir_are_refused_not_run(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    marker = tmp_path / "ran"
    evil = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n\n\ndef test_e() -> None:\n    pass\n"
    write_tree(tmp_path, {"w/calc.py": FIXED, "outside/test_evil.py": evil})
    (tmp_path / "w/test_link.py").symlink_to(tmp_path / "outside/test_evil.py")
    named = ("../outside/test_evil.py::test_e", f"{tmp_path}/outside/test_evil.py::test_e",
             "test_link.py::test_e", "test_missing.py::test_m")  # fmt: skip
    report = pytest_on(tmp_path / "w", ctx, settings, "calc.py", named=named)
    assert not marker.exists()
    assert [i.reason for i in report.infra_failures] == [
        f"{named[0]}, named in the failure's log, cannot be run: "
        "its file is outside the working directory",  # and so is named[1], the same file
        f"{named[2]}, named in the failure's log, cannot be run: "
        "its file is outside the working directory",
        f"{named[3]}, named in the failure's log, cannot be run: "
        "no such file in the working directory",
    ]


def test_named_tests_with_no_test_runner_enabled_are_an_infra_failure(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    write_tree(tmp_path, {"calc.py": FIXED, "test_calc.py": f"import calc\n\n\n{TEST_ADD}"})
    report = run_error_pipeline(["calc.py"], [], ctx, settings=settings, cwd=tmp_path,
                                tools=["ruff"], named_tests=["test_calc.py::test_add"])  # fmt: skip
    [infra] = report.infra_failures
    assert "names 1 test(s) (test_calc.py::test_add) but no test runner" in infra.reason


def test_editing_a_selected_test_file_is_never_a_stale_answer(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    write_tree(tmp_path, {"calc.py": FIXED, "test_calc.py": f"import calc\n\n\n{TEST_ADD}"})
    assert pytest_on(tmp_path, ctx, settings, "calc.py").issues == []
    warm = pytest_on(tmp_path, ctx, settings, "calc.py")
    assert warm.issues == [] and [r.cached for r in warm.tool_runs] == [True]
    assert warm.tool_runs[0].tests == ["test_calc.py"]
    (tmp_path / "test_calc.py").write_text(f"import calc\n\n\n{TEST_ADD.replace('3', '4')}")
    after = pytest_on(tmp_path, ctx, settings, "calc.py")
    assert [r.cached for r in after.tool_runs] == [False]
    assert found(after) == {("test_calc.py", "test-failure")}


def test_the_node_ids_pytest_prints_are_read_from_a_log() -> None:
    log = (
        "\x1b[31mFAILED\x1b[0m test_calc.py::test_add - assert 3 == 4\n"
        "FAILED t/test_a.py::TestX::test_p[1-2] - AssertionError: x - y\n"
        "FAILED t/test_a.py::test_q[a - b] - boom\n"
        "ERROR t/test_coll.py\n"
        "ERROR t/test_a.py::test_err - RuntimeError: fixture exploded\n"
        "t/test_v.py::test_z[3] FAILED                     [ 50%]\n"
        "[gw1] [ 75%] FAILED test_calc.py::test_add\n"
        "1 failed: FAILED test_calc.py::test_add\n"
        "FAILED (errors=1)\nPASSED t/test_a.py::test_ok\nFAILED: no such thing\n"
    )
    assert named_tests(log) == [
        "test_calc.py::test_add", "t/test_a.py::TestX::test_p[1-2]", "t/test_a.py::test_q[a - b]",
        "t/test_coll.py", "t/test_a.py::test_err", "t/test_v.py::test_z[3]",
    ]  # fmt: skip


def test_a_tree_too_big_to_scan_is_an_infra_failure(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    write_tree(tmp_path, {"calc.py": FIXED, "lib/a.py": "", "lib/b.py": "", "test_calc.py": ""})
    monkeypatch.setattr(testscan, "SCAN_MAX_ENTRIES", 3)
    [infra] = pytest_on(tmp_path, ctx, settings, "calc.py").infra_failures
    assert (
        infra.tool == "pytest"
        and "the tests that import the targets cannot be found" in infra.reason
    )
