"""What a person must look at before a clean fix is called resolved (`review_fix`).

Two things a passing check cannot vouch for, judged on the targets as the first baseline
check kept them (`tamper_files`) and as they are at the close:

- a fix that makes a target depend on how it is run: every use of a runtime surface in
  the lines it added (`runtime_review`, by category);
- a test file the fix changed: the specification is the tests as captured, so a changed
  test (even a real fix of a test that did not parse) is shown, never trusted.

The incident then closes as escalated with the kind `review_fix`, the findings and the
diff as its headline; `resolve-escalation ID --accept-fix` lets a person accept it.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from incidents.checks import runtime_review, tamper_files
from incidents.checks.tamper_runner import is_test_file

DIFF_NAME = "review_fix.diff"
MAX_DIFF_LINES = 400
HEADLINE_FINDINGS = 5


@dataclass
class Review:
    findings: list[str] = field(default_factory=list)
    diff: str = ""

    @property
    def needed(self) -> bool:
        return bool(self.findings)

    def headline(self) -> str:
        shown = "; ".join(self.findings[:HEADLINE_FINDINGS])
        more = len(self.findings) - HEADLINE_FINDINGS
        tail = f" (and {more} more)" if more > 0 else ""
        return f"the fix needs a person's review: {shown}{tail}"


def review(
    runs: Path, step: int, workdir: Path, targets: Sequence[str], python_files: Sequence[str]
) -> Review:
    """The review the targets' changes since the first baseline check need (none when
    there is no baseline to compare with: nothing was kept before a fix)."""
    baseline = tamper_files.first_baseline(runs, step)
    result = Review()
    if baseline is None:
        return result
    python = set(python_files)
    diffs: list[str] = []
    for target in targets:
        if target not in baseline["targets"]:
            continue
        before = baseline["targets"][target]
        after = tamper_files.contents(workdir / target)
        if before == after or _opaque(before) or _opaque(after):
            continue  # unchanged; an opaque one is the tamper check's `unreadable`
        diffs += difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            (after or "").splitlines(keepends=True),
            f"a/{target}",
            f"b/{target}",
        )
        if is_test_file(target):
            result.findings.append(
                f"{target}: a test file changed (the specification as captured is what "
                "judges a fix: the changed test is shown, not trusted)"
            )
        if target in python:
            result.findings += [u.text() for u in runtime_review.review(target, before, after)]
    if result.findings:
        lines = "".join(diffs).splitlines(keepends=True)
        result.diff = "".join(lines[:MAX_DIFF_LINES])
        if len(lines) > MAX_DIFF_LINES:
            result.diff += f"... ({len(lines) - MAX_DIFF_LINES} more lines)\n"
    return result


def _opaque(text: str | None) -> bool:
    return text is not None and text.startswith(tamper_files.OPAQUE)
