"""One tick of one incident (seed 000 §4.5), following `incidents.fsm`'s protocol.

A tick loads `incident.json` and `state.json` (the context), decides, journals the step
(`pending`), performs the action, writes its artifact keyed by the step, records the
outcome and commits `state.json` once, atomically, under the lease (fencing). Mirror rows
and events follow the commit. A process killed anywhere resumes from what is on disk: a
begun step whose artifact exists is recorded without running its action again; a
committed step is never repeated. A terminal state closes the incident: the quarantine
bundle is built in the folder, then the folder moves to its archive bucket.
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime

from incidents import artifacts, attempts, eventlog, fsutil, ladder, mirror
from incidents import policy as policy_mod
from incidents.fsm import (
    TIERS,
    NextAction,
    decide_next_action,
    due,
    is_actionable,
    is_terminal,
)
from incidents.models import ErrorPipelineContext, Incident, RunResult
from incidents.models.pipeline import Action, EscalationKind, State
from incidents.models.report import Verdict
from incidents.step import close as closing
from incidents.step import quarantine
from incidents.step.actions import AGENT_OF, Actions, preexisting_lines
from incidents.step.documents import load_bundle, new_context, write_ai_attempts
from incidents.step.outcome import StepOutcome
from incidents.vocab import FailureClass, FinalStatus, Outcome

AGENT_OF_FIX = {t.fix: t.agent for t in TIERS}
# the actions whose intent is written before they run (fsm's protocol, step 3): they change
# the workdir and their decision may rest on inputs that move (budgets), so a redo must
# find the step they began. The others redo identically: their artifacts are keyed by the
# step and reused, or they only change the context. Skipping their intent saves a file
# replacement per tick: replacing files is the watcher's main cost (README, benchmarks).
JOURNALED = frozenset({Action.MECHANICAL_AUTOFIX, Action.AWAIT_HANDOFF, *AGENT_OF})


class Tick(Actions):
    """One incident's ticks under one lease: `run()` again goes on from what it committed
    (a pickup ticks one incident several times, so nobody else changed the context, and
    what a capture may change in incident.json, its occurrences, is nothing a tick uses)."""

    _carried: tuple[Incident, ErrorPipelineContext] | None = None

    def load(self) -> tuple[Incident, ErrorPipelineContext]:
        """incident.json and the context from disk, after cleaning up what a writer killed
        mid-write left (temp files, a status.txt behind incident.json); a bundle that
        breaks capture's rules or carries a state.json we did not write is set aside
        (`documents.load_bundle`)."""
        for directory in (self.folder, self.runs, self.root.plan_dir(self.id)):
            fsutil.remove_orphan_temps(directory)
        incident, ctx = load_bundle(self.root, self.cfg, self.folder)
        if ctx is None:
            self.set_aside_stale_artifacts()
            ctx = new_context(incident, self.cfg, self.budget_used(incident.group_key))
        else:  # a tier installed or enabled since its last pickup is used from now on
            ladder.refresh(ctx, self.cfg.tiers, self.cfg.handoff)
        transient = ctx.failure_class is FailureClass.TRANSIENT
        if transient and ctx.pending is None and not is_terminal(ctx.current_state):
            self.wait_for_step(incident, ctx)
        return incident, ctx

    def wait_for_step(self, incident: Incident, ctx: ErrorPipelineContext) -> None:
        """A transient incident learns its last occurrence and the latest success of its
        step that concerns it (`incidents.recovery`), and is listed as waiting for one
        (a success wakes it). Not while a step is pending: its redo decides as it did."""
        from incidents import recovery

        ctx.last_seen = incident.last_seen or incident.created_at
        ctx.transient_quiet_s = self.cfg.policy.transient_quiet
        keys = recovery.keys_for(incident.error_signature, [*incident.verify, *self.command()])
        found = recovery.latest(self.root, incident.step, keys)
        with contextlib.suppress(ValueError):  # a hint we cannot read is no success
            if found is not None:
                ctx.step_ok_at, ctx.step_ok_by = datetime.fromisoformat(found[0]), found[1]
        recovery.wait_for_step(self.root, incident.step, self.id)

    def set_aside_stale_artifacts(self) -> None:
        """A new incident (no state.json yet) owns no step artifacts: the step service's
        files its runs folder already holds (an earlier incident's with the same id, or
        planted reports, fixer results, a run_result.json) would be reused as if this
        incident's steps had made them. Moved, not deleted, into `stale-<time>/` before
        the first step, under the incident's lock (`incidents attempt` writes there too).
        What a skill may write before the first tick (attempt_NN.json) stays."""
        try:
            names = os.listdir(self.runs)
        except FileNotFoundError:
            return
        self.set_aside([n for n in names if artifacts.machine_written(n)], "stale_artifacts")

    def run(self) -> StepOutcome:
        """One tick. Called again on the same object, it goes on from what it committed."""
        self.events, self.report_label, self._check_started = [], None, False
        if self._carried is not None:
            incident, ctx = self._carried
            self._carried = None
        else:
            incident, ctx = self.load()
        old = ctx.current_state
        if is_terminal(old):
            return self.close(incident, ctx, old)
        if ctx.pending is None and ctx.planned:
            self.adopt_current_plan(incident, ctx)
        now = self.clock()
        na = decide_next_action(ctx)
        if ctx.pending is None and ctx.error_signature and _budget_matters(na):
            # budgets are shared across incidents: re-read them, but only when the decision
            # depends on one (entering a fixer tier), not on every tick (a mirror write)
            ctx.signature_attempts_used = policy_mod.budget_used(
                self.root, incident.group_key, self.id, ctx.ai_attempts,
                ctx.signature_attempts_used,
            )  # fmt: skip
            ctx.budget_group = incident.group_key  # whose budget that is (a merge's group)
            na = decide_next_action(ctx)
        na = due(na, ctx, now)
        if ctx.pending is None:
            if not is_actionable(na, now):
                self._carried = (incident, ctx)
                return StepOutcome(
                    self.id, old, old, na.action.value, na.reason,
                    waiting=ctx.waiting_for_input or _awaits_its_step(na),
                    not_before=na.not_before, idle=True,
                )  # fmt: skip
            ctx.begin_step(na.action, na.new_state, now)
            if na.action in JOURNALED:
                self.flush()  # this pickup's commits are durable before the workdir changes
                self.persist(ctx, durable=False)
        self.perform(na, incident, ctx, now)
        ctx.complete_step()
        self.events[:0] = [_transition(old, na, ctx)]
        if na.action in AGENT_OF:
            self.events.append(("ai_action_required", {"agent": AGENT_OF[na.action]}))
        self.journal(f"s{ctx.step}", ctx)  # the step's lines before its commit
        self.persist(ctx, sync_dir=na.action in JOURNALED)
        terminal = is_terminal(ctx.current_state)
        self.after_commit(old, na, ctx, sync=not terminal)  # the close syncs the mirror
        if terminal:
            return self.close(incident, ctx, old, na)
        self._carried = (incident, ctx)
        return StepOutcome(
            self.id, old, ctx.current_state.value, na.action.value, na.reason,
            report_written=self.report_label,
            ai_action_required=na.action in AGENT_OF or na.action is Action.AWAIT_HANDOFF,
            waiting=ctx.waiting_for_input, not_before=ctx.not_before,
        )  # fmt: skip

    def perform(
        self, na: NextAction, incident: Incident, ctx: ErrorPipelineContext, now: datetime
    ) -> None:
        action = na.action
        if action is Action.PLAN:
            self.plan(incident, ctx)
        elif action is Action.RUN_PIPELINE:
            self.check(incident, ctx, na.new_state, now)
        elif action is Action.WAIT_RETRY:
            assert na.not_before is not None
            ctx.schedule_retry(na.not_before)
            self.events.append(("retrying", {"not_before": na.not_before.isoformat()}))
        elif action is Action.MECHANICAL_AUTOFIX:
            self.autofix(incident, ctx)
        elif action in AGENT_OF:
            self.call_fixer(AGENT_OF[action], incident, ctx)
        elif action is Action.AWAIT_HANDOFF:
            self.await_handoff(ctx, AGENT_OF_FIX[na.new_state])
        elif action is Action.FINALIZE_SUCCESS:
            self.finalize_success(na, incident, ctx)
        else:  # QUARANTINE, FINALIZE_INFRA_ERROR
            status = (
                FinalStatus.QUARANTINED
                if action is Action.QUARANTINE
                else FinalStatus.INFRA_FAILURE
            )
            reason = self.escalation_reason(na, ctx, incident)
            ctx.record_final(
                status,
                reason=reason,
                kind=na.escalation,
                quarantine_path=f"error_archive/escalated/{self.id}",
            )
            if status is FinalStatus.INFRA_FAILURE:
                self.events.append(("infra_error", {"reason": reason}))

    def finalize_success(
        self, na: NextAction, incident: Incident, ctx: ErrorPipelineContext
    ) -> None:
        """Success only on the last canonical report as it is on disk, clean, with every
        file it judged unchanged (`incidents.step.verdict`); else escalated, saying why."""
        from incidents.step import verdict

        if na.outcome is Outcome.RECOVERED and not ctx.report_labels:
            # nothing was re-run (its step succeeded, or it stayed quiet): no report to bind
            ctx.record_final(FinalStatus.SUCCESS, reason=na.reason, outcome=na.outcome)
            self.events.append(("recovered", {"reason": na.reason}))
            return
        path = self.artifact(artifacts.verdict_step_name(ctx.step))
        _, problem = verdict.decide(path, self.runs, ctx, self.workdir(incident))
        self.runs_unsynced = True
        kind = EscalationKind.VERDICT_MISMATCH
        if problem is None:  # and still so as the user ran it
            from incidents.step.review import as_user_problem

            problem = as_user_problem(self.folder, self.runs, ctx, self.cfg.verification)
        if problem is None:  # the verdict holds: does the fix need a person's review?
            from incidents.step.review import needs_review

            problem = needs_review(self.runs, ctx, self.workdir(incident))
            kind = EscalationKind.REVIEW_FIX
        if problem is None:
            ctx.record_final(FinalStatus.SUCCESS, reason=na.reason, outcome=na.outcome)
            if na.outcome is Outcome.NOT_REPRODUCED:
                self.events.append(("flaky", {"reason": na.reason}))
            if na.outcome is Outcome.RECOVERED:
                self.events.append(("recovered", {"reason": na.reason}))
            return
        assert ctx.pending is not None
        ctx.pending = ctx.pending.model_copy(update={"new_state": State.S4_QUARANTINE})
        reason = f"not resolved: {problem}"
        self.amend_attempt(ctx, reason)
        ctx.record_final(
            FinalStatus.QUARANTINED,
            reason=reason,
            kind=kind,
            quarantine_path=f"error_archive/escalated/{self.id}",
        )
        self.events.append((kind.value, {"reason": reason}))

    def after_commit(
        self, old: State, na: NextAction, ctx: ErrorPipelineContext, *, sync: bool = True
    ) -> None:
        # a copy of state.json's attempts for readers (the quarantine bundle has its own)
        write_ai_attempts(self.runs / artifacts.AI_ATTEMPTS, ctx.ai_attempts)
        # as committed: the next tick changes `ctx` before a sync during its check; a
        # terminal tick's close syncs its own context
        state = mirror.Context.of(ctx.model_dump(mode="json")) if sync else None
        self.backlog.add(state)
        if sync and self.backlog.due:
            self.flush_mirror()

    def close(
        self,
        incident: Incident,
        ctx: ErrorPipelineContext,
        old: State,
        na: NextAction | None = None,
    ) -> StepOutcome:
        """Move a terminal incident to its bucket (idempotent: resumes a crashed close)."""
        success = ctx.final_status is FinalStatus.SUCCESS
        bucket = "resolved" if success else "escalated"
        if ctx.failure_class is FailureClass.TRANSIENT:
            from incidents import recovery

            recovery.done_waiting(self.root, incident.step, self.id)
        reason = ctx.escalation_reason or ("resolved by the escalation machine" if success else "")
        found = self.close_verdict(incident, ctx, success)
        if not success:
            quarantine.build(
                self.root, self.id, self.folder, ctx,
                workdir=self.workdir(incident),
                created_at=incident.created_at,
                finished_at=(finished := self.clock()),
                final_status=ctx.final_status or FinalStatus.QUARANTINED,
                reason=reason,
                enabled_tiers=ladder.enabled(ctx),  # the tiers state.json records
                verdict=found,
            )  # fmt: skip
            policy_mod.record_escalation(
                self.root, self.cfg.policy, self.id, ctx.error_signature or "", reason,
                finished,  # the record's time is the quarantine bundle's (reindex reads it)
            )  # fmt: skip
        result = self.run_result(incident, ctx, bucket, reason).model_copy(
            update={"verdict": found}
        )
        self.events.append(("archived", {"bucket": bucket, "final_status": str(ctx.final_status)}))
        if not success:
            self.events.append(("escalation", {"kind": str(ctx.escalation_kind), "reason": reason}))
        # keyed by the step: a close resumed after a crash writes the same lines again
        self.journal(f"c{ctx.step}", ctx)
        eventlog.sync(self.folder / eventlog.EVENTS)  # archive fsyncs the folder, then moves it
        # no close journal: this terminal state.json closes the incident again if we die
        target = closing.archive(
            self.root, self.id, bucket, reason, run_result=result, journal=False
        )
        # archive fsyncs the runs folder (run_result.json), then this folder, then moves it
        self.unsynced = self.runs_unsynced = False
        self.sync_mirror(ctx)
        rel = str(target.relative_to(self.root.path))
        return StepOutcome(
            self.id, old.value, ctx.current_state.value,
            (na.action.value if na else "CLOSE"), (na.reason if na else "closing"),
            report_written=self.report_label, terminal=True, archived_to=rel,
        )  # fmt: skip

    def close_verdict(
        self, incident: Incident, ctx: ErrorPipelineContext, success: bool
    ) -> Verdict | None:
        """What the close records as the verdict: the one FINALIZE_SUCCESS granted success
        on (kept by its step), else the last canonical report's as it is on disk."""
        from incidents.step import verdict

        kept = self.runs / artifacts.verdict_step_name(ctx.step - 1)
        if kept.exists() or success:
            return verdict.saved_verdict(kept)
        report, _ = verdict.last_report(self.runs, ctx)
        report = report or ctx.last_error_report
        return verdict.verdict_of(report, ctx, self.workdir(incident)) if report else None

    def run_result(
        self, incident: Incident, ctx: ErrorPipelineContext, bucket: str, reason: str
    ) -> RunResult:
        minutes = max(0.0, (self.clock() - incident.created_at).total_seconds() / 60)
        return RunResult(
            incident_id=self.id,
            final_status="resolved" if bucket == "resolved" else "escalated",
            loops_used=attempts.fixes_applied(ctx),
            runtime_minutes=round(minutes, 2),
            same_error_repeats=ctx.same_error_repeats,
            archived_to=f"error_archive/{bucket}/{self.id}",
            reason=reason,
            finished_at=self.clock(),
            outcome=ctx.outcome,
            preexisting=preexisting_lines(ctx),
        )

    def budget_used(self, signature: str) -> int:
        try:
            with mirror.shared(self.root.db_path) as conn:
                return mirror.attempts_used(conn, signature)
        except Exception:  # the mirror is derivable: without it no budget is used yet
            return 0


def _awaits_its_step(na: NextAction) -> bool:
    """A transient failure with nothing to re-run waits for its step (something outside,
    like an agent): a watcher run `--until-idle` does not wait out its quiet period."""
    return na.outcome is Outcome.RECOVERED and na.not_before is not None


def _budget_matters(na: NextAction) -> bool:
    return (
        na.action in AGENT_OF
        or na.action is Action.AWAIT_HANDOFF
        or na.escalation is EscalationKind.BUDGET_EXHAUSTED
    )


def _transition(old: State, na: NextAction, ctx: ErrorPipelineContext) -> mirror.Event:
    return (
        "state_transition",
        {
            "from_state": old.value,
            "to_state": ctx.current_state.value,
            "action": na.action.value,
            "reason": na.reason,
            "attempt_number": ctx.attempt_number,
            "current_agent": ctx.current_agent,
        },
    )
