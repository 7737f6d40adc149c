"""The step service's own documents: `ai_attempts.json` written once per change, and the
context's requeue and poison."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from incidents.models import AIAttempt, ErrorPipelineContext
from incidents.models.pipeline import Action, State
from incidents.step.documents import write_ai_attempts
from incidents.vocab import FailureClass, FinalStatus


def attempt(agent: str = "aider", n: int = 1) -> AIAttempt:
    at = datetime(2026, 2, 17, tzinfo=UTC)
    return AIAttempt(attempt_number=n, agent=agent, input_error_report_id="r0", started_at=at)


def test_ai_attempts_json_is_written_when_it_changes_and_not_before_the_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs" / "ai_attempts.json"
    write_ai_attempts(path, [])
    assert not path.exists()  # no attempt yet: no file
    write_ai_attempts(path, [attempt()])
    doc = json.loads(path.read_text())
    assert [(d["agent"], d["started_at"]) for d in doc] == [("aider", "2026-02-17T00:00:00+00:00")]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    inode = path.stat().st_ino
    write_ai_attempts(path, [attempt()])
    assert path.stat().st_ino == inode  # the same content is not written again
    write_ai_attempts(path, [attempt(), attempt("codex", 2)])
    assert path.stat().st_ino != inode and len(json.loads(path.read_text())) == 2
    bundle = tmp_path / "quarantine" / "ai_attempts.json"
    write_ai_attempts(bundle, [], required=True)  # the quarantine bundle always has one
    assert json.loads(bundle.read_text()) == []


def escalated() -> ErrorPipelineContext:
    ctx = ErrorPipelineContext(
        run_id="run_1", workstream_id="inc_1", python_files=["f.py"],
        failure_class=FailureClass.NEVER_RETRY, current_state=State.S4_QUARANTINE, step=7,
        report_labels=["0", "1"], attempt_number=2, current_agent="codex",
        agent_attempt_counts={"aider": 1, "codex": 1}, signature_attempts_used=2,
        planned=True, final_status=FinalStatus.QUARANTINED, escalation_reason="tiers exhausted",
        quarantine_path="error_archive/escalated/inc_1",
    )  # fmt: skip
    ctx.record_ai_attempt(attempt())
    return ctx


def test_requeue_starts_a_new_climb_with_the_history_kept() -> None:
    ctx = escalated()
    ctx.requeue("the config file is read-only; write to a copy")
    assert ctx.current_state is State.S_INIT and ctx.pending is None and ctx.planned
    assert ctx.guidance == "the config file is read-only; write to a copy"
    assert ctx.failure_class is FailureClass.NEVER_RETRY and ctx.requeues == 1  # its class kept
    assert (ctx.attempt_number, ctx.current_agent, ctx.agent_attempt_counts) == (0, "none", {})
    assert ctx.final_status is None and ctx.escalation_reason is None
    assert ctx.signature_attempts_used == 0 and ctx.quarantine_path is None
    # history continues: steps, report labels and attempts are never reused
    assert ctx.step == 7 and ctx.report_labels == ["0", "1"] and len(ctx.ai_attempts) == 1
    ErrorPipelineContext.model_validate(ctx.model_dump(mode="json"))


def test_poison_quarantines_without_the_pending_step() -> None:
    ctx = ErrorPipelineContext(run_id="run_1", workstream_id="inc_2", step=3)
    ctx.begin_step(Action.RUN_PIPELINE, State.S0_BASELINE_CHECK)
    ctx.poison("its worker died three times")
    assert ctx.pending is None and ctx.current_state is State.S4_QUARANTINE and ctx.step == 3
    assert ctx.final_status is FinalStatus.QUARANTINED
    assert ctx.escalation_reason == "its worker died three times"
    assert ctx.quarantine_path == "error_archive/escalated/inc_2"


def test_decisions_json_keeps_entries_it_cannot_read_and_reads_the_rest(tmp_path: Path) -> None:
    from incidents.decisions import append_decision, read_decisions, read_guidance
    from incidents.models import HumanDecision

    path = tmp_path / "decisions.json"
    foreign = [{"at": "2026-02-17T03:00:00+00:00", "decision": "requeue", "guidance": "a"},
               "not an object", {"decision": "maybe"}]  # fmt: skip
    path.write_text(json.dumps(foreign))
    assert [d.guidance for d in read_decisions(tmp_path)] == ["a"]
    later = HumanDecision(at="2026-02-18T03:00:00+00:00", decision="requeue", guidance="b")
    append_decision(tmp_path, later)
    assert json.loads(path.read_text())[:3] == foreign  # nothing is dropped on a rewrite
    assert read_guidance(tmp_path) == "b"


def test_state_json_keeps_its_shape_after_a_requeue() -> None:
    """The guidance lives in decisions.json: state.json gains no key a reader of the
    previous version would refuse."""
    ctx = escalated()
    ctx.requeue("use the staging bucket")
    assert "guidance" not in json.loads(ctx.model_dump_json())
