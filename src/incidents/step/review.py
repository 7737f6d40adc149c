"""The close's questions after the verdict holds: does the reproduction still pass as the
user ran it, and does the fix need a person?

The verdict is granted on the files as they are at the close, so the run as the user ran
it (`checks.as_user`) is part of it: made again here, not taken from the recheck.

`checks.review_fix` answers it from the targets as the first baseline kept them and as
they are now; here its answer becomes the escalation's headline, and its diff a file in
the runs folder (`review_fix.diff`) beside the reports a reviewer reads. Judged again at
a redo of the close, like the verdict: it reads only files, and writes the same diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from incidents import fsutil
from incidents.checks.review_fix import DIFF_NAME, review
from incidents.models import ErrorPipelineContext

if TYPE_CHECKING:
    from incidents.verify import VerifySettings


def as_user_problem(
    folder: Path, runs: Path, ctx: ErrorPipelineContext, settings: VerifySettings
) -> str | None:
    """None: the user's command, as recorded in the bundle at `folder`, passes now, or
    the report the verdict rests on did not run it (a check of no fix); else why not."""
    from incidents.checks import startup
    from incidents.checks.as_user import TOOL, run_as_user
    from incidents.step.verdict import last_report

    report, _ = last_report(runs, ctx)
    if report is None or not any(r.tool == TOOL for r in report.tool_runs):
        return None
    started = startup.snapshot()
    out = run_as_user(folder, list(ctx.verification_commands), settings)
    for finding in [*out.findings, *startup.take_back(started, runs / "planted-close")]:
        return f"at the close, {finding.message}"
    for failure in out.infra:
        return f"at the close, {failure.reason}"
    return None


def needs_review(runs: Path, ctx: ErrorPipelineContext, workdir: Path) -> str | None:
    """None: nothing for a person to look at; else the headline of the review."""
    found = review(runs, ctx.step, workdir, ctx.target_files, ctx.python_files)
    if not found.needed:
        return None
    fsutil.ensure_dir(runs)
    fsutil.atomic_write_bytes(runs / DIFF_NAME, found.diff.encode("utf-8"), sync_dir=False)
    return f"{found.headline()} (diff: {DIFF_NAME})"
