"""The close's second question after the verdict holds: does the fix need a person?

`checks.review_fix` answers it from the targets as the first baseline kept them and as
they are now; here its answer becomes the escalation's headline, and its diff a file in
the runs folder (`review_fix.diff`) beside the reports a reviewer reads. Judged again at
a redo of the close, like the verdict: it reads only files, and writes the same diff.
"""

from __future__ import annotations

from pathlib import Path

from incidents import fsutil
from incidents.checks.review_fix import DIFF_NAME, review
from incidents.models import ErrorPipelineContext


def needs_review(runs: Path, ctx: ErrorPipelineContext, workdir: Path) -> str | None:
    """None: nothing for a person to look at; else the headline of the review."""
    found = review(runs, ctx.step, workdir, ctx.target_files, ctx.python_files)
    if not found.needed:
        return None
    fsutil.ensure_dir(runs)
    fsutil.atomic_write_bytes(runs / DIFF_NAME, found.diff.encode("utf-8"), sync_dir=False)
    return f"{found.headline()} (diff: {DIFF_NAME})"
