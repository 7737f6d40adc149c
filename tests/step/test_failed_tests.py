"""Issue 14, "the failing test is never run": an incident about a failing test, captured
and driven through the CLI with the real tools, is resolved only once that test ran and
passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents.layout import Root
from incidents.models import ErrorReport
from tests.helpers import TIERS_OFF, Cli, capture, ctx_of, use_config
from tests.stand_ins import stand_in

BUGGY = "def add(a: int, b: int) -> int:\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"
ALL_TOOLS = '[checks]\ntools = ["ruff", "ruff-format", "mypy", "pytest"]\n'
AIDER_ONLY = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
# a fixer that really fixes the bug
FIX_CALC = "p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('a - b', 'a + b'))"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "calc.py").write_text(BUGGY)
    (path / "test_calc.py").write_text(TEST_CALC)
    return path


def reports(root: Root, incident_id: str) -> list[ErrorReport]:
    folder = root.runs_dir(incident_id)
    return [
        ErrorReport.model_validate_json(p.read_text())
        for p in sorted(folder.glob("error_report_attempt_*.json"))
    ]


def pytest_tests(report: ErrorReport) -> list[str]:
    return [t for r in report.tool_runs if r.tool == "pytest" for t in r.tests]


def test_a_failing_test_named_in_the_message_keeps_the_incident_open(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF)
    incident_id = capture(
        cli, step="test", ws=ws, target="calc.py", message="1 failed: FAILED test_calc.py::test_add"
    )
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "S_SUCCESS" not in r.out and "-> S4_QUARANTINE" in r.out, r.out
    assert not (root.bucket("resolved") / incident_id).exists()
    assert (root.bucket("escalated") / incident_id).is_dir()
    [baseline] = reports(root, incident_id)
    assert pytest_tests(baseline) == ["test_calc.py", "test_calc.py::test_add"]
    assert [(f.tool, f.path, f.code) for f in baseline.issues] == [
        ("pytest", "test_calc.py", "test-failure")
    ]


def test_a_fixer_that_really_fixes_the_code_resolves_it(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """The positive control, with the failure in a pytest log given to capture: the named
    parametrized test is run at the baseline and at the recheck, and passes at the end."""
    (ws / "test_calc.py").write_text(
        "import pytest\n\nfrom calc import add\n\n\n@pytest.mark.parametrize('a', [1, 2])\n"
        "def test_add(a: int) -> None:\n    assert add(a, 2) == a + 2\n"
    )
    log = tmp_path / "pytest.log"
    log.write_text(
        "==== short test summary info ====\n"
        "FAILED test_calc.py::test_add[1] - assert -1 == 3\n"
        "FAILED test_calc.py::test_add[2] - assert 0 == 4\n2 failed in 0.03s\n"
    )
    stand_in(bin_dir, "aider", FIX_CALC)
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY)
    incident_id = capture(
        cli, "--log-file", str(log), step="test", ws=ws, target="calc.py", message="pytest failed"
    )
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "S1_AIDER_RECHECK -> S_SUCCESS" in r.out, r.out
    assert (root.bucket("resolved") / incident_id).is_dir()
    baseline, recheck = reports(root, incident_id)
    named = ["test_calc.py::test_add[1]", "test_calc.py::test_add[2]"]
    assert pytest_tests(baseline) == pytest_tests(recheck) == ["test_calc.py", *named]
    assert {f.code for f in baseline.issues} == {"test-failure"} and recheck.issues == []
    run_result = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    assert run_result["final_status"] == "resolved"


def test_a_named_failing_test_is_run_even_when_the_incident_has_no_target(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Captured with only a verification command that passes (`ruff check calc.py`): the
    test the failure names must still run, and it still fails, so nothing is resolved."""
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF)
    incident_id = capture(
        cli, "--verify", "ruff check calc.py", step="test", ws=ws,
        message="1 failed: FAILED test_calc.py::test_add",
    )  # fmt: skip
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert not (root.bucket("resolved") / incident_id).exists(), r.out
    [baseline] = reports(root, incident_id)
    assert "test_calc.py::test_add" in pytest_tests(baseline)
    assert ("pytest", "test_calc.py", "test-failure") in [
        (f.tool, f.path, f.code) for f in baseline.issues
    ]


