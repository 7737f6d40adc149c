"""Every guard of seed 001 (and the issue-6 rules) on small handmade reports."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from incidents.fsm import (
    TIER_ORDER,
    Action,
    EscalationKind,
    NextAction,
    State,
    backoff_delay,
    decide_next_action,
    is_actionable,
    is_terminal,
    max_steps,
    report_label,
)
from incidents.models.pipeline import AIAttempt, ErrorPipelineContext
from incidents.models.report import ErrorReport, Finding, InfraFailure, ReportSummary, ToolRun
from incidents.vocab import HARD_CATEGORIES, Category, FailureClass, Outcome, Severity

T0 = datetime(2026, 2, 17, 3, 0, tzinfo=UTC)
STYLE_CATEGORIES = {Category.FORMAT, Category.LINT, Category.IMPORT}


def finding(name: str = "f", category: str = "format") -> Finding:
    cat = Category(category)
    return Finding(
        tool="ruff" if cat in STYLE_CATEGORIES else "mypy",
        path="a.py",
        line=1,
        code=name,
        category=cat,
        severity=Severity.ERROR,
        message=f"problem {name}",
        hard=cat in HARD_CATEGORIES,
    )


def hard(*names: str) -> list[Finding]:
    return [finding(n, "type") for n in names or ("h",)]


def style(*names: str) -> list[Finding]:
    return [finding(n, "format") for n in names or ("s",)]


def not_own(findings: list[Finding]) -> list[Finding]:
    """The same findings in a file the incident is not about (not a target, not its test)."""
    return [f.model_copy(update={"path": "other.py"}) for f in findings]


def make_report(
    issues: Iterable[Finding] = (), *, infra: bool = False, label: str = "0", ran: bool = True
) -> ErrorReport:
    """A check's report; `ran`: it ran a tool (ruff on a.py), as every real check does."""
    found = list(issues)
    by_tool: dict[str, int] = {}
    by_cat: dict[str, int] = {}
    for f in found:
        by_tool[f.tool] = by_tool.get(f.tool, 0) + 1
        by_cat[str(f.category)] = by_cat.get(str(f.category), 0) + 1
    hard_count = sum(f.hard for f in found)
    style_count = sum(f.category in STYLE_CATEGORIES for f in found)
    summary = ReportSummary(
        total_issues=len(found),
        issues_by_tool=by_tool,
        issues_by_category=by_cat,
        hard_error_count=hard_count,
        style_error_count=style_count,
        security_issue_count=sum(f.category is Category.SECURITY for f in found),
        error_categories_present=sorted(by_cat),
        has_hard_fail=hard_count > 0,
        style_only=bool(found) and style_count == len(found),
    )
    failures = [InfraFailure(tool="mypy", argv=["mypy"], exit_code=None, reason="missing")]
    return ErrorReport(
        attempt_number=0,
        run_id="run_1",
        workstream_id="inc_1",
        label=label,
        generated_at=T0,
        issues=found,
        summary=summary,
        infra_failures=failures if infra else [],
        tool_runs=[ToolRun(tool="ruff", argv=["ruff", "a.py"], exit_code=0, duration_s=0.1,
                           files=1)] if ran else [],  # fmt: skip
    )


def make_ctx(**fields: Any) -> ErrorPipelineContext:
    base: dict[str, Any] = {
        "run_id": "run_1",
        "workstream_id": "inc_1",
        "python_files": ["a.py"],
        "planned": True,
    }
    return ErrorPipelineContext(**{**base, **fields})


def at(state: State, issues: Iterable[Finding] = (), **fields: Any) -> ErrorPipelineContext:
    """A context in `state` whose last check found `issues` at T0."""
    ctx = make_ctx(current_state=state, **fields)
    ctx.record_check(make_report(issues), T0)
    return ctx


def decide(ctx: ErrorPipelineContext) -> NextAction:
    return decide_next_action(ctx)


# -- S_INIT ---------------------------------------------------------------------------------


def test_init_plans_first() -> None:
    na = decide(make_ctx(planned=False))
    assert (na.new_state, na.action) == (State.S_INIT, Action.PLAN)


def test_init_goes_to_the_baseline_check_once_planned() -> None:
    na = decide(make_ctx())
    assert (na.new_state, na.action) == (State.S0_BASELINE_CHECK, Action.RUN_PIPELINE)


def test_init_never_retry_escalates_at_once_even_unplanned() -> None:
    na = decide(make_ctx(planned=False, failure_class=FailureClass.NEVER_RETRY))
    assert (na.new_state, na.action) == (State.S4_QUARANTINE, Action.QUARANTINE)
    assert na.escalation is EscalationKind.NEVER_RETRY
    assert "never_retry" in na.reason


