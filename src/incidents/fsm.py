"""The escalation state machine of seed 001, as one pure function (no I/O, no clock).

Protocol (the step service follows it exactly; one tick = at most one step):

1. Load `ctx` (state.json). `ctx.current_state` is the state the machine is IN: its entry
   action has been performed and its outcome recorded. Once planned, and when no step is
   pending, the service adopts the plan on disk (`ctx.adopt_plan`): a plan supplied or
   replaced since PLAN is what the next check runs.
2. `na = decide_next_action(ctx)`. If `not is_actionable(na, now)` (WAIT_INPUT, NONE, or
   `na.not_before` still in the future) the tick ends: nothing is written.
3. `ctx.begin_step(na.action, na.new_state, now)`; persist it when the action changes the
   workdir (autofix, a fixer call, a handoff). That is the intent journal: such a redo
   must find the step it began. PLAN, RUN_PIPELINE, WAIT_RETRY and the closing actions
   need none: their artifacts are keyed by the step and reused, or they change only the
   context, so a redo after a crash decides and writes exactly the same.
4. Perform `na.action` (the entry action of `na.new_state`), writing its artifacts keyed
   by `ctx.step` (report label from `report_label`), then record its outcome with the one
   matching `ctx` method (table below), then `ctx.complete_step()`; persist once,
   atomically. That write commits the step: outcome, new state and `step + 1` together.
   The file is fsynced before its rename (old-or-new); its folder is fsynced at once
   after a journaled action, otherwise before the next one, when the pickup ends, or
   by the close: a power cut can only take back steps that redo identically.

   PLAN -> record_plan · RUN_PIPELINE -> record_baseline (the first baseline check only)
   then record_check with the targets' digest (clears not_before) ·
   WAIT_RETRY -> schedule_retry(na.not_before) (always set) · MECHANICAL_AUTOFIX -> record_autofix ·
   CALL_* -> enter_tier + record_ai_attempt (record_api_failure when the API refused the
   call: no try spent; with `fixer_wait` the same tier is called again at not_before) ·
   AWAIT_HANDOFF -> begin_handoff ·
   QUARANTINE / FINALIZE_* -> record_final(status, reason=na.reason, kind=na.escalation,
   outcome=na.outcome) ·
   any fixer that crashes, times out or cannot start -> record_fixer_failure (still
   complete the step: the next decision is S_ERROR_INFRA).
   A handoff is submitted from outside (CLI) with `ctx.submit_handoff(attempt)`.

Crash-resume: if `ctx.pending` is set on load, step `pending.step` was begun but not
committed. The decision is unchanged (begin_step touches nothing it reads), so redo it:
if that step's artifact exists, record it and complete without re-running the action;
otherwise perform the action again. A completed step is never repeated.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import NamedTuple

from incidents.guards import blocking, preexisting, ran_tests
from incidents.models.pipeline import Action, Agent, ErrorPipelineContext, EscalationKind, State
from incidents.models.report import ErrorReport
from incidents.vocab import ErrorCode, FailureClass, Outcome

__all__ = [
    "TERMINAL",
    "TIER_NUMBER",
    "TIER_ORDER",
    "TIERS",
    "Action",
    "EscalationKind",
    "NextAction",
    "State",
    "Tier",
    "backoff_delay",
    "blocking",
    "decide_next_action",
    "is_actionable",
    "is_terminal",
    "max_steps",
    "preexisting",
    "ran_tests",
    "report_label",
]


class NextAction(NamedTuple):
    """Move to `new_state` by performing `action`; `reason` says why, for the audit log."""

    new_state: State
    action: Action
    reason: str
    not_before: datetime | None = None
    escalation: EscalationKind | None = None
    outcome: Outcome | None = None  # FINALIZE_SUCCESS: may anyone claim a fix?


class Tier(NamedTuple):
    agent: Agent
    fix: State
    recheck: State
    call: Action
    attempt_number: int
    label: str


TIERS = (
    Tier("aider", State.S1_AIDER_FIX, State.S1_AIDER_RECHECK, Action.CALL_AIDER, 1, "1"),
    Tier("codex", State.S2_CODEX_FIX, State.S2_CODEX_RECHECK, Action.CALL_CODEX, 2, "2"),
    Tier("claude", State.S3_CLAUDE_FIX, State.S3_CLAUDE_RECHECK, Action.CALL_CLAUDE, 3, "3"),
)
TIER_ORDER: tuple[Agent, ...] = tuple(t.agent for t in TIERS)
TIER_NUMBER: dict[str, int] = {t.agent: t.attempt_number for t in TIERS}
TERMINAL = frozenset({State.S_SUCCESS, State.S4_QUARANTINE, State.S_ERROR_INFRA})
CHECK_LABELS = {
    State.S0_BASELINE_CHECK: "0",
    State.S0_MECHANICAL_RECHECK: "0b",
    **{t.recheck: t.label for t in TIERS},
}
_FIX_TIER = {t.fix: t for t in TIERS}
_RECHECK_TIER = {t.recheck: t for t in TIERS}
_IDLE = frozenset({Action.WAIT_INPUT, Action.NONE})
# what no fixer can mend: a person acts, then a requeue re-runs the reproduction
PERSON_CLASSES = {
    FailureClass.ENV: EscalationKind.ENVIRONMENT,
    FailureClass.NEVER_RETRY: EscalationKind.NEVER_RETRY,
}
# failures that clear by themselves or by a person's act, not by a change to the code
RECOVERING = frozenset({FailureClass.TRANSIENT, *PERSON_CLASSES})


def is_terminal(state: State) -> bool:
    return state in TERMINAL


def is_actionable(na: NextAction, now: datetime) -> bool:
    """Whether a tick should begin a step for `na` now (else it ends, writing nothing)."""
    if na.action in _IDLE:
        return False
    if na.action is Action.WAIT_RETRY:  # its not_before is what it schedules: store it now
        return True
    return na.not_before is None or now >= na.not_before


def report_label(state: State, used: list[str]) -> str:
    """Seed file label of the report a check entering `state` writes: 0, 0b, 1, 2, 3 the
    first time; any later report (a retry, a repeat pass) takes the next number after 3."""
    label = CHECK_LABELS[state]
    if label not in used:
        return label
    numbers = [int(u) for u in used if u.isdigit()]
    return str(max([3, *numbers]) + 1)


def backoff_delay(retries_done: int, base_s: float, max_s: float, jitter: float) -> float:
    """Exponential backoff with "equal jitter": half fixed, half scaled by `jitter` in [0,1]."""
    capped = min(max_s, base_s * 2.0**retries_done)
    return capped / 2 + capped / 2 * jitter


def max_steps(ctx: ErrorPipelineContext) -> int:
    """An upper bound on the steps from S_INIT to a terminal state (waits not counted)."""
    baseline = 1 + 2 * ctx.max_transient_retries
    tiers = 2 * sum(ctx.max_attempts_for(t.agent) for t in TIERS)
    return 1 + baseline + 2 + tiers + 1


def decide_next_action(ctx: ErrorPipelineContext) -> NextAction:
    """Seed 001's transitions from `ctx.current_state`; pure and deterministic."""
    state = ctx.current_state
    if is_terminal(state):
        return NextAction(state, Action.NONE, "terminal state")
    if state is State.S_INIT:
        return _from_init(ctx)
    if state is State.S0_MECHANICAL_AUTOFIX:
        return _from_fix(ctx, State.S0_MECHANICAL_RECHECK, handoff=False)
    if state in _FIX_TIER:
        return _from_fix(ctx, _FIX_TIER[state].recheck, handoff=True)
    return _from_check(ctx, state)


