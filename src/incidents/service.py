"""The step service: one tick of one incident (seed 000 §4.5), following `incidents.fsm`'s
protocol exactly.

A tick takes the incident's lease, loads `incident.json` and `state.json` (the context),
decides, journals the step (`pending`), performs the action, writes its artifact keyed by
the step, records the outcome and commits `state.json` once, atomically, under the lease
(fencing). Mirror rows and events follow the commit. A process killed anywhere resumes
from what is on disk: a begun step whose artifact exists is recorded without running its
action again; a committed step is never repeated. A terminal state closes the incident:
the quarantine bundle is built in the folder, then the folder moves to its archive bucket.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from incidents import attempts, fsutil, leases, mirror, pause, planner, proc, quarantine, store
from incidents import policy as policy_mod
from incidents.classify import code_of_findings
from incidents.errors import IncidentsError, InvalidDocument, LockBusy, NotFound, Paused
from incidents.fsm import (
    TIERS,
    NextAction,
    decide_next_action,
    is_actionable,
    is_terminal,
    report_label,
)
from incidents.layout import Root, validate_id
from incidents.models import AIAttempt, ErrorPipelineContext, ErrorReport, Incident
from incidents.models.pipeline import Action, EscalationKind, State
from incidents.settings import Config
from incidents.vocab import ErrorCode, FinalStatus

STATE_FILE = "state.json"
Clock = Callable[[], datetime]
# derived from the machine's own tier table, so the two can never disagree
AGENT_OF: dict[Action, str] = {t.call: t.agent for t in TIERS}
TIER_NUMBER: dict[str, int] = {t.agent: t.attempt_number for t in TIERS}
AGENT_OF_FIX: dict[State, str] = {t.fix: t.agent for t in TIERS}
# the actions whose intent is written before they run (fsm's protocol, step 3): they change
# the workdir and their decision may rest on inputs that move (budgets), so a redo must
# find the step they began. The others redo identically: their artifacts are keyed by the
# step and reused, or they only change the context. Skipping their intent saves a file
# replacement per tick: replacing files is the watcher's main cost (README, benchmarks).
JOURNALED = frozenset({Action.MECHANICAL_AUTOFIX, Action.AWAIT_HANDOFF, *AGENT_OF})
# how far the mirror may fall behind the ticks of one pickup before it is written anyway
MIRROR_LAG_S = 0.5


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class StepOutcome:
    """What one tick did (seed 000 §4.6: old -> new, report written, AI action required)."""

    incident_id: str
    old_state: str
    new_state: str
    action: str
    reason: str
    report_written: str | None = None
    ai_action_required: bool = False
    terminal: bool = False
    waiting: bool = False
    not_before: datetime | None = None
    archived_to: str | None = None
    idle: bool = False  # nothing was done (waiting, not yet due, already closed)

    def line(self) -> str:
        parts = [f"{self.incident_id}: {self.old_state} -> {self.new_state} ({self.action})"]
        parts.append(f"report: {self.report_written or 'none'}")
        parts.append(f"AI action required: {'yes' if self.ai_action_required else 'no'}")
        if self.not_before is not None:
            parts.append(f"not before {self.not_before.isoformat()}")
        if self.archived_to:
            parts.append(f"archived to {self.archived_to}")
        return "; ".join(parts)


# --- loading ------------------------------------------------------------------------------


def load_incident(root: Root, folder: Path) -> dict[str, Any]:
    """incident.json, validated; a bundle that does not validate goes to error_rejected/."""
    try:
        doc = fsutil.read_json_object(folder / "incident.json")
        Incident.model_validate(doc)
        if doc["incident_id"] != folder.name:
            raise InvalidDocument(str(folder / "incident.json"), "differs from its folder name")
    except (InvalidDocument, ValidationError, OSError) as exc:
        reason = _reason(exc)
        target = store.reject(root, folder, f"incident.json: {reason}")
        raise InvalidDocument(
            str(folder / "incident.json"), f"{reason} (moved to {target})"
        ) from exc
    return doc


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
    return str(exc)


def load_context(folder: Path) -> ErrorPipelineContext | None:
    path = folder / STATE_FILE
    if not path.exists():
        return None
    try:
        return ErrorPipelineContext.model_validate(fsutil.read_json_object(path))
    except ValidationError as exc:
        raise InvalidDocument(str(path), _reason(exc)) from exc


def new_context(incident: dict[str, Any], cfg: Config, budget_used: int) -> ErrorPipelineContext:
    from incidents.fixers.settings import resolve_enabled

    modes = resolve_enabled(cfg.tiers)
    policy = cfg.policy
    code = incident.get("error_code")
    return ErrorPipelineContext(
        run_id=incident["run_id"],
        workstream_id=incident["incident_id"],
        python_files=list(incident.get("python_files") or []),
        powershell_files=list(incident.get("powershell_files") or []),
        verification_commands=list(incident.get("verify") or []),
        enable_mechanical_autofix=policy.enable_mechanical_autofix,
        enable_aider=modes["aider"] in ("on", "handoff"),
        enable_codex=modes["codex"] in ("on", "handoff"),
        enable_claude=modes["claude"] in ("on", "handoff"),
        strict_mode=policy.strict_mode,
        agent_max_attempts={t.agent: cfg.tiers.tier(t.agent).max_attempts for t in TIERS},
        tier_modes={a: "handoff" for a, m in modes.items() if m == "handoff"},
        failure_class=policy_mod.effective_failure_class(code, incident["failure_class"]),
        error_code=ErrorCode(code) if code else None,
        error_signature=incident["error_signature"],
        max_transient_retries=policy.max_transient_retries,
        retry_base_s=policy.retry_base_s,
        retry_max_s=policy.retry_max_s,
        signature_attempts_used=budget_used,
        signature_attempt_limit=policy.signature_budget,
    )


# --- the tick -----------------------------------------------------------------------------


class Tick:
    """One incident's tick: the pieces below share its root, config, lease and folders."""

    def __init__(
        self, root: Root, cfg: Config, incident_id: str, lease: leases.Lease, clock: Clock
    ) -> None:
        self.root, self.cfg, self.id, self.lease, self.clock = root, cfg, incident_id, lease, clock
        self.folder = root.inbox / incident_id
        self.runs = root.runs_dir(incident_id)
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.report_label: str | None = None
        # what the last tick of this object committed, for the next one: a pickup ticks one
        # incident several times under one lease, so nobody else changed the context, and
        # what a capture may change in incident.json (occurrences) is nothing a tick uses
        self._carried: tuple[dict[str, Any], ErrorPipelineContext] | None = None
        self.unsynced = False  # a commit whose folder was not fsynced yet (see flush)
        self.runs_unsynced = False  # a report whose folder was not fsynced yet
        self._check_started = False
        # committed ticks not in the mirror yet (see after_commit): their events and check
        # reports, and the context last committed
        self._backlog: list[tuple[str, dict[str, Any]]] = []
        self._backlog_reports: list[tuple[str, dict[str, Any] | None]] = []
        self._mirror_state: dict[str, Any] | None = None
        self._mirrored_at = time.monotonic()

    # persistence -----------------------------------------------------------------------

    def load(self) -> tuple[dict[str, Any], ErrorPipelineContext]:
        """incident.json and the context from disk, after cleaning up what a writer killed
        mid-write left (temp files, a status.txt behind incident.json)."""
        for directory in (self.folder, self.runs, self.root.plan_dir(self.id)):
            fsutil.remove_orphan_temps(directory)
        incident = load_incident(self.root, self.folder)
        with store.incident_lock(self.root, self.id):
            store.repair_status_txt(self.folder, incident)
        ctx = load_context(self.folder)
        if ctx is None:
            ctx = new_context(incident, self.cfg, self.budget_used(incident["error_signature"]))
        return incident, ctx

    def persist(
        self, ctx: ErrorPipelineContext, *, durable: bool = True, sync_dir: bool = True
    ) -> None:
        """Commit `state.json`, old-or-new, only while our lease is current (fencing).

        The intent written before an action (`durable=False`) is replaced atomically but
        not fsynced: a killed process leaves it whole, and losing it to a power cut only
        means the action is decided and run again, as after any crash before its commit.
        `sync_dir=False`: the file is fsynced (old-or-new even after a power cut) but the
        folder's fsync waits for `flush`; a power cut before it only takes the incident
        back to an earlier commit, whose steps redo identically (see JOURNALED).
        """
        data = fsutil.dump_model(ctx)
        with leases.fenced(self.root, self.lease), store.incident_lock(self.root, self.id):
            fsutil.atomic_write_bytes(
                self.folder / STATE_FILE, data, durable=durable, sync_dir=sync_dir
            )
        if durable:
            self.unsynced = not sync_dir

    def flush(self) -> None:
        """Make this object's commits durable, then show them in the mirror: one fsync of
        the incident's folder for the steps of a pickup that redo identically, done before
        an action that changes the workdir (a fixer may run for minutes) and when the
        pickup ends (the close fsyncs the folder and syncs the mirror itself)."""
        if self.runs_unsynced:  # the reports the commits refer to go first
            fsutil.fsync_dir(self.runs)
            self.runs_unsynced = False
        if self.unsynced and self.folder.is_dir():
            fsutil.fsync_dir(self.folder)
        self.unsynced = False
        self.flush_mirror()

    def set_status(self, status: str) -> dict[str, Any]:
        """Within a step: the folder is fsynced with the step's commit or the pickup's `flush`."""
        with store.incident_lock(self.root, self.id):
            doc = store.read_incident(self.folder)
            if doc["status"] != status:
                doc = store.set_status(self.folder, doc, status, sync_dir=False)
            return doc

    def workdir(self, incident: dict[str, Any]) -> Path:
        return Path(incident.get("workdir") or self.root.path.parent)

    def artifact(self, name: str) -> Path:
        self.runs.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.runs / name

    # the step --------------------------------------------------------------------------

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
                self.root, ctx.error_signature, self.id, ctx.ai_attempts,
                ctx.signature_attempts_used,
            )  # fmt: skip
            na = decide_next_action(ctx)
        if ctx.pending is None:
            if not is_actionable(na, now):
                self._carried = (incident, ctx)
                return StepOutcome(
                    self.id, old, old, na.action.value, na.reason,
                    waiting=na.action is Action.WAIT_INPUT, not_before=na.not_before, idle=True,
                )  # fmt: skip
            ctx.begin_step(na.action, na.new_state, now)
            if na.action in JOURNALED:
                self.flush()  # this pickup's commits are durable before the workdir changes
                self.persist(ctx, durable=False)
        self.perform(na, incident, ctx, now)
        ctx.complete_step()
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
        self, na: NextAction, incident: dict[str, Any], ctx: ErrorPipelineContext, now: datetime
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
            agent = AGENT_OF_FIX[na.new_state]
            ctx.begin_handoff(agent, TIER_NUMBER[agent])  # type: ignore[arg-type]
            self.save_prompt(ctx, agent)
            self.events.append(("waiting_for_input", {"agent": agent}))
        elif action is Action.FINALIZE_SUCCESS:
            ctx.record_final(FinalStatus.SUCCESS, reason=na.reason)
        else:  # QUARANTINE, FINALIZE_INFRA_ERROR
            status = (
                FinalStatus.QUARANTINED
                if action is Action.QUARANTINE
                else FinalStatus.INFRA_FAILURE
            )
            reason = self.escalation_reason(na, ctx)
            ctx.record_final(
                status,
                reason=reason,
                kind=na.escalation,
                quarantine_path=f"error_archive/escalated/{self.id}",
            )
            if status is FinalStatus.INFRA_FAILURE:
                self.events.append(("infra_error", {"reason": reason}))

    # actions ---------------------------------------------------------------------------

    def plan(self, incident: dict[str, Any], ctx: ErrorPipelineContext) -> None:
        # the targets as they were before anything touched them (the review diffs against it)
        quarantine.copy_final_scripts(
            self.folder, self.workdir(incident), ctx.target_files, into="original_scripts"
        )
        plan = planner.load_plan(self.root, self.id)  # a skill's plan wins; resume reuses ours
        if plan is None:
            plan = planner.make_plan(incident, self.history(incident), self.clock())
            with store.incident_lock(self.root, self.id):
                planner.apply_plan(self.root, self.folder, incident, plan, sync_dir=False)
            self.events.append(("plan_generated", {"actions": len(plan.actions)}))
        else:
            self.set_status("planned")
        ctx.record_plan(planner.commands_to_run(incident, plan))

    def adopt_current_plan(self, incident: dict[str, Any], ctx: ErrorPipelineContext) -> None:
        """plan.json is the one source of truth for what a check runs: a plan supplied or
        replaced after PLAN (`incidents plan --from`) is read when the next step begins and
        stored in state.json by that step's journal write. Not while a step is pending: its
        redo must make the decision it journaled."""
        plan = planner.load_plan(self.root, self.id)
        if plan is not None:
            ctx.adopt_plan(planner.commands_to_run(incident, plan))

    def check(
        self, incident: dict[str, Any], ctx: ErrorPipelineContext, state: State, now: datetime
    ) -> None:
        label = report_label(state, ctx.report_labels)
        path = self.artifact(f"error_report_attempt_{label}.json")
        if path.exists():  # the check ran before a crash: its report is the result
            report = ErrorReport.model_validate(fsutil.read_json_object(path))
        else:
            report = self.run_checks(incident, ctx, label)
            # fsynced, its folder with the next flush or by the close, before the commits
            fsutil.atomic_write_bytes(path, fsutil.dump_model(report), sync_dir=False)
            self.runs_unsynced = True
        self.check_started()
        ctx.record_check(report, now)
        self.report_label = path.name
        self.events.append(
            ("error_report_generated", {"label": label, **report.summary.model_dump(mode="json")})
        )
        if state not in (State.S0_BASELINE_CHECK,):
            self.write_attempt(ctx, report, now)

    def check_started(self) -> None:
        """From its first check on an incident is `running`: set once per check, with the
        mirror brought up to date, while the check's first command starts (the worker
        waits for that child anyway), or before the check tools run."""
        if not self._check_started:
            self._check_started = True
            self.set_status("running")
            self.flush_mirror()

    def run_checks(
        self, incident: dict[str, Any], ctx: ErrorPipelineContext, label: str
    ) -> ErrorReport:
        from incidents.checks.engine import run_error_pipeline, summarize
        from incidents.verify import run_verification

        workdir = self.workdir(incident)
        if ctx.target_files:
            self.check_started()
            report = run_error_pipeline(
                ctx.python_files, ctx.powershell_files, ctx,
                settings=self.cfg.checks, cwd=workdir,
            )  # fmt: skip
        else:
            report = ErrorReport(
                attempt_number=ctx.attempt_number, ai_agent=ctx.current_agent,
                run_id=ctx.run_id, workstream_id=ctx.workstream_id,
                generated_at=self.clock(), mechanical_fix_applied=ctx.mechanical_fix_applied,
                issues=[], summary=summarize([]),
            )  # fmt: skip
        issues, runs, infra = list(report.issues), list(report.tool_runs), []
        infra.extend(report.infra_failures)
        if ctx.verification_commands:
            # the incident turns `running` (and the mirror catches up) while it starts
            result = run_verification(
                ctx.verification_commands, workdir, self.cfg.verification, self.check_started
            )
            issues += result.findings
            runs += result.tool_runs
            infra += result.infra_failures
            for refusal in result.refusals:
                from incidents.models import InfraFailure

                infra.append(
                    InfraFailure(
                        tool="verify", argv=[refusal.command], exit_code=None,
                        reason=f"refused: {refusal}",
                    )
                )  # fmt: skip
        return report.model_copy(
            update={
                "label": label,
                "issues": issues,
                "summary": summarize(issues),
                "tool_runs": runs,
                "infra_failures": infra,
            }
        )

    def write_attempt(self, ctx: ErrorPipelineContext, report: ErrorReport, now: datetime) -> None:
        """attempt_NN.json after each fix-and-recheck (seed 004), numbered by fix iterations.
        A skill's own record of the same iteration (`incidents attempt`) is kept: the
        machine adds its canonical verdict to it instead of replacing it."""
        iteration = attempts.attempt_iteration(ctx)
        path = self.artifact(attempts.path_for(self.runs, iteration).name)
        after = ctx.pending.new_state if ctx.pending else ctx.current_state
        peek = decide_next_action(ctx.model_copy(update={"current_state": after, "pending": None}))
        result = {
            Action.FINALIZE_SUCCESS: "resolved",
            Action.QUARANTINE: "escalated",
            Action.FINALIZE_INFRA_ERROR: "escalated",
        }.get(peek.action, "continue")
        applied = [a.agent for a in ctx.ai_attempts[-1:]] if ctx.current_agent != "none" else []
        doc = {
            "incident_id": self.id,
            "iteration": iteration,
            "started_at": (ctx.pending.started_at if ctx.pending else None) or now,
            "finished_at": now,
            "actions_applied": applied
            or (["mechanical_autofix"] if ctx.mechanical_fix_applied else []),
            "verification_commands": ctx.verification_commands,
            "verification_passed": not report.summary.has_hard_fail,
            "result": result,
            "error_signature": ctx.error_signature or "",
            "state": ctx.pending.new_state.value if ctx.pending else ctx.current_state.value,
            "report": f"error_report_attempt_{report.label}.json",
            "total_issues": report.summary.total_issues,
        }
        from incidents.models import Attempt

        merged = attempts.merge_skill_attempt(path, doc)
        fsutil.atomic_write_bytes(path, fsutil.dump_model(Attempt.model_validate(merged)))

    def autofix(self, incident: dict[str, Any], ctx: ErrorPipelineContext) -> None:
        from incidents.checks.autofix import apply_mechanical_fixes

        path = self.artifact(f"autofix_step_{ctx.step}.json")
        if path.exists():
            log = fsutil.read_json_object(path)
        else:
            result = apply_mechanical_fixes(
                ctx.python_files, settings=self.cfg.checks, cwd=self.workdir(incident)
            )
            log = {"ok": result.ok, **result.to_json()}
            fsutil.atomic_write_json(path, log)
        if not log.get("ok", False):
            errors = [s.get("error") for s in log.get("log", []) if s.get("error")]
            ctx.record_fixer_failure(f"mechanical autofix failed: {'; '.join(errors) or '?'}")
        ctx.record_autofix()

    def save_prompt(self, ctx: ErrorPipelineContext, agent: str) -> Path:
        from incidents.fixers.prompt import RetryContext, build_prompt
        from incidents.fixers.runner import save_prompt

        report = ctx.last_error_report
        assert report is not None
        retry = None
        if ctx.ai_attempts:
            last = ctx.ai_attempts[-1]
            tests = [f.message for f in report.issues if f.category == "test"][:20]
            retry = RetryContext(
                attempt_number=len(ctx.ai_attempts) + 1,
                max_attempts=ctx.signature_attempt_limit or len(ctx.ai_attempts) + 1,
                previous_error_code=code_of_findings(
                    {f.category.value for f in report.issues},
                    timed_out=any(f.code == "TIMEOUT" for f in report.issues),
                )
                or ctx.error_code
                or ErrorCode.UNKNOWN,
                previous_error="\n".join(f.message for f in report.issues[:20]),
                what_was_tried=f"{last.agent}: {last.notes or 'changed ' + ', '.join(last.changed_files)}",
                test_failures="\n".join(tests) or None,
            )
        from incidents.handoff import read_guidance

        guidance = getattr(ctx, "guidance", None) or read_guidance(self.folder)
        text = build_prompt(report, ctx.target_files, retry, guidance)
        return save_prompt(self.root, self.id, len(ctx.ai_attempts) + 1, text)

    def call_fixer(self, agent: str, incident: dict[str, Any], ctx: ErrorPipelineContext) -> None:
        from incidents.fixers.runner import run_fixer

        ctx.enter_tier(agent, TIER_NUMBER[agent])  # type: ignore[arg-type]
        path = self.artifact(f"fixer_step_{ctx.step}.json")
        if path.exists():  # the fixer ran before a crash: record its result once
            saved = fsutil.read_json_object(path)
            attempt = AIAttempt.model_validate(saved["attempt"])
            infra = saved.get("infra_error")
        else:
            prompt_file = self.save_prompt(ctx, agent)
            settings = getattr(self.cfg.tiers, agent)
            # a fixer may run for its whole timeout: hold the lease at least that long
            ttl = settings.timeout_s + self.cfg.policy.lease_ttl_s
            self.lease = leases.renew(self.root, self.lease, ttl_s=ttl)
            # a fixer of a tick that was killed may still be running: never two at once
            pidfile = self.root.state / "running" / f"{self.id}.pid"
            pidfile.parent.mkdir(mode=0o700, exist_ok=True)
            proc.kill_recorded(pidfile)
            outcome = run_fixer(
                agent, settings, prompt_file, ctx.target_files, self.workdir(incident),
                pidfile=pidfile,
            )  # fmt: skip
            report_id = (
                f"error_report_attempt_{ctx.report_labels[-1] if ctx.report_labels else '0'}"
            )
            attempt = outcome.ai_attempt(TIER_NUMBER[agent], report_id).model_copy(
                update={"step": ctx.step}
            )
            infra = outcome.infra_error
            fsutil.atomic_write_json(
                path, {"attempt": attempt.model_dump(mode="json"), "infra_error": infra}
            )
        ctx.record_ai_attempt(attempt)
        if infra:
            ctx.record_fixer_failure(f"{agent}: {infra}")
        self.events.append(("ai_attempt", attempt.model_dump(mode="json")))

    def escalation_reason(self, na: NextAction, ctx: ErrorPipelineContext) -> str:
        report = ctx.last_error_report
        if na.action is Action.FINALIZE_INFRA_ERROR and report and report.infra_failures:
            details = "; ".join(f"{f.tool}: {f.reason}" for f in report.infra_failures[:5])
            return f"{na.reason} ({details})"
        return na.reason

    # after the commit --------------------------------------------------------------------

    def after_commit(
        self, old: State, na: NextAction, ctx: ErrorPipelineContext, *, sync: bool = True
    ) -> None:
        # a copy of state.json's attempts for readers: written when it changed, not per
        # tick, and not at all before the first attempt (the quarantine bundle has its own)
        path = self.runs / "ai_attempts.json"
        data = fsutil.dump_json([a.model_dump(mode="json") for a in ctx.ai_attempts])
        try:
            same = fsutil.read_regular_file(path) == data
        except FileNotFoundError:
            same = not ctx.ai_attempts
        except IncidentsError:
            same = False
        if not same:
            fsutil.atomic_write_bytes(self.artifact(path.name), data)
        self.events.insert(
            0,
            (
                "state_transition",
                {
                    "from_state": old.value,
                    "to_state": ctx.current_state.value,
                    "action": na.action.value,
                    "reason": na.reason,
                    "attempt_number": ctx.attempt_number,
                    "current_agent": ctx.current_agent,
                },
            ),
        )
        if na.action in AGENT_OF:
            self.events.append(("ai_action_required", {"agent": AGENT_OF[na.action]}))
        # the mirror follows in one transaction for the ticks of a pickup: at its end, at
        # the close, before a fixer, while a check's command runs, or after MIRROR_LAG_S
        self._backlog += self.events
        self.events = []
        if self.report_label:
            report = ctx.last_error_report
            summary = report.summary.model_dump(mode="json") if report else None
            self._backlog_reports.append((self.report_label.removesuffix(".json"), summary))
        if sync:  # (a terminal tick's close syncs its own context)
            # as committed: the next tick changes `ctx` before a sync during its check
            self._mirror_state = ctx.model_dump(mode="json")
            if time.monotonic() - self._mirrored_at >= MIRROR_LAG_S:
                self.flush_mirror()

    def flush_mirror(self) -> None:
        """Write the committed ticks that are not in the mirror yet."""
        if self._mirror_state is not None:
            self._sync(self._mirror_state)

    def sync_mirror(self, ctx: ErrorPipelineContext | None) -> None:
        self._sync(ctx.model_dump(mode="json") if ctx is not None else None)

    def _sync(self, state: dict[str, Any] | None) -> None:
        try:
            with mirror.shared(self.root.db_path) as conn, mirror.write(conn):
                if state is not None:
                    mirror.save_workstream(
                        conn, state["run_id"], self.id, state["current_state"], state
                    )
                mirror.refresh(conn, self.root, self.id, state=state)
                if state is not None:
                    for label, summary in self._backlog_reports:
                        mirror.record_step_attempt(
                            conn, state["run_id"], self.id, "error_pipeline", label,
                            result=summary,
                        )  # fmt: skip
                for event, payload in [*self._backlog, *self.events]:
                    mirror.add_event(conn, self.id, event, payload)
            self._backlog, self._backlog_reports, self.events = [], [], []
            self._mirror_state, self._mirrored_at = None, time.monotonic()
        except Exception as exc:  # the mirror is derivable; a failure here must not stop work
            store.warn_mirror(exc)  # what is not written stays for the next sync

    def close(
        self,
        incident: dict[str, Any],
        ctx: ErrorPipelineContext,
        old: State,
        na: NextAction | None = None,
    ) -> StepOutcome:
        """Move a terminal incident to its bucket (idempotent: resumes a crashed close)."""
        success = ctx.final_status is FinalStatus.SUCCESS
        bucket = "resolved" if success else "escalated"
        reason = ctx.escalation_reason or ("resolved by the escalation machine" if success else "")
        if not success:
            from incidents.fixers.settings import resolve_enabled

            quarantine.build(
                self.root, self.id, self.folder, ctx,
                workdir=self.workdir(incident),
                created_at=datetime.fromisoformat(incident["created_at"]),
                finished_at=self.clock(),
                final_status=ctx.final_status or FinalStatus.QUARANTINED,
                reason=reason,
                enabled_tiers=[t for t, m in resolve_enabled(self.cfg.tiers).items() if m != "off"],
            )  # fmt: skip
        if not success:
            policy_mod.record_escalation(
                self.root, self.cfg.policy, self.id, ctx.error_signature or "", reason,
                self.clock(),
            )  # fmt: skip
        result = self.run_result(incident, ctx, bucket, reason)
        # no close journal: this terminal state.json closes the incident again if we die
        target = store.archive(self.root, self.id, bucket, reason, run_result=result, journal=False)
        # archive fsyncs the runs folder (run_result.json), then this folder, then moves it
        self.unsynced = self.runs_unsynced = False
        self.events.append(("archived", {"bucket": bucket, "final_status": str(ctx.final_status)}))
        if not success:
            self.events.append(("escalation", {"kind": str(ctx.escalation_kind), "reason": reason}))
        self.sync_mirror(ctx)
        rel = str(target.relative_to(self.root.path))
        return StepOutcome(
            self.id, old.value, ctx.current_state.value,
            (na.action.value if na else "CLOSE"), (na.reason if na else "closing"),
            report_written=self.report_label, terminal=True, archived_to=rel,
        )  # fmt: skip

    def run_result(
        self, incident: dict[str, Any], ctx: ErrorPipelineContext, bucket: str, reason: str
    ) -> dict[str, Any]:
        created = datetime.fromisoformat(incident["created_at"])
        minutes = max(0.0, (self.clock() - created).total_seconds() / 60)
        return {
            "incident_id": self.id,
            "final_status": bucket,
            "loops_used": int(ctx.mechanical_fix_applied) + len(ctx.ai_attempts),
            "runtime_minutes": round(minutes, 2),
            "same_error_repeats": ctx.same_error_repeats,
            "archived_to": f"error_archive/{bucket}/{self.id}",
            "reason": reason,
            "finished_at": self.clock().isoformat(),
        }

    # the mirror's view of history ----------------------------------------------------------

    def history(self, incident: dict[str, Any]) -> planner.SignatureHistory:
        try:
            with mirror.shared(self.root.db_path) as conn:
                rows = conn.execute(
                    "SELECT bucket, count(*) FROM incidents WHERE signature = ? "
                    "AND incident_id != ? GROUP BY bucket",
                    (incident["error_signature"], self.id),
                ).fetchall()
        except Exception:
            return planner.SignatureHistory()
        counts = {b: n for b, n in rows}
        return planner.SignatureHistory(
            occurrences=sum(counts.values()),
            resolved=counts.get("resolved", 0),
            escalated=counts.get("escalated", 0),
        )

    def budget_used(self, signature: str) -> int:
        try:
            with mirror.shared(self.root.db_path) as conn:
                row = conn.execute(
                    "SELECT attempts_used FROM errors WHERE signature = ?", (signature,)
                ).fetchone()
        except Exception:
            return 0
        return int(row[0]) if row and row[0] is not None else 0