def test_init_env_escalates_at_once_and_a_requeue_reruns_only_its_reproduction() -> None:
    """env never reaches a fixer: at once to a person; after a requeue its reproduction
    decides, passing (recovered) or not (to the person again), never a tier or autofix."""
    env: dict[str, Any] = {"failure_class": FailureClass.ENV, "enable_aider": True}
    na = decide(make_ctx(planned=False, verification_commands=["python job.py"], **env))
    assert (na.new_state, na.escalation) == (State.S4_QUARANTINE, EscalationKind.ENVIRONMENT)
    ctx = make_ctx(verification_commands=["python job.py"], **env)
    ctx.requeue("set WAREHOUSE_API_TOKEN")
    assert ctx.failure_class is FailureClass.ENV and ctx.requeues == 1
    assert decide(ctx).action is Action.RUN_PIPELINE
    failing = at(State.S0_BASELINE_CHECK, [finding("exit", "verification")], requeues=1, **env)
    assert decide(failing).escalation is EscalationKind.ENVIRONMENT
    passing = at(State.S0_BASELINE_CHECK, [], requeues=1, **env)
    assert decide(passing).outcome is Outcome.RECOVERED
    nothing = make_ctx(requeues=1, **env)  # a target but no reproduction: a change proves nothing
    assert decide(nothing).escalation is EscalationKind.ENVIRONMENT


def test_a_bare_transient_capture_waits_for_its_step_or_the_quiet_period() -> None:
    ctx = make_ctx(python_files=[], failure_class=FailureClass.TRANSIENT, last_seen=T0)
    na = decide(ctx)
    assert (na.new_state, na.outcome) == (State.S_SUCCESS, Outcome.RECOVERED)
    assert na.not_before == T0 + timedelta(hours=1)
    assert not is_actionable(na, T0 + timedelta(minutes=59))
    ctx.step_ok_at, ctx.step_ok_by = T0 + timedelta(seconds=1), "incidents run"
    na = decide(ctx)
    assert na.not_before is None and na.outcome is Outcome.RECOVERED
    assert "its step succeeded" in na.reason
    ctx.last_seen = T0 + timedelta(seconds=2)  # it failed again after that success
    assert decide(ctx).not_before == T0 + timedelta(seconds=2, hours=1)


def test_a_blip_whose_check_re_ran_nothing_of_it_waits_for_its_step() -> None:
    """A transient capture with a target but no reproduction: a clean lint of the file says
    nothing about the network, so it waits for its step like a bare capture."""
    ctx = at(State.S0_BASELINE_CHECK, [], failure_class=FailureClass.TRANSIENT, last_seen=T0)
    na = decide(ctx)
    assert (na.new_state, na.outcome) == (State.S_SUCCESS, Outcome.RECOVERED)
    assert na.not_before == T0 + timedelta(hours=1)
    ctx.verification_commands = ["python download.py"]  # its reproduction passed: at once
    assert decide(ctx).not_before is None


def test_init_with_nothing_to_check_is_unverifiable() -> None:
    na = decide(make_ctx(python_files=[]))
    assert (na.new_state, na.escalation) == (State.S4_QUARANTINE, EscalationKind.UNVERIFIABLE)
    assert "unverifiable" in na.reason


def test_init_verification_commands_alone_are_something_to_check() -> None:
    na = decide(make_ctx(python_files=[], verification_commands=["python fetch.py"]))
    assert na.new_state is State.S0_BASELINE_CHECK


def test_a_plan_can_supply_the_verification() -> None:
    ctx = make_ctx(python_files=[], planned=False)
    assert decide(ctx).action is Action.PLAN
    ctx.record_plan(["python fetch.py"])
    assert decide(ctx).new_state is State.S0_BASELINE_CHECK


# -- S0_BASELINE_CHECK ----------------------------------------------------------------------


def test_baseline_clean_is_success() -> None:
    na = decide(at(State.S0_BASELINE_CHECK, [], enable_aider=True))
    assert (na.new_state, na.action) == (State.S_SUCCESS, Action.FINALIZE_SUCCESS)


@pytest.mark.parametrize("state", [State.S0_BASELINE_CHECK, State.S1_AIDER_RECHECK])
def test_a_clean_check_that_ran_no_tool_and_no_command_is_unverifiable(state: State) -> None:
    """Issue 15 review: `[checks] tools = []` closed a syntax error as resolved "not
    reproduced (flaky)": nothing had checked it. A clean report of a check that ran no tool
    and no verification command is nothing checked: escalated as unverifiable."""
    ctx = make_ctx(current_state=state, enable_aider=True)
    ctx.record_check(make_report(ran=False), T0)
    na = decide(ctx)
    assert (na.new_state, na.escalation) == (State.S4_QUARANTINE, EscalationKind.UNVERIFIABLE)
    assert "the check ran no tool and no verification command" in na.reason
    ctx = make_ctx(current_state=state, enable_aider=True, verification_commands=["true"])
    ctx.record_check(make_report(ran=False), T0)
    assert decide(ctx).new_state is State.S_SUCCESS  # the command was the check