# -- S_INIT -------------------------------------------------------------------------------


def _from_init(ctx: ErrorPipelineContext) -> NextAction:
    person = PERSON_CLASSES.get(ctx.failure_class)
    if person is not None and not ctx.requeues:  # no fixer, no autofix: a person acts first
        return _quarantine(
            person,
            f"failure class {ctx.failure_class} ({ctx.error_code or 'no code'}): escalate at "
            "once, no fixer can mend it",
        )
    if ctx.max_regressions is not None and ctx.regression_count > ctx.max_regressions:
        return _quarantine(
            EscalationKind.REGRESSIONS,
            f"regressed {ctx.regression_count} times, more than [policy] max_regressions = "
            f"{ctx.max_regressions}: the fixes do not hold, a person must look",
        )
    if not ctx.planned:
        return NextAction(State.S_INIT, Action.PLAN, "plan before the baseline check")
    if person is not None and not ctx.verification_commands:  # a clean file proves nothing
        return _quarantine(
            person,
            "requeued, but nothing re-runs the step (no reproduction): once what it needs "
            "is in place, resolve it by hand",
        )
    if not ctx.has_something_to_check():
        if ctx.failure_class is FailureClass.TRANSIENT:
            return _await_recovery(ctx)
        return _quarantine(
            EscalationKind.UNVERIFIABLE,
            "unverifiable: no target files and no verification commands, even after planning",
        )
    return NextAction(State.S0_BASELINE_CHECK, Action.RUN_PIPELINE, "baseline check")


