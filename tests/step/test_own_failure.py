"""Issue 14, "the findings of its first baseline must be gone": what an incident's own
failure is, judged with real ruff, mypy and pytest on real projects driven through the CLI.

- the baseline check defines the incident: nothing it finds is excused there, so a hard
  finding at the baseline is never "not reproduced";
- every test the test runner selected through a target (it imports the target, is named
  after it, or the failure names it) is the incident's own: a recheck where it still fails
  is not a success, whatever else the fixer mended;
- a target is compared in one canonical form: `./calc.py` is `calc.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.bundles import drop, rejected_reason
from tests.helpers import TIERS_OFF, Cli, capture, ctx_of, use_config
from tests.stand_ins import stand_in

ALL_TOOLS = '[checks]\ntools = ["ruff", "ruff-format", "mypy", "pytest"]\n'
AIDER_ONLY = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
SUBTRACTS = "def add(a: int, b: int) -> int:\n    return a - b\n"
TEST_MATH = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"


def hard(root: Root, incident_id: str) -> set[tuple[str, str]]:
    report = ctx_of(root, incident_id).last_error_report
    assert report is not None
    return {(f.tool, f.path) for f in report.issues if f.hard}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """calc.py subtracts; tests/test_math.py (not named after calc) imports it and fails."""
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "calc.py").write_text(SUBTRACTS)
    (ws / "tests" / "test_math.py").write_text(TEST_MATH)
    return ws


def test_a_hard_failure_at_the_baseline_is_never_not_reproduced(
    cli: Cli, root: Root, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message names no test; the import scan runs tests/test_math.py, which fails.
    That failure is in the very report that defines the incident: it blocks, and with no
    fixer the incident is escalated, not resolved as "not reproduced (flaky)"."""
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF)
    incident_id = capture(
        cli, step="tests", ws=project, target="calc.py", message="the test suite failed"
    )
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert not (root.bucket("resolved") / incident_id).is_dir(), r.out
    assert (root.bucket("escalated") / incident_id).is_dir(), r.out
    assert hard(root, incident_id) == {("pytest", "tests/test_math.py")}
    assert ctx_of(root, incident_id).own_files == ["calc.py", "tests/test_math.py"]


def test_a_fix_of_something_else_leaves_the_incidents_failing_test_and_is_not_fixed(
    cli: Cli, root: Root, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:  # fmt: skip
    """calc.py also has an undefined name; the fixer mends only that. The incident's only
    failing test (found by the import scan) still fails: not a success."""
    (project / "calc.py").write_text(SUBTRACTS + "\n\ndef other() -> int:\n    return undefined\n")
    stand_in(
        bin_dir, "aider",
        "p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('undefined', '0'))",
    )  # fmt: skip
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY)
    incident_id = capture(cli, step="tests", ws=project, target="calc.py", message="tests failed")
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "undefined" not in (project / "calc.py").read_text()  # the fixer did run
    assert not (root.bucket("resolved") / incident_id).is_dir(), r.out
    assert (root.bucket("escalated") / incident_id).is_dir(), r.out
    assert hard(root, incident_id) == {("pytest", "tests/test_math.py")}


def test_a_real_fix_of_the_failing_test_is_still_resolved(
    cli: Cli, root: Root, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:  # fmt: skip
    """Positive control for the two above."""
    stand_in(
        bin_dir, "aider",
        "p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('a - b', 'a + b'))",
    )  # fmt: skip
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY)
    incident_id = capture(cli, step="tests", ws=project, target="calc.py", message="tests failed")
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert (root.bucket("resolved") / incident_id).is_dir(), r.out
    result = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    assert result["outcome"] == "fixed", result


def test_a_target_not_in_canonical_form_is_refused_at_pickup(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`./calc.py` names calc.py, but findings say `calc.py`: compared as stored, the
    target's own undefined name looked "not its own". A bundle must store a target as
    capture does; one that does not is set aside with the form to use."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a: int, b: int) -> int:\n    return a + undefined_b\n")
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF)
    folder = drop(root, "dotslash", ws, python_files=["./calc.py"])
    r = cli("drive", folder.name)
    assert r.code != 0 and "error_rejected" in r.err, r.out
    reason = rejected_reason(root, folder.name)
    assert "incident.json: python_files './calc.py': not in canonical form" in reason, reason
    assert "'calc.py'" in reason
