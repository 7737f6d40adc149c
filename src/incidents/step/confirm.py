"""`[policy] confirm_runs = N`: a check of a test failure that comes out clean is run N-1
more times, the findings cache bypassed, before it may count as a success. A finding that
a confirmation run shows and the first run did not is the same failure coming and going:
it becomes a hard `flaky` finding, never excused as pre-existing, so the check is not clean.

Pure apart from what `one_pass` does (the caller's engine and verification run); the
confirmations are part of the check step, whose report is keyed by the step like any other,
so a tick killed during them redoes the whole check (fsm's protocol, step 4).
"""

from __future__ import annotations

from collections.abc import Callable

from incidents.fsm import blocking, ran_tests
from incidents.models import ErrorPipelineContext, ErrorReport, Finding, InfraFailure, ToolRun
from incidents.models.pipeline import baseline_key
from incidents.vocab import Severity

FLAKY = "flaky"  # the code of a finding that failed in one run and passed in another
Pass = tuple[list[Finding], list[ToolRun], list[InfraFailure]]


def needs_confirmation(
    ctx: ErrorPipelineContext, report: ErrorReport, *, baseline: bool, runs: int
) -> bool:
    """A clean check of a test failure, with more than one run asked for. Judged as the
    machine will judge it: at the first baseline, with that baseline recorded."""
    if runs <= 1 or report.infra_failures or not ran_tests(ctx, report):
        return False
    probe = ctx
    if baseline and ctx.baseline_keys is None:
        probe = ctx.model_copy(deep=True)
        probe.record_baseline(report)
    return not blocking(probe, report)


def confirm(
    report: ErrorReport,
    runs: int,
    one_pass: Callable[[], Pass],
    summarize: Callable[[list[Finding]], object],
) -> ErrorReport:
    """Run `one_pass` up to `runs - 1` times after the first (clean) `report`; stop at the
    first confirmation that shows a finding the first run did not. Their tool runs and
    infrastructure failures are added to the report; their new findings come back as
    hard `flaky` findings."""
    first = {baseline_key(f) for f in report.issues}
    issues, tool_runs = list(report.issues), list(report.tool_runs)
    infra = list(report.infra_failures)
    for number in range(2, runs + 1):
        found, ran, failed = one_pass()
        tool_runs += ran
        infra += failed
        seen: set[tuple[str, str, str]] = set()
        for f in found:
            key = baseline_key(f)
            if key in first or key in seen:
                continue
            seen.add(key)
            issues.append(
                f.model_copy(
                    update={
                        "code": FLAKY,
                        "severity": Severity.ERROR,
                        "hard": True,
                        "message": f"flaky: passed in run 1, failed in run {number} of "
                        f"{runs} with nothing changed: [{f.code or f.category}] {f.message}",
                    }
                )
            )
        if seen or failed:
            break
    return report.model_copy(
        update={
            "issues": issues,
            "summary": summarize(issues),
            "tool_runs": tool_runs,
            "infra_failures": infra,
        }
    )
