"""The escalation machine's judgement of one check report (pure): what blocks success.

`incidents.fsm` decides on these, and the close (`step.verdict`) and the confirmation runs
(`step.confirm`) judge with the very same functions, so the rule is written once.

- Hard findings block; with `strict_mode` every finding blocks.
- The incident's own findings block whatever their severity: anything found in a file the
  incident is about (its targets, the tests selected through them: `own_files`). A style
  finding in the file whose lint failure was captured is that failure, not a detail.
- A failure no fixer mends (transient, env, never_retry) with a reproduction is about
  that command: the files it ran through are not its own, so their style does not keep
  a blip that passes again from recovering (hard findings still block).
- At a recheck, a hard finding the first baseline already had, in a file the incident is
  not about, is pre-existing and does not block (`preexisting`); at the baseline check
  every hard finding blocks (it defines the incident).
"""

from __future__ import annotations

from incidents.models.pipeline import ErrorPipelineContext, State, baseline_key, normal_path
from incidents.models.report import ErrorReport, Finding
from incidents.vocab import Category, FailureClass

# classes no fixer mends: what decides is whether their reproduction passes again
_NOT_MENDED = frozenset({FailureClass.TRANSIENT, FailureClass.ENV, FailureClass.NEVER_RETRY})

__all__ = ["blocking", "own_paths", "preexisting", "ran_tests"]


def own_paths(ctx: ErrorPipelineContext) -> set[str]:
    """The files the incident is about: its targets, and once the first baseline is known,
    every test file selected through them (`ErrorPipelineContext.own_files`)."""
    return {normal_path(p) for p in [*(ctx.own_files or []), *ctx.target_files]}


def blocking(ctx: ErrorPipelineContext, report: ErrorReport) -> bool:
    """Whether `report` keeps the incident from success (the module's rule)."""
    if ctx.strict_mode:
        return report.summary.has_hard_fail or report.summary.total_issues > 0
    mended = ctx.failure_class not in _NOT_MENDED or not ctx.verification_commands
    own = own_paths(ctx) if mended else set()
    excused = {id(f) for f in preexisting(ctx, report)}
    return any(
        (f.hard or normal_path(f.path) in own) and id(f) not in excused for f in report.issues
    )


def preexisting(ctx: ErrorPipelineContext, report: ErrorReport) -> list[Finding]:
    """The hard findings of `report` judged "pre-existing, not the incident's": at a
    recheck (never at the baseline check, which defines the incident: everything it finds
    there is in its own baseline), already in the first baseline report (same path, code
    and normalised message), and in a file the incident is not about (`own_files`: its
    targets and every test selected through them). What is left is a test that only
    `[checks] test_paths` brought in. Never a verification command's finding, a tamper
    finding or a flaky one. Always empty with strict_mode or before a baseline is known."""
    if ctx.strict_mode or ctx.own_files is None or ctx.baseline_keys is None:
        return []
    if ctx.current_state is State.S0_BASELINE_CHECK:
        return []
    own = own_paths(ctx)
    before = set(ctx.baseline_keys)
    return [
        f
        for f in report.issues
        if f.hard
        and normal_path(f.path) not in own
        and f.category not in (Category.VERIFICATION, Category.TAMPER)
        and f.code != "flaky"  # a confirmation run saw it come and go: never excused
        and baseline_key(f) in before
    ]


def ran_tests(ctx: ErrorPipelineContext, report: ErrorReport) -> bool:
    """Whether this check's verdict rests on tests: a test runner ran a selection, or the
    incident has verification (reproduction) commands."""
    return bool(ctx.verification_commands) or any(run.tests for run in report.tool_runs)