@pytest.mark.parametrize("strict", [False, True])
def test_baseline_style_only_with_autofix_is_autofixed_whatever_strict(strict: bool) -> None:
    na = decide(at(State.S0_BASELINE_CHECK, style(), strict_mode=strict))
    assert (na.new_state, na.action) == (
        State.S0_MECHANICAL_AUTOFIX,
        Action.MECHANICAL_AUTOFIX,
    )


def test_baseline_style_only_elsewhere_without_autofix_and_not_strict_is_success() -> None:
    ctx = at(
        State.S0_BASELINE_CHECK,
        not_own(style()),
        enable_mechanical_autofix=False,
        enable_aider=True,
    )
    assert decide(ctx).new_state is State.S_SUCCESS


def test_a_style_finding_in_a_target_is_the_incidents_own_and_blocks_whatever_severity() -> None:
    """An F841 in the file whose lint failure was captured is that failure: not waved
    through as style, at the baseline or after the autofix, strict_mode or not."""
    ctx = at(State.S0_BASELINE_CHECK, style(), enable_mechanical_autofix=False, enable_aider=True)
    assert decide(ctx).new_state is State.S1_AIDER_FIX
    ctx = at(State.S0_MECHANICAL_RECHECK, style())
    na = decide(ctx)
    assert na.escalation is EscalationKind.NO_FIXER, na


def test_baseline_style_only_without_autofix_but_strict_blocks() -> None:
    ctx = at(
        State.S0_BASELINE_CHECK,
        style(),
        enable_mechanical_autofix=False,
        strict_mode=True,
        enable_aider=True,
    )
    assert (decide(ctx).new_state, decide(ctx).action) == (State.S1_AIDER_FIX, Action.CALL_AIDER)


def test_baseline_hard_and_style_mixed_is_not_autofixed() -> None:
    ctx = at(State.S0_BASELINE_CHECK, [*hard(), *style()], enable_codex=True)
    assert decide(ctx).new_state is State.S2_CODEX_FIX


@pytest.mark.parametrize(
    ("enabled", "expected", "action"),
    [
        ({"enable_aider": True, "enable_codex": True}, State.S1_AIDER_FIX, Action.CALL_AIDER),
        ({"enable_codex": True, "enable_claude": True}, State.S2_CODEX_FIX, Action.CALL_CODEX),
        ({"enable_claude": True}, State.S3_CLAUDE_FIX, Action.CALL_CLAUDE),
        ({}, State.S4_QUARANTINE, Action.QUARANTINE),
    ],
)
def test_baseline_hard_goes_to_the_first_enabled_tier(
    enabled: dict[str, bool], expected: State, action: Action
) -> None:
    na = decide(at(State.S0_BASELINE_CHECK, hard(), **enabled))
    assert (na.new_state, na.action) == (expected, action)


def test_baseline_hard_with_no_tier_is_escalated_as_no_fixer() -> None:
    na = decide(at(State.S0_BASELINE_CHECK, hard()))
    assert na.escalation is EscalationKind.NO_FIXER


def test_baseline_infra_failure() -> None:
    ctx = make_ctx(current_state=State.S0_BASELINE_CHECK)
    ctx.record_check(make_report([], infra=True), T0)
    na = decide(ctx)
    assert (na.new_state, na.action) == (State.S_ERROR_INFRA, Action.FINALIZE_INFRA_ERROR)
    assert "mypy" in na.reason


def test_a_check_state_without_a_report_runs_its_check() -> None:
    na = decide(make_ctx(current_state=State.S0_BASELINE_CHECK))
    assert (na.new_state, na.action) == (State.S0_BASELINE_CHECK, Action.RUN_PIPELINE)


# -- transient retries (issue 6) ------------------------------------------------------------


def transient(**fields: Any) -> ErrorPipelineContext:
    config: dict[str, Any] = {"enable_aider": True, "retry_jitter": 0.5, **fields}
    return at(State.S0_BASELINE_CHECK, hard(), failure_class=FailureClass.TRANSIENT, **config)


