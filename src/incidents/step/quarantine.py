"""The self-contained quarantine bundle of an escalated incident (seed 001 §3.11).

Built inside the incident's folder just before it moves to `error_archive/escalated/`,
so that someone holding only that folder sees what failed and what was tried:
`final_scripts/` (the final target files), `error_reports/` (every canonical report),
`ai_attempts.json`, `metadata.json`, `plan/` and `attempts/`. Rebuilding it is
idempotent: every file is written with an atomic replace.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from incidents import artifacts, fsutil
from incidents.layout import Root
from incidents.models import ErrorPipelineContext, QuarantineMetadata
from incidents.models.report import Verdict
from incidents.step.documents import write_ai_attempts
from incidents.vocab import FinalStatus

FINAL_SCRIPTS = "final_scripts"
MAX_SCRIPT_BYTES = 8 << 20


def _copy(src: Path, dst: Path) -> None:
    fsutil.ensure_dir(dst.parent)
    fsutil.atomic_write_bytes(dst, fsutil.read_regular_file(src, MAX_SCRIPT_BYTES))


def copy_final_scripts(
    folder: Path, workdir: Path, targets: list[str], into: str = FINAL_SCRIPTS
) -> list[str]:
    """Copy each target (relative to the workdir, contained in it) into `folder/into/`."""
    copied: list[str] = []
    base = os.path.realpath(workdir)
    for rel in targets:
        src = Path(os.path.realpath(os.path.join(base, rel)))
        if os.path.commonpath([base, src]) != base or not src.is_file():
            continue
        _copy(src, folder / into / rel)
        copied.append(rel)
    return copied


def copy_run_artifacts(root: Root, incident_id: str, folder: Path) -> None:
    runs = root.runs_dir(incident_id)
    if runs.is_dir():
        for entry in sorted(runs.iterdir()):
            if entry.name.startswith(artifacts.REPORT_PREFIX) and entry.suffix == ".json":
                _copy(entry, folder / "error_reports" / entry.name)
            elif entry.name.startswith((artifacts.ATTEMPT_PREFIX, artifacts.PROMPT_PREFIX)):
                _copy(entry, folder / "attempts" / entry.name)
            elif entry.name == "review_fix.diff":  # what a person reviews (checks.review_fix)
                _copy(entry, folder / entry.name)
    plan = root.plan_dir(incident_id)
    for name in (artifacts.PLAN_JSON, artifacts.PLAN_MD):
        if (plan / name).is_file():
            _copy(plan / name, folder / "plan" / name)


def build(
    root: Root,
    incident_id: str,
    folder: Path,
    ctx: ErrorPipelineContext,
    *,
    workdir: Path | None,
    created_at: datetime,
    finished_at: datetime,
    final_status: FinalStatus,
    reason: str,
    enabled_tiers: list[str],
    verdict: Verdict | None = None,
) -> QuarantineMetadata:
    targets = [*ctx.python_files, *ctx.powershell_files]
    if workdir is not None and workdir.is_dir():
        copy_final_scripts(folder, workdir, targets)
    copy_run_artifacts(root, incident_id, folder)
    write_ai_attempts(folder / artifacts.AI_ATTEMPTS, ctx.ai_attempts, required=True)
    report = ctx.last_error_report
    versions = {run.tool: run.version for run in report.tool_runs} if report else {}
    counts = report.summary.issues_by_category if report else {}
    meta = QuarantineMetadata(
        incident_id=incident_id,
        run_id=ctx.run_id,
        workstream_id=ctx.workstream_id,
        created_at=created_at,
        finished_at=finished_at,
        final_status=final_status,
        reason=reason,
        last_state=ctx.current_state,
        enabled_tiers=enabled_tiers,
        tool_versions=versions,
        final_error_counts=dict(counts),
        target_files=targets,
        escalation_kind=ctx.escalation_kind.value if ctx.escalation_kind else None,
        error_signature=ctx.error_signature,
        verdict=verdict,
    )
    fsutil.atomic_write_json(folder / artifacts.METADATA, meta.model_dump(mode="json"))
    return meta
