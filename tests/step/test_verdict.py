"""A verdict bound to content: success is granted only on the last canonical report as it
is on disk, clean, with every file it judged unchanged at the close; run_result.json and
a quarantine's metadata.json carry that verdict (real ruff and pytest, a stand-in fixer)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from incidents.digests import combined
from incidents.layout import Root
from incidents.models import ErrorReport, QuarantineMetadata, RunResult
from incidents.models.pipeline import State
from tests.debian import bubblewrap_or_skip
from tests.helpers import FAST, Cli, capture, ctx_of, events, incidents, use_config
from tests.stand_ins import stand_in

UNDEFINED = "def value() -> int:\n    return undefined_name\n"  # ruff F821: hard
REAL_FIX = (
    "p = pathlib.Path(sys.argv[-1]); p.write_text(p.read_text().replace('undefined_name', '1'))"
)
ONLY_AIDER = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
TESTS = '[checks]\ntools = ["ruff", "pytest"]\n'


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project" / "ws"
    path.mkdir(parents=True)
    return path


def up_to_the_recheck(
    cli: Cli, root: Root, ws: Path, fixer: str = REAL_FIX, target: str = "names.py",
    content: str = UNDEFINED,
) -> str:  # fmt: skip
    """Capture, then tick until aider's recheck is committed (the close is the next tick)."""
    incident_id = capture(cli, ws=ws, target=target, content=content)
    for _ in range(10):
        assert cli("step", incident_id).code == 0
        if ctx_of(root, incident_id).current_state is State.S1_AIDER_RECHECK:
            return incident_id
    raise AssertionError(f"never reached the recheck: {ctx_of(root, incident_id)}")


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path) -> None:
    stand_in(bin_dir, "aider", REAL_FIX)
    use_config(tmp_path, monkeypatch, FAST + ONLY_AIDER)


def run_result(root: Root, incident_id: str) -> RunResult:
    return RunResult.model_validate_json(
        (root.runs_dir(incident_id) / "run_result.json").read_text()
    )


def escalated_for(cli: Cli, root: Root, incident_id: str) -> str:
    assert not (root.bucket("resolved") / incident_id).exists(), "resolved on a stale verdict"
    assert (root.bucket("escalated") / incident_id).is_dir()
    ctx = ctx_of(root, incident_id)
    assert ctx.escalation_kind == "verdict_mismatch" and ctx.current_state is State.S4_QUARANTINE
    assert ctx.final_status == "quarantined"
    assert run_result(root, incident_id).final_status == "escalated"
    return ctx.escalation_reason or ""


@pytest.mark.usefixtures("setup")
@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_a_real_fix_is_resolved_with_its_verdict(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    if sandbox == "bwrap":
        bubblewrap_or_skip()
    use_config(tmp_path, monkeypatch, f'{FAST}[tiers]\nsandbox = "{sandbox}"\n{ONLY_AIDER}')
    incident_id = up_to_the_recheck(cli, root, ws)
    assert cli("step", incident_id).code == 0
    assert (root.bucket("resolved") / incident_id).is_dir()
    verdict = run_result(root, incident_id).verdict
    assert verdict is not None
    assert verdict.report == "1" and verdict.workdir == str(ws)
    assert verdict.files["names.py"] == sha(ws / "names.py")  # the fixed file, as judged
    assert "1" in (ws / "names.py").read_text()
    assert set(verdict.tools) == {"ruff", "ruff-format"} and all(verdict.tools.values())
    # an AI fixer ran: under bubblewrap it was contained, with detection only it was not
    assert verdict.contained is (sandbox == "bwrap")


@pytest.mark.usefixtures("setup")
def test_a_target_changed_after_the_recheck_is_not_resolved(cli: Cli, root: Root, ws: Path) -> None:
    incident_id = up_to_the_recheck(cli, root, ws)
    (ws / "names.py").write_text(UNDEFINED)  # e.g. a fixer's leftover process, or a person
    assert cli("step", incident_id).code == 0
    reason = escalated_for(cli, root, incident_id)
    assert "changed since the verdict of error_report_attempt_1.json: names.py (changed)" in reason
    assert "names.py (changed)" in cli("status", incident_id).out
    assert "verdict_mismatch" in events(root, incident_id)


@pytest.mark.usefixtures("setup")
def test_a_check_config_that_appears_after_the_recheck_is_not_resolved(
    cli: Cli, root: Root, ws: Path
) -> None:
    incident_id = up_to_the_recheck(cli, root, ws)
    (ws.parent / "ruff.toml").write_text('[lint]\nignore = ["F"]\n')  # above the workdir
    assert cli("step", incident_id).code == 0
    assert f"{ws.parent / 'ruff.toml'} (appeared)" in escalated_for(cli, root, incident_id)


@pytest.mark.usefixtures("setup")
def test_a_deleted_target_is_named_missing(cli: Cli, root: Root, ws: Path) -> None:
    incident_id = up_to_the_recheck(cli, root, ws)
    (ws / "names.py").unlink()
    assert cli("step", incident_id).code == 0
    assert "names.py (missing)" in escalated_for(cli, root, incident_id)


@pytest.mark.usefixtures("setup")
def test_the_report_on_disk_decides_not_the_copy_in_state_json(
    cli: Cli, root: Root, ws: Path
) -> None:
    incident_id = up_to_the_recheck(cli, root, ws)
    path = root.runs_dir(incident_id) / "error_report_attempt_1.json"
    report = json.loads(path.read_text())
    assert report["summary"]["has_hard_fail"] is False
    first = ErrorReport.model_validate_json(
        (root.runs_dir(incident_id) / "error_report_attempt_0.json").read_text()
    )
    report["issues"] = [f.model_dump(mode="json") for f in first.issues]
    report["summary"] = first.summary.model_dump(mode="json")
    path.write_text(json.dumps(report))  # the disk says it still fails; state.json: clean
    assert cli("step", incident_id).code == 0
    reason = escalated_for(cli, root, incident_id)
    assert "error_report_attempt_1.json on disk is not clean (1 hard finding(s)" in reason


@pytest.mark.usefixtures("setup")
@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda p: p.unlink(), "is missing"),
        (lambda p: p.write_text("{torn"), "cannot be read"),
        (lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "label": "0"})), "label"),
    ],
)
def test_a_missing_or_unreadable_report_is_not_a_verdict(
    cli: Cli, root: Root, ws: Path, damage: object, said: str
) -> None:
    incident_id = up_to_the_recheck(cli, root, ws)
    path = root.runs_dir(incident_id) / "error_report_attempt_1.json"
    assert callable(damage)
    damage(path)
    assert cli("step", incident_id).code == 0
    reason = escalated_for(cli, root, incident_id)
    assert str(path) in reason and said in reason