def test_transient_failure_waits_then_rechecks_before_any_fix() -> None:
    ctx = transient()
    na = decide(ctx)
    assert (na.new_state, na.action) == (State.S0_BASELINE_CHECK, Action.WAIT_RETRY)
    assert na.not_before == T0 + timedelta(seconds=backoff_delay(0, 5.0, 300.0, 0.5))
    ctx.schedule_retry(na.not_before)
    again = decide(ctx)
    assert (again.action, again.not_before) == (Action.RUN_PIPELINE, na.not_before)
    assert not is_actionable(again, T0)
    assert is_actionable(again, na.not_before)


def test_transient_without_any_check_time_reruns_once_to_get_one() -> None:
    ctx = make_ctx(current_state=State.S0_BASELINE_CHECK, failure_class=FailureClass.TRANSIENT)
    ctx.last_error_report = make_report(hard()).model_copy(update={"generated_at": None})
    na = decide(ctx)
    assert (na.action, na.not_before) == (Action.RUN_PIPELINE, None)
    ctx.record_check(make_report(hard()), T0)
    assert decide(ctx).action is Action.WAIT_RETRY


def test_a_success_of_its_step_re_runs_a_waiting_blip_at_once() -> None:
    """`incidents run` of its command passed since its last failing check: the backoff is
    not waited out, the reproduction runs now (and decides)."""
    ctx = transient(last_seen=T0)
    ctx.schedule_retry(T0 + timedelta(minutes=5))
    ctx.step_ok_at, ctx.step_ok_by = T0 - timedelta(seconds=1), "incidents run passed"
    assert decide(ctx).not_before == T0 + timedelta(minutes=5)  # older than the failure
    ctx.step_ok_at = T0 + timedelta(seconds=1)
    na = decide(ctx)
    assert (na.action, na.not_before) == (Action.RUN_PIPELINE, None)
    assert "its step succeeded since the last check" in na.reason


def test_transient_backoff_grows_and_is_capped() -> None:
    delays = [backoff_delay(n, 5.0, 60.0, 1.0) for n in range(6)]
    assert delays == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]
    assert backoff_delay(2, 5.0, 60.0, 0.0) == 10.0


def test_transient_retries_exhausted_escalate_never_to_a_fixer() -> None:
    ctx = transient(transient_retries=3)
    na = decide(ctx)
    assert na.new_state is State.S4_QUARANTINE
    assert na.escalation is EscalationKind.STILL_FAILING
    assert "still failing after 3 retry(ies)" in na.reason


def test_transient_clean_recheck_is_success() -> None:
    ctx = transient(verification_commands=["python fetch.py"])  # its reproduction passes
    ctx.schedule_retry(T0)
    ctx.record_check(make_report([]), T0 + timedelta(seconds=5))
    na = decide(ctx)
    assert na.new_state is State.S_SUCCESS and na.outcome is Outcome.RECOVERED


def test_transient_jitter_without_a_value_is_deterministic_per_incident() -> None:
    a = transient(retry_jitter=None)
    b = transient(retry_jitter=None, workstream_id="inc_2")
    assert decide(a) == decide(a.model_copy(deep=True))
    assert decide(a).not_before != decide(b).not_before


# -- budget and targets (issue 6) -----------------------------------------------------------


def test_exhausted_signature_budget_escalates_instead_of_fixing() -> None:
    ctx = at(
        State.S0_BASELINE_CHECK,
        hard(),
        enable_aider=True,
        error_signature="sig",
        signature_attempts_used=3,
        signature_attempt_limit=3,
    )
    na = decide(ctx)
    assert (na.new_state, na.escalation) == (
        State.S4_QUARANTINE,
        EscalationKind.BUDGET_EXHAUSTED,
    )
    assert "sig" in na.reason and "3/3" in na.reason


def test_budget_left_allows_the_fix() -> None:
    ctx = at(
        State.S0_BASELINE_CHECK,
        hard(),
        enable_aider=True,
        signature_attempts_used=2,
        signature_attempt_limit=3,
    )
    assert decide(ctx).new_state is State.S1_AIDER_FIX


def test_budget_does_not_stop_the_mechanical_autofix() -> None:
    ctx = at(State.S0_BASELINE_CHECK, style(), signature_attempt_limit=0)
    assert decide(ctx).new_state is State.S0_MECHANICAL_AUTOFIX


def test_no_target_files_means_no_fixer() -> None:
    ctx = at(
        State.S0_BASELINE_CHECK,
        [finding("v", "verification")],
        python_files=[],
        verification_commands=["python fetch.py"],
        enable_aider=True,
    )
    na = decide(ctx)
    assert (na.new_state, na.escalation) == (State.S4_QUARANTINE, EscalationKind.NO_FIXER)


