"""The verdict a close grants success on: the last canonical report, read from disk.

The FSM decides FINALIZE_SUCCESS on the copy of the last report in `state.json`. That is
not enough to call an incident resolved: the report on disk (`error_runs/<id>/`) is what
a reviewer audits, and the files it judged may have changed since it was written (a
fixer's leftover process, a person, anything). So FINALIZE_SUCCESS re-reads the report
from disk and grants success only when it

1. exists and parses, and is the report the context names (its label);
2. is clean by the machine's own blocking rule (`fsm.blocking`, the one rule);
3. records the hash of every target, and every file it judged (targets, tests run, check
   configs read, files its verification commands name) still has that hash now;
4. judged every file that is not a target with the hash the latest baseline check saw:
   the fix is in the targets, and a test edited by anything else (a fixer's edit kept
   across a crash of its tick, a person) does not make one.

Otherwise the incident is escalated (`verdict_mismatch`) with the reason. The outcome is
written as an artifact keyed by the step before the commit: a tick killed after it keeps
an escalation on its redo, and judges a success again (the files may have changed since).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from incidents import artifacts, fsutil
from incidents.checks.judged import changed_files, describe
from incidents.errors import IncidentsError
from incidents.fsm import blocking  # the machine's own rule, not a copy
from incidents.models import ErrorPipelineContext, ErrorReport
from incidents.models.pipeline import normal_path
from incidents.models.report import Verdict


def contained(ctx: ErrorPipelineContext) -> bool | None:
    """Did every AI fixer run in a sandbox? None when no AI fixer ran."""
    if not ctx.ai_attempts:
        return None
    return all(a.contained is True for a in ctx.ai_attempts)


def verdict_of(report: ErrorReport, ctx: ErrorPipelineContext, workdir: Path | None) -> Verdict:
    judged = report.judged.model_dump() if report.judged is not None else {}
    return Verdict(
        report=report.label,
        workdir=str(workdir) if workdir is not None else None,
        contained=contained(ctx),
        **judged,
    )


def last_report(runs: Path, ctx: ErrorPipelineContext) -> tuple[ErrorReport | None, str]:
    """The last canonical report as it is on disk, or None and why it cannot be used."""
    if not ctx.report_labels:
        return None, "no canonical report was recorded"
    label = ctx.report_labels[-1]
    path = runs / artifacts.report_name(label)
    try:
        report = ErrorReport.model_validate(fsutil.read_json_object(path))
    except FileNotFoundError:
        return None, f"the last canonical report {path} is missing"
    except ValidationError as exc:
        return None, f"the last canonical report {path} does not validate: {exc.errors()[0]}"
    except (IncidentsError, OSError) as exc:
        return None, f"the last canonical report {path} cannot be read: {exc}"
    if report.label != label:
        return None, f"{path}: label: {report.label!r}, not the report {label!r} decided on"
    return report, ""


def judge(
    runs: Path, ctx: ErrorPipelineContext, workdir: Path
) -> tuple[Verdict | None, str | None]:
    """(verdict, None) when the report on disk grants success; else (verdict or None, why
    not)."""
    report, problem = last_report(runs, ctx)
    if report is None:
        return None, problem
    verdict = verdict_of(report, ctx, workdir)
    name = artifacts.report_name(report.label)
    if blocking(ctx, report):
        summary = report.summary
        return verdict, (
            f"{name} on disk is not clean ({summary.hard_error_count} hard finding(s), "
            f"{summary.total_issues} in all), whatever state.json says"
        )
    if report.judged is None:
        return verdict, f"{name} records no file hashes: its verdict cannot be bound to content"
    unhashed = [t for t in ctx.target_files if not _recorded(t, report.judged.files, workdir)]
    if unhashed:
        return verdict, f"{name} records no hash of the target(s) {', '.join(unhashed)}"
    changed = changed_files(report.judged.files, workdir, report.judged.absent)
    if changed:
        return verdict, f"changed since the verdict of {name}: {describe(changed)}"
    moved = _not_targets_changed(ctx, report.judged.files)
    if moved:
        return verdict, (
            f"changed since the baseline check, and not a target of the incident: "
            f"{', '.join(moved[:5])} (the fix is in the targets; a test or data file "
            "changed by anything else does not make one)"
        )
    return verdict, None


def _not_targets_changed(ctx: ErrorPipelineContext, files: dict[str, str]) -> list[str]:
    """Files both the baseline check and this report judged, not targets, whose hash
    differs: whatever changed them (a fixer's edit kept across a crash, a person), the
    verdict would not rest on the incident's own code alone."""
    if ctx.baseline_files is None:
        return []  # an older state: nothing to compare with
    targets = {normal_path(t) for t in ctx.target_files}
    return sorted(
        p for p, digest in files.items()
        if normal_path(p) not in targets and ctx.baseline_files.get(p, digest) != digest
    )  # fmt: skip


def _recorded(target: str, files: dict[str, str], workdir: Path) -> bool:
    if target in files:
        return True
    full = str((workdir / target).resolve())
    return any(str((workdir / p).resolve()) == full for p in files)


def decide(
    path: Path, runs: Path, ctx: ErrorPipelineContext, workdir: Path
) -> tuple[Verdict | None, str | None]:
    """`judge`, with its outcome kept at `path` (the step's artifact). A redo of the step
    after a crash keeps a saved problem (the escalation it decided stands), but judges a
    saved success again: FINALIZE_SUCCESS is not journaled, so deciding again is safe, and
    the files may have changed since (success is granted on the files as they are at the
    close that commits it)."""
    if path.exists():
        saved = fsutil.read_json_object(path)
        problem = saved.get("problem")
        if problem:
            verdict = saved.get("verdict")
            return (Verdict.model_validate(verdict) if verdict else None), str(problem)
    verdict, problem = judge(runs, ctx, workdir)
    doc = {"verdict": verdict.model_dump(mode="json") if verdict else None, "problem": problem}
    # fsynced; its folder with the commit's flush or by the close (like a report's)
    fsutil.atomic_write_bytes(path, fsutil.dump_json(doc), sync_dir=False)
    return verdict, problem


def saved_verdict(path: Path) -> Verdict | None:
    """The verdict a step kept (None: none, or not readable: the run result goes without)."""
    try:
        verdict = fsutil.read_json_object(path).get("verdict")
        return Verdict.model_validate(verdict) if verdict else None
    except (IncidentsError, OSError, ValidationError):
        return None