# -- FIX states ---------------------------------------------------------------------------


def _from_fix(ctx: ErrorPipelineContext, recheck: State, *, handoff: bool) -> NextAction:
    tier = _FIX_TIER.get(ctx.current_state)
    if ctx.fixer_wait is not None and tier is not None:  # its API said wait: the same tier
        return NextAction(ctx.current_state, tier.call, ctx.fixer_wait, ctx.not_before)
    if ctx.fixer_failure is not None:
        return _infra(f"fixer failed: {ctx.fixer_failure}")
    if handoff and ctx.waiting_for_input:  # only AI tiers hand off; autofix never waits
        return NextAction(
            ctx.current_state,
            Action.WAIT_INPUT,
            f"waiting for {ctx.handoff_agent} to submit",
            ctx.handoff_deadline,  # then it escalates (`due`)
        )
    return NextAction(recheck, Action.RUN_PIPELINE, "recheck after the fix")


# -- check states (baseline and every recheck) --------------------------------------------


def _from_check(ctx: ErrorPipelineContext, state: State) -> NextAction:
    report = ctx.last_error_report
    if ctx.not_before is not None:
        if _step_succeeded_since(ctx, ctx.last_check_at):
            why = f"its step succeeded since the last check ({ctx.step_ok_by}): re-run it now"
            return NextAction(state, Action.RUN_PIPELINE, why)
        return NextAction(state, Action.RUN_PIPELINE, "transient retry", ctx.not_before)
    if report is None:
        return NextAction(state, Action.RUN_PIPELINE, "no report yet: run the check")
    if report.infra_failures:
        tools = ", ".join(sorted({f.tool for f in report.infra_failures}))
        return _infra(f"the check could not run: {tools}")
    return _CHECK_GUARDS[state](ctx, report)


def _baseline(ctx: ErrorPipelineContext, report: ErrorReport) -> NextAction:
    stuck = _blocking(ctx, report)
    if stuck and _transient_retry_left(ctx):
        return _wait_retry(ctx, report)
    if ctx.failure_class in RECOVERING:  # never a fixer, never the autofix
        return _recovering_baseline(ctx, report, stuck)
    if report.summary.total_issues == 0:
        return _success(ctx, report, "baseline clean")
    if report.summary.style_only and ctx.enable_mechanical_autofix:
        return NextAction(
            State.S0_MECHANICAL_AUTOFIX, Action.MECHANICAL_AUTOFIX, "style-only: autofix"
        )
    if not _blocking(ctx, report):
        return _success(ctx, report, "no blocking findings at the baseline")
    return _escalate_after(ctx, None, "baseline blocking")


