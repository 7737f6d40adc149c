"""Build a realistic archive for the review tests: real captures driven by the real service
(quarantine after AI tiers, no fixer, infra failure, resolved by autofix) plus hand-written
bundles for what the service does not make on demand (a handoff, a broken file, an old
bundle without original_scripts/)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import (
    CLEAN,
    FAST,
    MESSY,
    TIERS_OFF,
    TWO_TYPE_ERRORS,
    TYPED,
    Cli,
    capture,
    use_config,
)
from tests.stand_ins import on_path, stand_in

TIERS_ON = '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "on"\n[tiers.claude]\nmode = "on"\n'
MISSING_TOOL = '[checks.profiles.ruff]\nargv = ["definitely-not-installed-linter", "{files}"]\n'


def _capture_and_drive(cli: Cli, ws: Path, step: str, name: str, content: str) -> str:
    incident_id = capture(cli, step=step, ws=ws, target=name, content=content)
    r = cli("drive", incident_id)
    assert r.code == 0, r.out + r.err
    return incident_id


def build_real(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Four incidents driven for real; returns {kind: incident_id}."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    bin_dir = on_path(tmp_path, monkeypatch)
    ids: dict[str, str] = {}
    # aider fixes one type error and says so; codex and claude change nothing -> quarantine
    stand_in(
        bin_dir,
        "aider",
        "p = pathlib.Path('typed.py'); p.write_text(p.read_text().replace('\"one\"', '1'))\n"
        "print('aider: replaced the string literal returned by first()')",
    )
    stand_in(bin_dir, "codex", "sys.stdin.read()")
    stand_in(bin_dir, "claude", "sys.stdin.read(); print('claude: I could not fix second()')")
    use_config(tmp_path, monkeypatch, TYPED + TIERS_ON, name="ai")
    ids["ai"] = _capture_and_drive(cli, ws, "typecheck", "typed.py", TWO_TYPE_ERRORS)
    use_config(tmp_path, monkeypatch, TYPED + TIERS_OFF, name="plain")
    ids["quarantined"] = _capture_and_drive(cli, ws, "types", "totals.py", TWO_TYPE_ERRORS)
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF + MISSING_TOOL, name="infra")
    ids["infra"] = _capture_and_drive(cli, ws, "lint", "clean.py", CLEAN)
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF, name="fast")
    ids["resolved"] = _capture_and_drive(cli, ws, "format", "messy.py", MESSY)
    monkeypatch.delenv("INCIDENTS_CONFIG")
    return ids


def _dump(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))


def write_handoff_bundle(root: Root, incident_id: str, *, at: str, step: str = "deploy") -> Path:
    """An escalated bundle written by hand: a handoff attempt, no original_scripts/."""
    folder = root.bucket("escalated") / incident_id
    incident = {
        "incident_id": incident_id, "status": "escalated", "created_at": at, "updated_at": at,
        "run_id": f"run_{incident_id}", "step": step, "failure_class": "code",
        "message": "deploy.py: tests failed", "error_signature": f"code | {step} | tests failed",
        "error_code": "TEST_FAILURE", "occurrences": 3, "last_seen": at,
        "python_files": ["deploy.py"],
    }  # fmt: skip
    _dump(folder / "incident.json", incident)
    (folder / "status.txt").write_text("escalated\n")
    _dump(
        folder / "metadata.json",
        {
            "incident_id": incident_id, "finished_at": at, "final_status": "quarantined",
            "reason": "same error after 2 attempts", "last_state": "S4_QUARANTINE",
            "escalation_kind": "repeated_error", "final_error_counts": {"test": 1},
            "target_files": ["deploy.py"],
        },
    )  # fmt: skip
    issue = {"tool": "pytest", "path": "tests/test_deploy.py", "line": 9, "code": "failed",
             "category": "test", "message": "test_rollback failed"}  # fmt: skip
    lint = {"tool": "ruff", "path": "deploy.py", "line": 1, "code": "F401", "category": "lint",
            "message": "`os` imported but unused"}  # fmt: skip
    reports = folder / "error_reports"
    _dump(
        reports / "error_report_attempt_0.json",
        {"generated_at": at, "issues": [issue], "summary": {"issues_by_category": {"test": 1}}},
    )
    _dump(reports / "error_report_attempt_1.json",
          {"generated_at": at, "issues": [issue, lint],
           "summary": {"issues_by_category": {"test": 1, "lint": 1}}})  # fmt: skip
    _dump(
        folder / "ai_attempts.json",
        [{"attempt_number": 1, "agent": "claude", "input_error_report_id": "error_report_attempt_0",
          "changed_files": ["deploy.py"], "notes": "Handed off: rewrote rollback <b>order</b>",
          "handoff": True, "exit_code": None, "started_at": at}],
    )  # fmt: skip
    (folder / "final_scripts").mkdir()
    (folder / "final_scripts" / "deploy.py").write_text("import os\n")
    return folder


def write_broken_bundle(root: Root, incident_id: str) -> Path:
    """An escalated bundle whose metadata.json does not parse."""
    folder = root.bucket("escalated") / incident_id
    folder.mkdir(parents=True)
    at = "2020-01-01T00:00:00+00:00"
    _dump(folder / "incident.json", {"incident_id": incident_id, "created_at": at,
                                     "updated_at": at, "step": "fetch",
                                     "failure_class": "transient"})  # fmt: skip
    (folder / "metadata.json").write_text("{not json")
    return folder


def clone_escalated(root: Root, source: str, count: int) -> list[str]:
    """`count` copies of a real escalated bundle under new ids (for the size test)."""
    base = root.bucket("escalated")
    ids = []
    for n in range(count):
        new = f"incident_20260101_{n:06d}_bulk_{n % 7}"
        shutil.copytree(base / source, base / new)
        doc = json.loads((base / new / "incident.json").read_text())
        doc.update(incident_id=new, step=["lint", "types", "tests", "fetch"][n % 4],
                   failure_class=["code", "transient", "env"][n % 3])  # fmt: skip
        (base / new / "incident.json").write_text(json.dumps(doc))
        meta = json.loads((base / new / "metadata.json").read_text())
        meta["finished_at"] = f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}+00:00"
        (base / new / "metadata.json").write_text(json.dumps(meta))
        ids.append(new)
    return ids
