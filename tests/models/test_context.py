"""ErrorPipelineContext: JSON round trip, schema, and the outcome recorders."""

from __future__ import annotations

import json
from datetime import timedelta

import jsonschema
import pytest
from pydantic import ValidationError

from incidents.models.pipeline import (
    Action,
    AIAttempt,
    ErrorPipelineContext,
    EscalationKind,
    State,
    finding_keys,
)
from incidents.vocab import ErrorCode, FailureClass, FinalStatus
from tests.test_fsm import T0, hard, make_ctx, make_report, style


def attempt(agent: str = "aider", n: int = 1) -> AIAttempt:
    return AIAttempt(attempt_number=n, agent=agent, input_error_report_id="0", notes="x")


def busy_ctx() -> ErrorPipelineContext:
    ctx = make_ctx(
        enable_aider=True,
        tier_modes={"codex": "handoff"},
        failure_class=FailureClass.TRANSIENT,
        error_code=ErrorCode.TIMEOUT,
        error_signature="sig-1",
        signature_attempt_limit=3,
        current_state=State.S1_AIDER_RECHECK,
        verification_commands=["python fetch.py"],
    )
    ctx.record_check(make_report(hard("a", "b")), T0)
    ctx.schedule_retry(T0 + timedelta(seconds=7))
    ctx.record_check(make_report(hard("a"), label="4"), T0 + timedelta(seconds=9))
    ctx.record_ai_attempt(attempt())
    ctx.begin_step(Action.RUN_PIPELINE, State.S1_AIDER_RECHECK, T0)
    ctx.record_final(FinalStatus.QUARANTINED, reason="r", kind=EscalationKind.TIERS_EXHAUSTED)
    return ctx


def test_json_round_trip_keeps_everything() -> None:
    ctx = busy_ctx()
    text = ctx.model_dump_json()
    back = ErrorPipelineContext.model_validate_json(text)
    assert back == ctx
    assert back.model_dump_json() == text
    assert isinstance(back.current_state, State)
    assert back.pending is not None and back.pending.action is Action.RUN_PIPELINE


def test_timestamps_keep_their_iso_form_for_the_mirror() -> None:
    ctx = make_ctx()
    ctx.schedule_retry(T0)
    assert json.loads(ctx.model_dump_json())["not_before"] == "2026-02-17T03:00:00+00:00"


def test_old_minimal_json_still_loads_with_defaults() -> None:
    old = {"run_id": "r", "workstream_id": "w", "current_state": "S1_AIDER_FIX"}
    ctx = ErrorPipelineContext.model_validate(old)
    assert ctx.current_state is State.S1_AIDER_FIX
    assert ctx.step == 0 and ctx.pending is None and ctx.not_before is None
    assert ctx.failure_class is FailureClass.UNKNOWN and ctx.tier_modes == {}


@pytest.mark.parametrize(
    "bad",
    [
        {"current_state": "S9_NOPE"},
        {"tier_modes": {"aider": "sometimes"}},
        {"retry_jitter": 1.5},
        {"surprise": 1},
    ],
)
def test_invalid_contexts_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ErrorPipelineContext.model_validate({"run_id": "r", "workstream_id": "w", **bad})


def test_the_generated_schema_validates_a_serialized_context() -> None:
    schema = ErrorPipelineContext.model_json_schema(mode="validation")
    doc = json.loads(busy_ctx().model_dump_json())
    jsonschema.Draft202012Validator(schema).validate(doc)
    states = schema["$defs"]["State"]["enum"]
    assert set(states) == {s.value for s in State}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({**doc, "current_state": "nope"})


def test_update_error_reports_shifts_last_to_previous() -> None:
    ctx = make_ctx()
    first, second = make_report(hard()), make_report([], label="1")
    ctx.update_error_reports(first)
    assert (ctx.previous_error_report, ctx.last_error_report) == (None, first)
    ctx.update_error_reports(second)
    assert (ctx.previous_error_report, ctx.last_error_report) == (first, second)