# -- S0_MECHANICAL_AUTOFIX / RECHECK --------------------------------------------------------


def test_autofix_is_followed_by_its_recheck() -> None:
    ctx = make_ctx(current_state=State.S0_MECHANICAL_AUTOFIX)
    na = decide(ctx)
    assert (na.new_state, na.action) == (State.S0_MECHANICAL_RECHECK, Action.RUN_PIPELINE)


def test_autofix_crash_is_an_infra_error() -> None:
    ctx = make_ctx(current_state=State.S0_MECHANICAL_AUTOFIX)
    ctx.record_fixer_failure("ruff timed out")
    na = decide(ctx)
    assert na.new_state is State.S_ERROR_INFRA and "ruff timed out" in na.reason


def test_mechanical_recheck_clean_is_success() -> None:
    assert decide(at(State.S0_MECHANICAL_RECHECK, [])).new_state is State.S_SUCCESS


def test_mechanical_recheck_leftover_style_elsewhere_not_strict_is_success() -> None:
    ctx = at(State.S0_MECHANICAL_RECHECK, not_own(style()), enable_aider=True)
    assert decide(ctx).new_state is State.S_SUCCESS


def test_mechanical_recheck_leftover_style_strict_goes_to_a_tier_not_a_second_autofix() -> None:
    ctx = at(State.S0_MECHANICAL_RECHECK, style(), strict_mode=True, enable_codex=True)
    assert decide(ctx).new_state is State.S2_CODEX_FIX


def test_mechanical_recheck_hard_without_tiers_is_quarantined() -> None:
    na = decide(at(State.S0_MECHANICAL_RECHECK, hard()))
    assert (na.new_state, na.escalation) == (State.S4_QUARANTINE, EscalationKind.NO_FIXER)


def test_mechanical_recheck_infra() -> None:
    ctx = make_ctx(current_state=State.S0_MECHANICAL_RECHECK)
    ctx.record_check(make_report(style(), infra=True), T0)
    assert decide(ctx).new_state is State.S_ERROR_INFRA


# -- tier FIX states ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fix", "recheck"),
    [
        (State.S1_AIDER_FIX, State.S1_AIDER_RECHECK),
        (State.S2_CODEX_FIX, State.S2_CODEX_RECHECK),
        (State.S3_CLAUDE_FIX, State.S3_CLAUDE_RECHECK),
    ],
)
def test_every_fix_is_followed_by_its_recheck(fix: State, recheck: State) -> None:
    na = decide(make_ctx(current_state=fix))
    assert (na.new_state, na.action) == (recheck, Action.RUN_PIPELINE)


def test_fixer_crash_is_an_infra_error() -> None:
    ctx = make_ctx(current_state=State.S2_CODEX_FIX)
    ctx.record_fixer_failure("codex exited 137")
    na = decide(ctx)
    assert (na.new_state, na.escalation) == (State.S_ERROR_INFRA, EscalationKind.INFRA_FAILURE)


def test_handoff_tier_waits_for_the_outside_agent_then_rechecks() -> None:
    ctx = at(State.S0_BASELINE_CHECK, hard(), enable_aider=True, tier_modes={"aider": "handoff"})
    na = decide(ctx)
    assert (na.new_state, na.action) == (State.S1_AIDER_FIX, Action.AWAIT_HANDOFF)
    ctx.begin_step(na.action, na.new_state)
    ctx.begin_handoff("aider", 1)
    ctx.complete_step()
    waiting = decide(ctx)
    assert (waiting.new_state, waiting.action) == (State.S1_AIDER_FIX, Action.WAIT_INPUT)
    assert not is_actionable(waiting, T0)
    attempt = AIAttempt(attempt_number=1, agent="aider", input_error_report_id="0", handoff=True)
    assert ctx.submit_handoff(attempt)
    assert decide(ctx).new_state is State.S1_AIDER_RECHECK


# -- tier RECHECK states --------------------------------------------------------------------


def after_fix(
    state: State, before: list[Finding], after: list[Finding], **fields: Any
) -> ErrorPipelineContext:
    """In `state` (a RECHECK) with the report before the fix and the one after it."""
    ctx = make_ctx(current_state=state, **fields)
    ctx.record_check(make_report(before), T0)
    ctx.record_check(make_report(after), T0)
    return ctx


ALL_TIERS = {"enable_aider": True, "enable_codex": True, "enable_claude": True}


def test_recheck_clean_is_success() -> None:
    ctx = after_fix(State.S1_AIDER_RECHECK, hard(), [], **ALL_TIERS)
    assert decide(ctx).new_state is State.S_SUCCESS


