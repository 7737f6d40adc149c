"""`error_runs/<id>/attempt_NN.json`: one per fix-and-recheck iteration (seed 004).

Two writers share these files: the machine, after each recheck, and a skill through
`incidents attempt`. A skill's record of an iteration is kept; the machine adds its
canonical verdict to it (success is decided by the check, never by a fixer's claim).
"""

from __future__ import annotations

from pathlib import Path

from incidents import artifacts, fsutil
from incidents.models import Attempt, ErrorPipelineContext

# The fields only the canonical recheck decides.
VERDICT_FIELDS = ("finished_at", "verification_passed", "result", "state", "report", "total_issues")
MACHINE = "incidents"


def fixes_applied(ctx: ErrorPipelineContext) -> int:
    return int(ctx.mechanical_fix_applied) + len(ctx.ai_attempts)


def attempt_iteration(ctx: ErrorPipelineContext) -> int:
    """The iteration whose recheck is running or last ran (fixes applied so far)."""
    return max(1, fixes_applied(ctx))


def waiting_iteration(ctx: ErrorPipelineContext) -> int:
    """The iteration an agent working a handed-off incident is doing now."""
    return fixes_applied(ctx) + 1


def path_for(runs_dir: Path, iteration: int) -> Path:
    return runs_dir / artifacts.attempt_name(iteration)


def next_free(runs_dir: Path) -> int:
    n = 1
    while path_for(runs_dir, n).exists():
        n += 1
    return n


def written_by_machine(path: Path) -> bool:
    try:
        return fsutil.read_json_object(path).get("recorded_by") == MACHINE
    except FileNotFoundError:
        return False


def merge_skill_attempt(path: Path, verdict: Attempt) -> Attempt:
    """The machine's `verdict` marked as the machine's or, when a skill recorded this
    iteration first, the skill's document with the verdict on top (the same result on a
    re-run)."""
    doc = verdict.model_dump(mode="json")
    try:
        existing = fsutil.read_json_object(path)
    except FileNotFoundError:
        existing = None
    if existing is None or existing.get("recorded_by") == MACHINE:
        return Attempt.model_validate({**doc, "recorded_by": MACHINE})
    return Attempt.model_validate(
        {**existing, **{k: doc[k] for k in VERDICT_FIELDS}, "verified_by": MACHINE}
    )