def _recovering_baseline(ctx: ErrorPipelineContext, report: ErrorReport, stuck: bool) -> NextAction:
    """A failure that clears by itself (transient, its retries used) or by a person's act
    (env, never_retry, requeued): whether it still fails is all that decides."""
    person = PERSON_CLASSES.get(ctx.failure_class)
    if stuck and person is not None:
        return _quarantine(person, "still failing after the requeue: no fixer can mend it")
    if stuck:
        return _quarantine(
            EscalationKind.STILL_FAILING,
            f"transient failure still failing after {ctx.transient_retries} retry(ies)",
        )
    if person is None and not ran_tests(ctx, report):
        return _await_recovery(ctx)  # a clean target re-ran nothing of it: wait for its step
    why = "its reproduction passes after the requeue" if person else "the check passes"
    return _success(ctx, report, why)


def _mechanical_recheck(ctx: ErrorPipelineContext, report: ErrorReport) -> NextAction:
    if not _blocking(ctx, report):
        return _success(ctx, report, "no blocking findings after the mechanical autofix")
    return _escalate_after(ctx, None, "blocking after the mechanical autofix")


def _tier_recheck(ctx: ErrorPipelineContext, report: ErrorReport) -> NextAction:
    tier = _RECHECK_TIER[ctx.current_state]
    if not _blocking(ctx, report):
        return _success(ctx, report, f"no blocking findings after {tier.agent}")
    passes = max(1, ctx.agent_attempt_counts.get(tier.agent, 0))  # in a RECHECK: >= 1 done
    if _made_progress(ctx) and passes < ctx.max_attempts_for(tier.agent):
        return _enter_tier(ctx, tier, f"{tier.agent} made progress: pass {passes + 1}")
    why = "made progress but used its passes" if _made_progress(ctx) else "made no progress"
    return _escalate_after(ctx, tier, f"{tier.agent} {why}")


_CHECK_GUARDS: dict[State, Callable[[ErrorPipelineContext, ErrorReport], NextAction]] = {
    State.S0_BASELINE_CHECK: _baseline,
    State.S0_MECHANICAL_RECHECK: _mechanical_recheck,
    **{t.recheck: _tier_recheck for t in TIERS},
}


# -- guards -------------------------------------------------------------------------------


def _blocking(ctx: ErrorPipelineContext, report: ErrorReport) -> bool:
    return blocking(ctx, report)  # incidents.guards: the one rule, shared with the close


def _made_progress(ctx: ErrorPipelineContext) -> bool:
    """Seed 001's guard: fewer findings (`total_issues`) than before the fix. A count, so
    findings that share a message still count one by one."""
    last, prev = ctx.last_error_report, ctx.previous_error_report
    if last is None or prev is None:
        return False
    return last.summary.total_issues < prev.summary.total_issues


def _transient_retry_left(ctx: ErrorPipelineContext) -> bool:
    return (
        ctx.failure_class is FailureClass.TRANSIENT
        and ctx.transient_retries < ctx.max_transient_retries
    )


def _tier_enabled(ctx: ErrorPipelineContext, agent: Agent) -> bool:
    flags = {"aider": ctx.enable_aider, "codex": ctx.enable_codex, "claude": ctx.enable_claude}
    return flags.get(agent, False)


def _budget_exhausted(ctx: ErrorPipelineContext) -> bool:
    limit = ctx.signature_attempt_limit
    return limit is not None and ctx.signature_attempts_used >= limit


def _step_succeeded_since(ctx: ErrorPipelineContext, when: datetime | None) -> bool:
    """A success of its step (`incidents run` passing, `capture --ok`) came after its last
    failure (its last occurrence, and `when`, the last check that saw it fail)."""
    ok = ctx.step_ok_at
    if ok is None or ctx.failure_class is not FailureClass.TRANSIENT:
        return False
    return all(t is None or ok >= t for t in (ctx.last_seen, when))


# -- transitions --------------------------------------------------------------------------


