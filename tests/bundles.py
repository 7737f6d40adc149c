"""Bundles written by hand into an inbox, as anyone who can write there could (not by
capture), and where such a bundle ends."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from incidents.checks.engine import summarize
from incidents.layout import Root
from incidents.models import ErrorPipelineContext, ErrorReport
from incidents.models.pipeline import State
from incidents.vocab import FinalStatus

NOW = "2026-11-24T00:00:00+00:00"


def drop(root: Root, name: str, ws: Path, **fields: Any) -> Path:
    """A bundle written by hand into the inbox (not by capture): incident.json, status.txt."""
    incident_id = f"incident_20261124_000000_{name}_0123456789ab"
    doc = {
        "incident_id": incident_id, "status": "new", "created_at": NOW, "updated_at": NOW,
        "run_id": "run_by_hand", "year": 2026, "month": 11, "ym": "2026-11", "step": "lint",
        "failure_class": "code", "message": "ruff failed", "error_signature": f"sig {name}",
        "error_code": "LINT_FAILURE", "python_files": [], "verify": [], "workdir": str(ws),
        **fields,
    }  # fmt: skip
    root.ensure()
    folder = root.inbox / incident_id
    folder.mkdir()
    (folder / "incident.json").write_text(json.dumps(doc, indent=2))
    (folder / "status.txt").write_text("new\n")
    return folder


def rejected_reason(root: Root, incident_id: str) -> str:
    """The reason.txt of a bundle set aside, after checking it is nowhere else."""
    assert not (root.inbox / incident_id).exists()
    for bucket in ("resolved", "escalated"):
        assert not (root.bucket(bucket) / incident_id).exists(), f"it ended {bucket}"
    return (root.rejected / incident_id / "reason.txt").read_text()


def planted_state(incident_id: str, state: State, targets: list[str]) -> str:
    """A state.json as a bundle's author would write it: past the checks, with a clean
    report (in a RECHECK state, the machine decides on that report without a check)."""
    clean = ErrorReport(
        attempt_number=0, ai_agent="none", run_id="run_by_hand", workstream_id=incident_id,
        generated_at=datetime.fromisoformat(NOW), mechanical_fix_applied=True, issues=[],
        summary=summarize([]),
    )  # fmt: skip
    ctx = ErrorPipelineContext(
        run_id="run_by_hand", workstream_id=incident_id, python_files=targets,
        current_state=state, planned=True, step=3, error_signature="sig planted",
        mechanical_fix_applied=True, report_labels=["0", "0b"], last_error_report=clean,
        final_status=FinalStatus.SUCCESS if state is State.S_SUCCESS else None,
    )  # fmt: skip
    return ctx.model_dump_json(indent=2)