# a fixer that leaves the bug and plants the test module's bytecode with its assertion
# gone, valid for the source as it is (a hash-checked pyc, as pytest writes them)
FORGE_PYC = """
import importlib.util, marshal
import pytest
src = pathlib.Path("test_calc.py").read_bytes()
fake = src.replace(b"assert add(1, 2) == 3", b"assert True")
code = compile(fake, os.path.abspath("test_calc.py"), "exec", dont_inherit=True)
tag = sys.implementation.cache_tag
os.makedirs("__pycache__", exist_ok=True)
for name in (f"test_calc.{tag}-pytest-{pytest.__version__}.pyc", f"test_calc.{tag}.pyc"):
    pathlib.Path("__pycache__", name).write_bytes(
        importlib.util.MAGIC_NUMBER + b"\\x03\\x00\\x00\\x00"
        + importlib.util.source_hash(src)[:8] + marshal.dumps(code)
    )
with open("calc.py", "a") as f:
    f.write("# reviewed\\n")
"""


def test_bytecode_planted_in_pycache_is_never_what_the_check_runs(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    stand_in(bin_dir, "aider", FORGE_PYC)
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY + '[tiers]\nsandbox = "none"\n')
    incident_id = capture(
        cli, step="test", ws=ws, target="calc.py", message="1 failed: FAILED test_calc.py::test_add"
    )
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    # no folder is exempt from the snapshot by its name: what it planted is put back
    assert not list((ws / "__pycache__").glob("test_calc.*.pyc"))
    attempts = json.loads((root.runs_dir(incident_id) / "ai_attempts.json").read_text())
    assert any(v.startswith("__pycache__/test_calc.") for v in attempts[0]["violations"])
    assert not (root.bucket("resolved") / incident_id).exists(), r.out
    last = reports(root, incident_id)[-1]
    assert ("pytest", "test_calc.py", "test-failure") in [
        (f.tool, f.path, f.code) for f in last.issues
    ]


def test_a_test_changed_outside_the_fix_does_not_make_one(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """What a fixer's edit to a test, kept across a crash of its tick, leaves behind: the
    fixer only touched its target, yet the test file differs from the baseline's at the
    recheck. The check passes, and still nothing is resolved."""
    # a formatted edit: the target itself stays clean (its own findings would block)
    stand_in(bin_dir, "aider", "open('calc.py', 'a').write('\\n\\n# looked at it\\n')")
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY)
    incident_id = capture(
        cli, step="test", ws=ws, target="calc.py", message="1 failed: FAILED test_calc.py::test_add"
    )
    for _ in range(3):  # plan, baseline check, aider's call
        assert cli("step", incident_id).code == 0
    assert ctx_of(root, incident_id).current_state == "S1_AIDER_FIX"
    (ws / "test_calc.py").write_text(TEST_CALC.replace("== 3", "== -1"))
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert not (root.bucket("resolved") / incident_id).exists(), r.out
    result = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    assert "not a target of the incident: test_calc.py" in result["reason"]


def test_a_test_failure_whose_check_ran_no_test_is_unverifiable_not_flaky(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unittest failure of a file pytest does not collect (`calc_checks.py`): the check
    ran ruff and mypy on the target and no test at all. Nothing was reproduced, and
    nothing was shown gone either: escalated as unverifiable, not closed as flaky."""
    (ws / "test_calc.py").unlink()
    (ws / "calc_checks.py").write_text(
        "import unittest\n\nfrom calc import add\n\n\nclass CalcTest(unittest.TestCase):\n"
        "    def test_add(self) -> None:\n        self.assertEqual(add(1, 2), 3)\n"
    )
    log = tmp_path / "unittest.log"
    log.write_text(
        "F\n======================================================================\n"
        "FAIL: test_add (calc_checks.CalcTest.test_add)\n"
        "----------------------------------------------------------------------\n"
        "AssertionError: -1 != 3\n\nFAILED (failures=1)\n"
    )
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF)
    incident_id = capture(
        cli, "--log-file", str(log), step="unittest", ws=ws, target="calc.py",
        message="python -m unittest calc_checks: 1 test failed",
    )  # fmt: skip
    incident = json.loads((root.inbox / incident_id / "incident.json").read_text())
    assert incident["error_code"] == "TEST_FAILURE", incident
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert not (root.bucket("resolved") / incident_id).exists(), r.out
    result = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    assert "the check ran no test" in result["reason"], result["reason"]