def _wait_retry(ctx: ErrorPipelineContext, report: ErrorReport) -> NextAction:
    base = ctx.last_check_at or report.generated_at
    if base is None:  # an older context: re-run once to get a time to back off from
        return NextAction(ctx.current_state, Action.RUN_PIPELINE, "transient: no check time")
    jitter = ctx.retry_jitter
    if jitter is None:  # deterministic per incident and retry: spreads incidents apart
        seed = f"{ctx.workstream_id}:{ctx.transient_retries}".encode()
        jitter = zlib.crc32(seed) / 0xFFFFFFFF
    delay = backoff_delay(ctx.transient_retries, ctx.retry_base_s, ctx.retry_max_s, jitter)
    n = ctx.transient_retries + 1
    return NextAction(
        ctx.current_state,
        Action.WAIT_RETRY,
        f"transient failure: re-run the check (retry {n}/{ctx.max_transient_retries}) "
        f"after {delay:.1f}s",
        base + timedelta(seconds=delay),
    )


def _escalate_after(ctx: ErrorPipelineContext, done: Tier | None, why: str) -> NextAction:
    """The first enabled tier after `done` (all of them when None), or quarantine."""
    start = 0 if done is None else TIERS.index(done) + 1
    following = [t for t in TIERS[start:] if _tier_enabled(ctx, t.agent)]
    if not following:
        kind = EscalationKind.NO_FIXER if done is None else EscalationKind.TIERS_EXHAUSTED
        return _quarantine(kind, f"{why}; no further fixer tier enabled")
    return _enter_tier(ctx, following[0], why)


def _enter_tier(ctx: ErrorPipelineContext, tier: Tier, why: str) -> NextAction:
    if not ctx.target_files:
        return _quarantine(EscalationKind.NO_FIXER, f"{why}; no target files a fixer may edit")
    if _budget_exhausted(ctx):
        used = f"{ctx.signature_attempts_used}/{ctx.signature_attempt_limit}"
        group, own = ctx.budget_group, ctx.error_signature
        whose = (
            f"group {group!r} exhausted ({used}: its signature {own!r} was merged into it)"
            if group and own and group != own
            else f"signature {own or '?'} exhausted ({used})"
        )
        return _quarantine(EscalationKind.BUDGET_EXHAUSTED, f"{why}; retry budget of {whose}")
    handoff = ctx.tier_modes.get(tier.agent, "run") == "handoff"
    action = Action.AWAIT_HANDOFF if handoff else tier.call
    return NextAction(tier.fix, action, f"{why} -> {tier.agent}")


def _await_recovery(ctx: ErrorPipelineContext) -> NextAction:
    """A transient failure with nothing to re-run waits for its step: a success of it since
    its last failure, or `transient_quiet` with no recurrence, closes it as recovered."""
    if _step_succeeded_since(ctx, None):
        assert ctx.step_ok_at is not None
        return NextAction(
            State.S_SUCCESS,
            Action.FINALIZE_SUCCESS,
            f"recovered: its step succeeded at {ctx.step_ok_at.isoformat()} "
            f"({ctx.step_ok_by}), after its last failure; no fix claimed",
            outcome=Outcome.RECOVERED,
        )
    if ctx.last_seen is None:  # an older context: no time to be quiet from
        return _quarantine(
            EscalationKind.UNVERIFIABLE,
            "unverifiable: a transient failure with nothing to re-run and no time it was seen",
        )
    quiet = ctx.transient_quiet_s
    return NextAction(
        State.S_SUCCESS,
        Action.FINALIZE_SUCCESS,
        f"recovered: no recurrence within [policy] transient_quiet ({quiet:g}s) of its last "
        f"failure at {ctx.last_seen.isoformat()}; nothing to re-run, no fix claimed",
        ctx.last_seen + timedelta(seconds=quiet),
        outcome=Outcome.RECOVERED,
    )