@pytest.mark.usefixtures("setup")
def test_a_redo_of_the_close_step_decides_the_same(cli: Cli, root: Root, ws: Path) -> None:
    """The decision is kept by its step: the verdict artifact, written before the commit,
    is what a redo after a crash records, whatever the files are by then."""
    incident_id = up_to_the_recheck(cli, root, ws)
    step = ctx_of(root, incident_id).step
    kept = root.runs_dir(incident_id) / f"verdict_step_{step}.json"
    kept.write_text(json.dumps({"verdict": None, "problem": "decided before the crash"}))
    assert cli("step", incident_id).code == 0
    assert "not resolved: decided before the crash" in escalated_for(cli, root, incident_id)


def test_the_quarantine_metadata_carries_the_last_verdict(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    stand_in(bin_dir, "aider", "sys.stdin.read()")  # does nothing
    use_config(tmp_path, monkeypatch, TESTS + ONLY_AIDER)
    (ws / "test_names.py").write_text(
        "from names import value\n\n\ndef test_value():\n    assert value() == 1\n"
    )
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    assert cli("drive", incident_id).code == 0
    folder = root.bucket("escalated") / incident_id
    meta = QuarantineMetadata.model_validate_json((folder / "metadata.json").read_text())
    assert meta.verdict is not None and meta.verdict.report == "1"
    assert meta.verdict.files["names.py"] == sha(ws / "names.py")
    assert meta.verdict.files["test_names.py"] == sha(ws / "test_names.py")
    assert meta.verdict.tests == ["test_names.py"] and "pytest" in meta.verdict.tools
    assert run_result(root, incident_id).verdict == meta.verdict


# -- a redo decides on the same record; the close judges a saved success again ----------

DRIVER = Path(__file__).with_name("kill_driver.py")


def killed_before_the_commit(incident_id: str) -> None:
    """`incidents step` in a real process, SIGKILLed just before the state.json write that
    commits its step, its step's artifacts written."""
    p = subprocess.run([sys.executable, str(DRIVER), "1", "before", "step", incident_id],
                       env=dict(os.environ), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stdout, p.stderr)


@pytest.mark.usefixtures("setup")
def test_a_kill_between_the_verdict_and_the_commit_judges_the_success_again(
    cli: Cli, root: Root, ws: Path
) -> None:
    """The close wrote a success verdict and was killed before committing it; the target
    is changed before the redo. A saved success is not trusted: it is judged again."""
    incident_id = up_to_the_recheck(cli, root, ws)
    step = ctx_of(root, incident_id).step
    killed_before_the_commit(incident_id)
    kept = json.loads((root.runs_dir(incident_id) / f"verdict_step_{step}.json").read_text())
    assert kept["problem"] is None and kept["verdict"]["files"]["names.py"]
    (ws / "names.py").write_text(UNDEFINED)  # e.g. a fixer's leftover process
    assert cli("step", incident_id).code == 0
    assert "names.py (changed)" in escalated_for(cli, root, incident_id)


@pytest.mark.usefixtures("setup")
def test_a_kill_after_a_clean_verdict_with_nothing_changed_still_resolves(
    cli: Cli, root: Root, ws: Path
) -> None:
    incident_id = up_to_the_recheck(cli, root, ws)
    killed_before_the_commit(incident_id)
    assert cli("step", incident_id).code == 0
    assert (root.bucket("resolved") / incident_id).is_dir()


@pytest.mark.usefixtures("setup")
def test_a_redo_of_a_check_takes_the_targets_digest_from_its_report(
    cli: Cli, root: Root, ws: Path
) -> None:
    """The recheck wrote its report and was killed before its commit; the target changes
    before the redo, which reuses the report: the check's digest is the report's record of
    the target (one record), not the file as it is at the redo."""
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    for _ in range(10):
        assert cli("step", incident_id).code == 0
        if ctx_of(root, incident_id).current_state is State.S1_AIDER_FIX:
            break
    killed_before_the_commit(incident_id)
    report = ErrorReport.model_validate_json(
        (root.runs_dir(incident_id) / "error_report_attempt_1.json").read_text()
    )
    assert report.judged is not None
    judged = report.judged.files["names.py"]
    (ws / "names.py").write_text(UNDEFINED)
    assert cli("step", incident_id).code == 0
    ctx = ctx_of(root, incident_id)
    assert ctx.current_state is State.S1_AIDER_RECHECK
    assert ctx.check_digests[-1] == combined({"names.py": judged}, ["names.py"])


@pytest.mark.usefixtures("setup")
def test_an_attempt_record_says_escalated_when_the_close_finds_a_mismatch(
    cli: Cli, root: Root, ws: Path
) -> None:
    incident_id = up_to_the_recheck(cli, root, ws)
    path = root.runs_dir(incident_id) / "attempt_01.json"
    assert json.loads(path.read_text())["result"] == "resolved"  # foreseen by the recheck
    (ws / "names.py").write_text(UNDEFINED)
    assert cli("step", incident_id).code == 0
    reason = escalated_for(cli, root, incident_id)
    attempt = json.loads(path.read_text())
    assert attempt["result"] == "escalated" and attempt["verdict_problem"] == reason


@pytest.mark.usefixtures("setup")
def test_verify_archive_does_not_hang_on_a_judged_file_replaced_by_a_fifo(
    cli: Cli, root: Root, ws: Path
) -> None:
    incident_id = up_to_the_recheck(cli, root, ws)
    assert cli("step", incident_id).code == 0
    assert (root.bucket("resolved") / incident_id).is_dir()
    (ws / "names.py").unlink()
    os.mkfifo(ws / "names.py")
    p = incidents("verify-archive", incident_id, timeout=60)
    assert "names.py (missing)" in p.stdout, p.stdout + p.stderr


# a fixer that does not fix, and writes the recheck's report for it: clean, as if judged
PLANT = r"""
import json
runs = next(pathlib.Path(os.environ["PLANT_ROOT"], "error_runs").iterdir())  # its only one
base = json.loads((runs / "error_report_attempt_0.json").read_text())
base["label"] = "1"
base["issues"] = []
base["summary"] = {"total_issues": 0, "issues_by_tool": {}, "issues_by_category": {},
    "hard_error_count": 0, "style_error_count": 0, "security_issue_count": 0,
    "error_categories_present": [], "has_hard_fail": False, "style_only": False}
(runs / "error_report_attempt_1.json").write_text(json.dumps(base))
"""


def test_a_report_a_fixer_planted_for_the_recheck_is_set_aside_not_reused(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:  # fmt: skip
    """With detection only (no bubblewrap), a fixer can write into the reports root: it
    writes the recheck's report before the recheck runs. The recheck must not take it for
    its own report of an earlier, crashed run: once the fixer is gone, step artifacts no
    step has written yet are set aside, and the recheck really runs."""
    stand_in(bin_dir, "aider", PLANT)
    monkeypatch.setenv("PLANT_ROOT", str(root.path))  # the prompt it gets is a copy elsewhere
    aider = ONLY_AIDER.replace('mode = "on"', 'mode = "on"\nenv = ["PLANT_ROOT"]', 1)
    use_config(tmp_path, monkeypatch, f'{FAST}[tiers]\nsandbox = "none"\n{aider}')
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    assert cli("drive", incident_id).code == 0
    assert not (root.bucket("resolved") / incident_id).exists(), "resolved on a planted report"
    assert (root.bucket("escalated") / incident_id).is_dir()
    # the root watch of detection mode catches it first: the planted report is moved
    # into .state/stray/ (kept), and the attempt fails as tamper, never checked at all
    stray = [p.name for p in (root.state / "stray" / incident_id).iterdir()]
    assert any(name.endswith("error_report_attempt_1.json") for name in stray), stray
    [attempt] = ctx_of(root, incident_id).ai_attempts
    assert not (root.runs_dir(incident_id) / "error_report_attempt_1.json").exists()
    result = (root.runs_dir(incident_id) / "run_result.json").read_text()
    assert "tamper: the fixer changed the reports root" in result, result