def test_recheck_style_left_elsewhere_not_strict_is_success() -> None:
    ctx = after_fix(State.S2_CODEX_RECHECK, hard(), not_own(style()), **ALL_TIERS)
    assert decide(ctx).new_state is State.S_SUCCESS


def test_recheck_style_left_strict_escalates() -> None:
    ctx = after_fix(State.S2_CODEX_RECHECK, hard(), style(), strict_mode=True, **ALL_TIERS)
    assert decide(ctx).new_state is State.S3_CLAUDE_FIX


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (State.S1_AIDER_RECHECK, State.S2_CODEX_FIX),
        (State.S2_CODEX_RECHECK, State.S3_CLAUDE_FIX),
        (State.S3_CLAUDE_RECHECK, State.S4_QUARANTINE),
    ],
)
def test_recheck_still_failing_goes_to_the_next_tier(state: State, expected: State) -> None:
    ctx = after_fix(state, hard("a", "b"), hard("a"), **ALL_TIERS)
    assert decide(ctx).new_state is expected


def test_recheck_skips_disabled_tiers() -> None:
    ctx = after_fix(State.S1_AIDER_RECHECK, hard(), hard(), enable_aider=True, enable_claude=True)
    assert decide(ctx).new_state is State.S3_CLAUDE_FIX


def test_last_tier_failing_is_tiers_exhausted() -> None:
    ctx = after_fix(State.S3_CLAUDE_RECHECK, hard(), hard(), enable_claude=True)
    na = decide(ctx)
    assert (na.new_state, na.escalation) == (State.S4_QUARANTINE, EscalationKind.TIERS_EXHAUSTED)


def test_progress_under_max_attempts_repeats_the_tier() -> None:
    ctx = after_fix(
        State.S2_CODEX_RECHECK,
        hard("a", "b"),
        hard("a"),
        max_attempts_per_agent=2,
        agent_attempt_counts={"codex": 1},
        **ALL_TIERS,
    )
    na = decide(ctx)
    assert (na.new_state, na.action) == (State.S2_CODEX_FIX, Action.CALL_CODEX)
    assert "progress" in na.reason


def test_progress_at_max_attempts_moves_on() -> None:
    ctx = after_fix(
        State.S2_CODEX_RECHECK,
        hard("a", "b"),
        hard("a"),
        max_attempts_per_agent=2,
        agent_attempt_counts={"codex": 2},
        **ALL_TIERS,
    )
    assert decide(ctx).new_state is State.S3_CLAUDE_FIX


def test_fewer_findings_with_one_message_are_progress() -> None:
    """Seed 001's guard is the total: three identical findings down to two is progress."""
    ctx = after_fix(
        State.S1_AIDER_RECHECK,
        hard("a", "a", "a"),
        hard("a", "a"),
        max_attempts_per_agent=3,
        agent_attempt_counts={"aider": 1},
        **ALL_TIERS,
    )
    assert ctx.same_error_repeats == 0
    na = decide(ctx)
    assert (na.new_state, na.action) == (State.S1_AIDER_FIX, Action.CALL_AIDER)


def test_each_agent_has_its_own_max_attempts() -> None:
    limits = {"aider": 1, "codex": 3}  # claude: max_attempts_per_agent (2)
    for state, agent, passes, expected in [
        (State.S2_CODEX_RECHECK, "codex", 2, State.S2_CODEX_FIX),
        (State.S2_CODEX_RECHECK, "codex", 3, State.S3_CLAUDE_FIX),
        (State.S1_AIDER_RECHECK, "aider", 1, State.S2_CODEX_FIX),
        (State.S3_CLAUDE_RECHECK, "claude", 1, State.S3_CLAUDE_FIX),
        (State.S3_CLAUDE_RECHECK, "claude", 2, State.S4_QUARANTINE),
    ]:
        ctx = after_fix(
            state,
            hard("a", "b"),
            hard("a"),
            max_attempts_per_agent=2,
            agent_max_attempts=limits,
            agent_attempt_counts={agent: passes},
            **ALL_TIERS,
        )
        assert decide(ctx).new_state is expected, (agent, passes)


def test_no_progress_moves_on_early_and_counts_the_repeat() -> None:
    ctx = after_fix(
        State.S1_AIDER_RECHECK,
        hard("a", "b"),
        hard("a", "b"),
        max_attempts_per_agent=5,
        agent_attempt_counts={"aider": 1},
        **ALL_TIERS,
    )
    assert ctx.same_error_repeats == 1
    na = decide(ctx)
    assert na.new_state is State.S2_CODEX_FIX and "no progress" in na.reason


