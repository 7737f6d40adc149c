"""A new bundle (no state.json) owns no step artifacts: whatever its runs folder already
holds (an earlier incident's with the same id, or planted) is set aside before the first
step, so the baseline really runs (real ruff, a planted clean report)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from incidents.layout import Root
from incidents.models import ErrorReport
from incidents.models.report import Judged
from tests.helpers import FAST, TIERS_OFF, Cli, capture, events, use_config

UNDEFINED = "def value() -> int:\n    return undefined_name\n"


def clean_report(target: Path) -> ErrorReport:
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    return ErrorReport.model_validate(
        {
            "attempt_number": 0, "run_id": "r", "workstream_id": "w", "label": "0", "issues": [],
            "summary": {
                "total_issues": 0, "issues_by_tool": {}, "issues_by_category": {},
                "hard_error_count": 0, "style_error_count": 0, "security_issue_count": 0,
                "error_categories_present": [], "has_hard_fail": False, "style_only": False,
            },
            "judged": Judged(files={target.name: digest}).model_dump(),
        }
    )  # fmt: skip


def test_planted_step_artifacts_are_set_aside_and_the_baseline_runs(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    runs = root.runs_dir(incident_id)
    runs.mkdir(parents=True)
    planted = {
        "error_report_attempt_0.json": clean_report(ws / "names.py").model_dump_json(),
        "autofix_step_2.json": json.dumps({"ok": True, "log": []}),
        "run_result.json": json.dumps({"incident_id": incident_id, "final_status": "resolved"}),
    }
    for name, text in planted.items():
        (runs / name).write_text(text)

    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert not (root.bucket("resolved") / incident_id).exists(), "resolved on a planted report"
    assert (root.bucket("escalated") / incident_id).is_dir()
    [aside] = [p for p in runs.iterdir() if p.name.startswith("stale-")]
    assert {p.name: p.read_text() for p in aside.iterdir()} == planted  # kept, not deleted
    report = ErrorReport.model_validate_json((runs / "error_report_attempt_0.json").read_text())
    assert [f.code for f in report.issues if f.hard] == ["F821"]  # the baseline really ran
    assert json.loads((runs / "run_result.json").read_text())["final_status"] == "escalated"
    assert "stale_artifacts" in events(root, incident_id)


def test_a_new_bundle_with_an_empty_runs_folder_sets_nothing_aside(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, ws=ws, target="names.py", content="X = 1\n")
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("resolved") / incident_id).is_dir()
    assert not [p for p in root.runs_dir(incident_id).iterdir() if p.name.startswith("stale-")]
    assert "stale_artifacts" not in events(root, incident_id)


def test_a_skills_attempt_recorded_before_the_first_tick_stays(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`incidents attempt` may record a skill's iteration before the step service first
    ticks the incident: that is not a stale step artifact; only the machine's are moved."""
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    doc = {
        "incident_id": incident_id, "iteration": 1, "started_at": "2026-11-24T03:00:00+00:00",
        "finished_at": "2026-11-24T03:05:00+00:00", "actions_applied": ["edit names.py"],
        "verification_commands": [], "verification_passed": False, "result": "continue",
    }  # fmt: skip
    (tmp_path / "attempt.json").write_text(json.dumps(doc))
    r = cli("attempt", incident_id, "--file", str(tmp_path / "attempt.json"))
    assert r.code == 0, r.err
    runs = root.runs_dir(incident_id)
    (runs / "fixer_step_3.json").write_text("{}")  # a machine's name: set aside
    assert cli("drive", incident_id).code == 0
    assert json.loads((runs / "attempt_01.json").read_text())["result"] == "continue"
    [aside] = [p for p in runs.iterdir() if p.name.startswith("stale-")]
    assert [p.name for p in aside.iterdir()] == ["fixer_step_3.json"]