def _quarantine(kind: EscalationKind, reason: str) -> NextAction:
    return NextAction(State.S4_QUARANTINE, Action.QUARANTINE, reason, escalation=kind)


def due(na: NextAction, ctx: ErrorPipelineContext, now: datetime) -> NextAction:
    """`na` as it stands at `now`: a hand-off nobody submitted by its deadline ([handoff]
    wait_s) escalates, saying so."""
    if na.action is not Action.WAIT_INPUT or na.not_before is None or now < na.not_before:
        return na
    return _quarantine(
        EscalationKind.NO_FIXER,
        f"no agent submitted a fix for {ctx.handoff_agent} by {na.not_before.isoformat()} "
        "([handoff] wait_s): a person must fix it, or run an agent skill on `incidents next`",
    )


def _success(ctx: ErrorPipelineContext, report: ErrorReport, why: str) -> NextAction:
    """Success, and whether anyone may claim the fix. Flaky is not fixed: a check that
    passes with the targets as they were (at capture for the baseline, before the fix for a
    recheck) was not made to pass by anyone: `not_reproduced`. A test failure whose check
    ran no test at all (the failure named tests in a form nothing recognised, or of another
    language) was not checked: unverifiable, never a success."""
    if not report.tool_runs and not ctx.verification_commands:
        return _quarantine(
            EscalationKind.UNVERIFIABLE,
            f"unverifiable: {why}, but the check ran no tool and no verification command "
            "(no tool of [checks] tools checks the targets)",
        )
    if ctx.error_code is ErrorCode.TEST_FAILURE and not ran_tests(ctx, report):
        return _quarantine(
            EscalationKind.UNVERIFIABLE,
            f"unverifiable: {why}, but the failure is a test failure and the check ran no "
            "test (name the failing tests in the log, add the test file as a target, or "
            "capture with --reproduce)",
        )
    digests = ctx.check_digests
    now = digests[-1] if digests else None
    if ctx.current_state is State.S0_BASELINE_CHECK:
        if ctx.capture_digest is not None and now is not None and now != ctx.capture_digest:
            outcome = Outcome.CHANGED_BEFORE_CHECK
            reason = f"{why}; the targets changed between the capture and the check: fixed "
            reason += "before the escalation machine looked, not by it"
        elif ctx.failure_class in RECOVERING:  # it clears by itself, or a person cleared it
            outcome = Outcome.RECOVERED
            reason = f"recovered: {why}, no target changed: no fix claimed"
            if ctx.transient_retries:
                reason += f", after {ctx.transient_retries} transient retry(ies)"
        else:
            outcome = Outcome.NOT_REPRODUCED
            reason = f"not reproduced (flaky): {why}, " + (
                "no target changed since the capture"
                if ctx.capture_digest is not None and now is not None
                else "no fix was applied (capture recorded no target digests)"
            )
            if ctx.transient_retries:
                reason += f", after {ctx.transient_retries} transient retry(ies)"
    else:
        before = digests[-2] if len(digests) >= 2 else None
        if now is not None and now == before:
            outcome = Outcome.NOT_REPRODUCED
            who = ctx.current_agent if ctx.current_agent != "none" else "the mechanical autofix"
            reason = f"not reproduced (flaky): {why}, but {who} changed no target file: "
            reason += "no fix to credit"
        else:
            outcome, reason = Outcome.FIXED, why
    excused = preexisting(ctx, report)
    if excused:
        shown = "; ".join(f"{f.tool} {f.code or ''} in {f.path}" for f in excused[:5])
        more = f" (+{len(excused) - 5} more)" if len(excused) > 5 else ""
        reason += f" (pre-existing, not the incident's: {shown}{more})"
    return NextAction(State.S_SUCCESS, Action.FINALIZE_SUCCESS, reason, outcome=outcome)


def _infra(reason: str) -> NextAction:
    return NextAction(
        State.S_ERROR_INFRA,
        Action.FINALIZE_INFRA_ERROR,
        reason,
        escalation=EscalationKind.INFRA_FAILURE,
    )