def _budget_matters(na: NextAction) -> bool:
    return (
        na.action in AGENT_OF
        or na.action is Action.AWAIT_HANDOFF
        or na.escalation is EscalationKind.BUDGET_EXHAUSTED
    )


# --- entry points ---------------------------------------------------------------------------


def run_step(
    root: Root,
    cfg: Config,
    incident_id: str,
    *,
    owner: str | None = None,
    clock: Clock = utc_now,
) -> StepOutcome:
    """One tick of one incident, under its lease."""
    validate_id(incident_id)
    store.complete_pending(root)
    where, _folder = root.locate(incident_id)
    if where != "inbox":
        return StepOutcome(
            incident_id, where, where, "NONE", f"already closed ({where})", terminal=True, idle=True
        )
    info = pause.current(root)
    if info is not None:
        raise Paused(f"paused since {info.since_iso}: {info.reason} (run `incidents resume`)")
    me = owner or leases.new_owner("step")
    lease = leases.acquire(root, incident_id, me, cfg.policy.lease_ttl_s)
    if lease is None:
        holder = leases.read(root, incident_id)
        who = holder.agent or holder.owner if holder else "another process"
        raise LockBusy(f"incident {incident_id} is being worked by {who}")
    try:
        where, _folder = root.locate(incident_id)  # another process may have closed it
        if where != "inbox":
            return StepOutcome(
                incident_id, where, where, "NONE", f"already closed ({where})",
                terminal=True, idle=True,
            )  # fmt: skip
        tick = Tick(root, cfg, incident_id, lease, clock)
        try:
            return tick.run()
        finally:
            tick.flush()
    finally:
        leases.release(root, lease)


def drive(
    root: Root,
    cfg: Config,
    incident_id: str,
    *,
    max_ticks: int = 200,
    clock: Clock = utc_now,
    on_step: Callable[[StepOutcome], None] | None = None,
) -> StepOutcome:
    """Tick until the incident is terminal, waiting for an agent, or not yet due."""
    outcome: StepOutcome | None = None
    for _ in range(max_ticks):
        outcome = run_step(root, cfg, incident_id, clock=clock)
        if on_step is not None:
            on_step(outcome)
        if outcome.terminal or outcome.idle:
            return outcome
    if outcome is None:
        raise NotFound(incident_id)
    return outcome


def find_by_run(root: Root, run_id: str, ws_id: str) -> str:
    """Seed 000's `(run_id, workstream_id)`: the workstream id is the incident id."""
    validate_id(ws_id)
    _, folder = root.locate(ws_id)
    doc = store.read_incident(folder)
    if doc.get("run_id") != run_id:
        raise NotFound(f"incident {ws_id} belongs to run {doc.get('run_id')!r}, not {run_id!r}")
    return ws_id


__all__ = ["StepOutcome", "drive", "find_by_run", "run_step"]