def test_record_ai_attempt_counts_per_agent_and_for_the_budget() -> None:
    ctx = make_ctx(signature_attempts_used=2)
    ctx.record_ai_attempt(attempt("aider"))
    ctx.record_ai_attempt(attempt("aider"))
    ctx.record_ai_attempt(attempt("codex", 2))
    assert ctx.agent_attempt_counts == {"aider": 2, "codex": 1}
    assert [a.agent for a in ctx.ai_attempts] == ["aider", "aider", "codex"]
    assert ctx.signature_attempts_used == 5


def test_record_check_tracks_labels_time_repeats_and_clears_not_before() -> None:
    ctx = make_ctx()
    ctx.schedule_retry(T0 + timedelta(seconds=5))
    ctx.record_check(make_report(hard("a"), label="0"), T0)
    ctx.record_check(make_report(hard("a"), label="1"), T0 + timedelta(seconds=1))
    ctx.record_check(make_report(hard("b"), label="2"), T0 + timedelta(seconds=2))
    assert ctx.report_labels == ["0", "1", "2"]
    assert ctx.same_error_repeats == 1
    assert ctx.not_before is None and ctx.transient_retries == 1
    assert ctx.last_check_at == T0 + timedelta(seconds=2)


def test_finding_keys_ignore_line_numbers() -> None:
    a, b = make_report(style("x")), make_report(style("x"))
    b.issues[0].line = 40
    assert finding_keys(a) == finding_keys(b)
    assert finding_keys(a) != finding_keys(make_report(style("y")))


def test_finding_keys_count_repeated_findings() -> None:
    assert finding_keys(make_report(hard("a", "a"))) != finding_keys(make_report(hard("a")))
    assert finding_keys(make_report(hard("a", "b"))) == finding_keys(make_report(hard("b", "a")))


def test_same_error_repeats_counts_an_unchanged_multiset_only() -> None:
    """Report totals 2, 1, 1, 0 of one repeated message: one repeat, not two."""
    ctx = make_ctx()
    for n in (2, 1, 1, 0):
        ctx.record_check(make_report(hard(*["a"] * n) if n else []), T0)
    assert ctx.same_error_repeats == 1


def test_record_plan_merges_verification_commands() -> None:
    ctx = make_ctx(planned=False, verification_commands=["a"])
    ctx.record_plan(["b", "a", "b"])
    assert ctx.planned and ctx.verification_commands == ["a", "b"]


def test_adopt_plan_replaces_the_verification_commands() -> None:
    ctx = make_ctx(verification_commands=["a", "old"])
    ctx.adopt_plan(["a", "new", "a"])
    assert ctx.verification_commands == ["a", "new"]


def test_handoff_is_submitted_once_and_only_by_its_agent() -> None:
    ctx = make_ctx()
    assert not ctx.submit_handoff(attempt())
    ctx.begin_handoff("codex", 2)
    assert (ctx.current_agent, ctx.attempt_number, ctx.waiting_for_input) == ("codex", 2, True)
    assert not ctx.submit_handoff(attempt("aider"))
    assert ctx.submit_handoff(attempt("codex", 2))
    assert not ctx.submit_handoff(attempt("codex", 2))
    assert ctx.agent_attempt_counts == {"codex": 1} and not ctx.waiting_for_input


def test_step_journal_commits_state_and_counter_together() -> None:
    ctx = make_ctx()
    ctx.begin_step(Action.RUN_PIPELINE, State.S0_BASELINE_CHECK, T0)
    assert ctx.current_state is State.S_INIT and ctx.step == 0
    assert ctx.pending is not None and ctx.pending.from_state is State.S_INIT
    ctx.complete_step()
    after = ErrorPipelineContext.model_validate_json(ctx.model_dump_json())
    assert (after.current_state, after.step, after.pending) == (State.S0_BASELINE_CHECK, 1, None)
    with pytest.raises(ValueError, match="no step pending"):
        ctx.complete_step()


def test_record_final_and_fixer_failure() -> None:
    ctx = make_ctx()
    ctx.record_fixer_failure("aider timed out")
    ctx.record_final(
        FinalStatus.INFRA_FAILURE, reason="aider timed out", kind=EscalationKind.INFRA_FAILURE
    )
    assert ctx.fixer_failure == "aider timed out"
    assert (ctx.final_status, ctx.escalation_kind) == (
        FinalStatus.INFRA_FAILURE,
        EscalationKind.INFRA_FAILURE,
    )