def test_different_findings_but_not_fewer_is_no_progress() -> None:
    ctx = after_fix(
        State.S1_AIDER_RECHECK,
        hard("a"),
        hard("b"),
        max_attempts_per_agent=3,
        agent_attempt_counts={"aider": 1},
        **ALL_TIERS,
    )
    assert ctx.same_error_repeats == 0
    assert decide(ctx).new_state is State.S2_CODEX_FIX


def test_repeat_pass_respects_the_budget() -> None:
    ctx = after_fix(
        State.S1_AIDER_RECHECK,
        hard("a", "b"),
        hard("a"),
        max_attempts_per_agent=2,
        agent_attempt_counts={"aider": 1},
        signature_attempts_used=1,
        signature_attempt_limit=1,
        **ALL_TIERS,
    )
    assert decide(ctx).escalation is EscalationKind.BUDGET_EXHAUSTED


def test_recheck_infra() -> None:
    ctx = make_ctx(current_state=State.S3_CLAUDE_RECHECK)
    ctx.record_check(make_report(hard(), infra=True), T0)
    assert decide(ctx).new_state is State.S_ERROR_INFRA


# -- terminal states and helpers ------------------------------------------------------------


@pytest.mark.parametrize("state", [State.S_SUCCESS, State.S4_QUARANTINE, State.S_ERROR_INFRA])
def test_terminal_states_do_nothing(state: State) -> None:
    na = decide(make_ctx(current_state=state))
    assert (na.new_state, na.action) == (state, Action.NONE)
    assert is_terminal(state) and not is_actionable(na, T0)


def test_non_terminal_states() -> None:
    assert not any(is_terminal(s) for s in State if s.name.startswith(("S0", "S1", "S2", "S3")))
    assert not is_terminal(State.S_INIT)


def test_tier_order() -> None:
    assert TIER_ORDER == ("aider", "codex", "claude")


def test_report_labels_follow_the_seed_then_number_on() -> None:
    assert report_label(State.S0_BASELINE_CHECK, []) == "0"
    assert report_label(State.S0_MECHANICAL_RECHECK, ["0"]) == "0b"
    assert report_label(State.S1_AIDER_RECHECK, ["0", "0b"]) == "1"
    assert report_label(State.S3_CLAUDE_RECHECK, ["0", "1"]) == "3"
    assert report_label(State.S1_AIDER_RECHECK, ["0", "1"]) == "4"
    assert report_label(State.S0_BASELINE_CHECK, ["0", "4", "1"]) == "5"
    with pytest.raises(KeyError):
        report_label(State.S1_AIDER_FIX, [])


def test_max_steps_grows_with_passes_and_retries() -> None:
    small = max_steps(make_ctx(max_transient_retries=0))
    assert max_steps(make_ctx(max_transient_retries=2)) == small + 4
    assert max_steps(make_ctx(max_transient_retries=0, max_attempts_per_agent=2)) == small + 6
    per_agent = make_ctx(max_transient_retries=0, agent_max_attempts={"codex": 3})
    assert max_steps(per_agent) == small + 4


def test_deciding_changes_nothing_and_begin_step_does_not_change_the_decision() -> None:
    ctx = after_fix(State.S1_AIDER_RECHECK, hard("a", "b"), hard("a"), **ALL_TIERS)
    before = ctx.model_dump_json()
    na = decide(ctx)
    assert ctx.model_dump_json() == before
    ctx.begin_step(na.action, na.new_state, T0)
    assert decide(ErrorPipelineContext.model_validate_json(ctx.model_dump_json())) == na


# -- issue 14: the incident's own failure, pre-existing findings, flaky is not fixed -------


def elsewhere(name: str, path: str = "b.py") -> Finding:
    return finding(name, "type").model_copy(update={"path": path})


def with_baseline(
    state: State, baseline: list[Finding], last: list[Finding], **fields: Any
) -> ErrorPipelineContext:
    """In `state` after a first baseline that found `baseline`, the last check `last`."""
    ctx = make_ctx(current_state=state, **fields)
    first = make_report(baseline)
    ctx.record_baseline(first)
    ctx.record_check(first, T0, "d1")
    ctx.record_check(make_report(last), T0, "d2")
    return ctx


def test_a_pre_existing_finding_in_a_file_the_incident_is_not_about_does_not_block() -> None:
    old = elsewhere("old")
    moved = old.model_copy(update={"line": 40, "message": "problem old"})  # lines move
    na = decide(with_baseline(State.S1_AIDER_RECHECK, [*hard("own"), old], [moved]))
    assert na.new_state is State.S_SUCCESS
    assert "pre-existing, not the incident's: mypy old in b.py" in na.reason


def test_the_incidents_own_finding_still_there_blocks() -> None:
    ctx = with_baseline(State.S1_AIDER_RECHECK, hard("own"), hard("own"))
    assert decide(ctx).new_state is State.S4_QUARANTINE


def test_a_new_hard_finding_anywhere_blocks() -> None:
    ctx = with_baseline(State.S1_AIDER_RECHECK, hard("own"), [elsewhere("new")])
    assert decide(ctx).new_state is State.S4_QUARANTINE


def test_with_strict_mode_a_pre_existing_finding_blocks() -> None:
    ctx = with_baseline(
        State.S1_AIDER_RECHECK, [*hard("own"), elsewhere("old")], [elsewhere("old")],
        strict_mode=True,
    )  # fmt: skip
    assert decide(ctx).new_state is State.S4_QUARANTINE


def test_an_older_state_without_a_baseline_blocks_on_every_hard_finding() -> None:
    ctx = after_fix(State.S1_AIDER_RECHECK, hard("own"), [elsewhere("old")])
    assert ctx.baseline_keys is None and decide(ctx).new_state is State.S4_QUARANTINE


def test_a_verification_or_flaky_finding_is_never_excused() -> None:
    verify = Finding(
        tool="verify", path="python check.py", code="exit-1", category=Category.VERIFICATION,
        severity=Severity.ERROR, message="exited 1", hard=True,
    )  # fmt: skip
    flaky = elsewhere("x").model_copy(update={"code": "flaky"})
    for left in (verify, flaky):
        ctx = with_baseline(State.S1_AIDER_RECHECK, [*hard("own"), left], [left])
        assert decide(ctx).new_state is State.S4_QUARANTINE, left


def test_a_recheck_that_passes_with_the_targets_unchanged_is_not_reproduced() -> None:
    ctx = make_ctx(current_state=State.S1_AIDER_RECHECK, current_agent="aider")
    ctx.record_check(make_report(hard()), T0, "same")
    ctx.record_check(make_report([]), T0, "same")
    na = decide(ctx)
    assert na.new_state is State.S_SUCCESS and na.outcome is Outcome.NOT_REPRODUCED
    assert "aider changed no target file" in na.reason
    ctx.check_digests = ["before", "after"]
    assert decide(ctx).outcome is Outcome.FIXED


@pytest.mark.parametrize(
    ("capture", "now", "outcome"),
    [
        ("d", "d", Outcome.NOT_REPRODUCED),
        (None, "d", Outcome.NOT_REPRODUCED),  # an older bundle: still no fix claimed
        ("d", "e", Outcome.CHANGED_BEFORE_CHECK),
    ],
)
def test_a_baseline_that_passes_never_claims_a_fix(
    capture: str | None, now: str, outcome: Outcome
) -> None:
    ctx = make_ctx(current_state=State.S0_BASELINE_CHECK, capture_digest=capture)
    ctx.record_check(make_report([]), T0, now)
    na = decide(ctx)
    assert na.new_state is State.S_SUCCESS and na.outcome is outcome
    assert na.reason.startswith("not reproduced (flaky)") == (outcome is Outcome.NOT_REPRODUCED)


def test_a_baseline_with_an_infrastructure_failure_is_not_the_baseline() -> None:
    ctx = make_ctx(current_state=State.S0_BASELINE_CHECK)
    ctx.record_baseline(make_report(hard("x"), infra=True))
    assert ctx.baseline_keys is None and ctx.own_files is None
    ctx.record_baseline(make_report([elsewhere("old")]))
    assert ctx.own_files == ["a.py"] and ctx.baseline_keys == [("b.py", "old", "problem old")]
    ctx.record_baseline(make_report([]))  # the first complete one stands
    assert ctx.baseline_keys == [("b.py", "old", "problem old")]


def test_at_the_baseline_check_nothing_is_excused() -> None:
    """The baseline check defines the incident: a hard finding elsewhere that it found is
    in its own baseline by definition, and must not turn it into "not reproduced"."""
    ctx = make_ctx(current_state=State.S0_BASELINE_CHECK)
    report = make_report([elsewhere("old")])
    ctx.record_baseline(report)
    ctx.record_check(report, T0, "d1")
    na = decide(ctx)
    assert na.new_state is not State.S_SUCCESS, na


def test_targets_and_finding_paths_are_compared_normalised() -> None:
    """An older state that stored `./a.py`: the finding at `a.py` is the target's own."""
    ctx = with_baseline(State.S1_AIDER_RECHECK, hard("own"), hard("own"), python_files=["./a.py"])
    assert ctx.own_files == ["a.py"]
    ctx.own_files = ["./a.py"]  # as an older own_files() stored it
    assert decide(ctx).new_state is State.S4_QUARANTINE
