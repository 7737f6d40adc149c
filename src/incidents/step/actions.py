"""The actions a tick performs (fsm's `Action`s), each writing its artifact keyed by the
step so that a tick killed after the action and before its commit records the same
outcome again instead of running the action twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from incidents import (
    artifacts,
    attempts,
    bundle_files,
    fsutil,
    mirror,
    planner,
    regressions,
    store,
)
from incidents.errors import IncidentsError
from incidents.fsm import (
    TIER_NUMBER,
    TIERS,
    decide_next_action,
    preexisting,
    report_label,
)
from incidents.models import (
    ErrorPipelineContext,
    ErrorReport,
    Finding,
    Incident,
    InfraFailure,
    ToolRun,
)
from incidents.models.pipeline import Action, Agent, State
from incidents.redact import redact
from incidents.step import quarantine
from incidents.step.fixer_call import FixerCalls
from incidents.step.reasons import Reasons
from incidents.vocab import Outcome

# derived from the machine's own tier table, so the two can never disagree
AGENT_OF: dict[Action, Agent] = {t.call: t.agent for t in TIERS}


def preexisting_lines(ctx: ErrorPipelineContext) -> list[str]:
    """The findings of the last report that did not block a success because they were
    "pre-existing, not the incident's" (fsm.preexisting), one line each, for reviewers."""
    report = ctx.last_error_report
    if report is None or ctx.current_state is not State.S_SUCCESS:
        return []
    return _lines(preexisting(ctx, report))


def _lines(findings: list[Finding]) -> list[str]:
    return [
        f"{f.tool} {f.code or '-'} {f.path}" + (f":{f.line}" if f.line else "") + f": {f.message}"
        for f in findings
    ]


def redacted(report: ErrorReport) -> ErrorReport:
    """`report` with the texts tools wrote redacted: mypy prints the literal it rejects,
    a test runner the values it compared. Once the check is over (its confirm runs compare
    findings as the tools gave them); what it judged (paths, digests) is left alone."""
    issues = [f.model_copy(update={"message": redact(f.message)}) for f in report.issues]
    infra = [
        i.model_copy(update={"reason": redact(i.reason), "stderr_tail": redact(i.stderr_tail)})
        for i in report.infra_failures
    ]
    return report.model_copy(update={"issues": issues, "infra_failures": infra})


class Actions(Reasons, FixerCalls):
    def plan(self, incident: Incident, ctx: ErrorPipelineContext) -> None:
        plan = planner.load_plan(self.root, self.id)  # a skill's plan wins; resume reuses ours
        if plan is None:
            regression = regressions.link(self.root, incident)  # its diff beside the plan
            plan = planner.make_plan(incident, self.history(incident), self.clock(), regression)
            with store.incident_lock(self.root, self.id):
                planner.apply_plan(self.root, self.folder, plan, sync_dir=False)
            self.events.append(("plan_generated", {"actions": len(plan.actions)}))
        else:
            self.set_status("planned")
        workdir = self.workdir(incident)
        ctx.record_plan(planner.commands_to_run(incident, plan))
        planner.add_targets(ctx, plan, str(workdir))
        # the targets as they were before anything touched them (the review diffs against it)
        quarantine.copy_final_scripts(
            self.folder, workdir, ctx.target_files, into="original_scripts"
        )

    def adopt_current_plan(self, incident: Incident, ctx: ErrorPipelineContext) -> None:
        """plan.json is the one source of truth for what a check runs: a plan supplied or
        replaced after PLAN (`incidents plan --from`) is read when the next step begins and
        stored in state.json by that step's journal write. Not while a step is pending: its
        redo must make the decision it journaled."""
        plan = planner.load_plan(self.root, self.id)
        if plan is not None:
            ctx.adopt_plan(planner.commands_to_run(incident, plan))
            planner.add_targets(ctx, plan, str(self.workdir(incident)))

    def check(
        self, incident: Incident, ctx: ErrorPipelineContext, state: State, now: datetime
    ) -> None:
        from incidents.checks.judged import targets_digest

        label = report_label(state, ctx.report_labels)
        path = self.artifact(artifacts.report_name(label))
        if path.exists():  # the check ran before a crash: its report is the result
            report = ErrorReport.model_validate(fsutil.read_json_object(path))
        else:
            report = redacted(
                self.run_checks(incident, ctx, label, baseline=state is State.S0_BASELINE_CHECK)
            )
            # fsynced, its folder with the next flush or by the close, before the commits
            fsutil.atomic_write_bytes(path, fsutil.dump_model(report), sync_dir=False)
            self.runs_unsynced = True
        self.check_started()
        # the targets as this check judged them: the report's own record, one answer for
        # the run and for a redo that reuses its report (the files may differ by then)
        digest = targets_digest(report.judged, ctx.target_files, self.workdir(incident))
        if state is State.S0_BASELINE_CHECK:
            ctx.record_baseline(report)
        ctx.record_check(report, now, digest)
        self.report_label = path.name
        self.events.append(
            ("error_report_generated", {"label": label, **report.summary.model_dump(mode="json")})
        )
        if state is not State.S0_BASELINE_CHECK:
            self.write_attempt(ctx, report, now)

    def run_checks(
        self, incident: Incident, ctx: ErrorPipelineContext, label: str, *, baseline: bool
    ) -> ErrorReport:
        from incidents.checks import startup, tamper_files
        from incidents.checks.as_user import run_as_user, verify_in_workdir
        from incidents.checks.engine import run_error_pipeline, summarize
        from incidents.checks.frozen import frozen_tests
        from incidents.checks.judged import command_files
        from incidents.models.report import Judged

        workdir = self.workdir(incident)
        named, unreadable = self.named_tests(incident)
        tampered: list[Finding] = []
        started = startup.snapshot(str(workdir))  # what every Python process loads
        if ctx.target_files or named:  # the tests a failure names run without targets too
            # the files before any fix: every later check (a recheck, and the baseline of a
            # requeued incident, which a rejected suppression must not pass) compares them
            # with the first baseline's
            first = tamper_files.first_baseline(self.runs, ctx.step) if ctx.target_files else None
            if first is not None:
                tampered = tamper_files.findings(
                    first, workdir, ctx.target_files, ctx.python_files,
                    self.cfg.policy.allow_suppressions,
                )  # fmt: skip
            if baseline and ctx.target_files:  # fsynced with the report's folder, before a fix
                saved = tamper_files.save_baseline(self.runs, ctx.step, workdir, ctx.target_files)
                self.runs_unsynced |= saved
            self.check_started()
            settings = self.cfg.checks
            if baseline and ctx.transient_retries:  # a retry must run, not replay a failure
                settings = settings.model_copy(update={"cache": False})
            report = run_error_pipeline(
                ctx.python_files, ctx.powershell_files, ctx,
                settings=settings, cwd=workdir, named_tests=named,
                frozen=frozen_tests(first, workdir, ctx.target_files),  # the tests as captured
            )  # fmt: skip
        else:
            report = ErrorReport(
                attempt_number=ctx.attempt_number, ai_agent=ctx.current_agent,
                run_id=ctx.run_id, workstream_id=ctx.workstream_id,
                generated_at=self.clock(), mechanical_fix_applied=ctx.mechanical_fix_applied,
                issues=[], summary=summarize([]),
            )  # fmt: skip
        issues, runs, infra = [*report.issues, *tampered], list(report.tool_runs), []
        infra.extend(report.infra_failures)
        judged = report.judged or Judged()
        if unreadable:
            infra.append(InfraFailure(tool="incidents", argv=[], exit_code=None, reason=unreadable))
        if ctx.verification_commands:
            # the incident turns `running` (and the mirror catches up) while it starts
            result, planted = verify_in_workdir(  # and what it left that a later run loads
                ctx.verification_commands, workdir, self.cfg.verification, self.check_started
            )
            issues += planted + result.findings
            runs += result.tool_runs
            infra += result.infra_failures
            infra += [
                InfraFailure(
                    tool="verify", argv=[refusal.command], exit_code=None,
                    reason=f"refused: {refusal}",
                )
                for refusal in result.refusals
            ]  # fmt: skip
            judged = judged.model_copy(
                update={
                    "files": {**judged.files, **command_files(ctx.verification_commands, workdir)},
                    "tools": {**judged.tools, **{r.tool: r.version for r in result.tool_runs}},
                    "commands": list(ctx.verification_commands),
                }
            )
            if not baseline and not result.refusals:  # and as the user ran it: both must pass
                user = run_as_user(self.folder, ctx.verification_commands, self.cfg.verification)
                issues, runs, infra = issues + user.findings, runs + user.runs, infra + user.infra
        report = report.model_copy(
            update={
                "label": label,
                "issues": issues,
                "summary": summarize(issues),
                "tool_runs": runs,
                "infra_failures": infra,
                "judged": judged,
            }
        )
        report = self.confirm(incident, ctx, report, named, baseline=baseline)
        planted = startup.take_back(started, self.runs / f"planted-{label}")
        if planted:  # after every run of the code, the confirmations' too
            issues = [*report.issues, *planted]
            report = report.model_copy(update={"issues": issues, "summary": summarize(issues)})
        return report

    def confirm(
        self, incident: Incident, ctx: ErrorPipelineContext, report: ErrorReport,
        named: list[str], *, baseline: bool,
    ) -> ErrorReport:  # fmt: skip
        """`[policy] confirm_runs`: a clean check of a test failure runs again, the
        findings cache bypassed (incidents.step.confirm)."""
        from incidents.checks.engine import run_error_pipeline, summarize
        from incidents.step import confirm as confirming
        from incidents.verify import run_verification

        runs = self.cfg.policy.confirm_runs
        if not confirming.needs_confirmation(ctx, report, baseline=baseline, runs=runs):
            return report
        workdir = self.workdir(incident)
        settings = self.cfg.checks.model_copy(update={"cache": False})

        def one_pass() -> confirming.Pass:
            found: list[Finding] = []
            ran: list[ToolRun] = []
            failed: list[InfraFailure] = []
            if ctx.target_files or named:
                again = run_error_pipeline(
                    ctx.python_files, ctx.powershell_files, ctx,
                    settings=settings, cwd=workdir, named_tests=named,
                )  # fmt: skip
                found += again.issues
                ran += again.tool_runs
                failed += again.infra_failures
            if ctx.verification_commands:
                result = run_verification(
                    ctx.verification_commands, workdir, self.cfg.verification, None
                )
                found += result.findings
                ran += result.tool_runs
                failed += result.infra_failures
            return found, ran, failed

        return confirming.confirm(report, runs, one_pass, summarize)

    def named_tests(self, incident: Incident) -> tuple[list[str], str | None]:
        """The test ids the failure names (its message and log_tail.txt): the check must see
        each of them run and pass. Second: why the log could not be read, if it could not."""
        from incidents.checks.testscan import named_tests

        try:
            log = bundle_files.read(self.folder, artifacts.LOG_TAIL)
        except FileNotFoundError:
            log = b""
        except (IncidentsError, OSError) as exc:
            return named_tests(incident.message), f"the failed tests cannot be known: {exc}"
        return named_tests(f"{incident.message}\n{log.decode('utf-8', 'replace')}"), None

    def write_attempt(self, ctx: ErrorPipelineContext, report: ErrorReport, now: datetime) -> None:
        """attempt_NN.json after each fix-and-recheck (seed 004), numbered by fix iterations.
        A skill's own record of the same iteration (`incidents attempt`) is kept: the
        machine adds its canonical verdict to it instead of replacing it."""
        from incidents.models import Attempt

        iteration = attempts.attempt_iteration(ctx)
        path = self.artifact(artifacts.attempt_name(iteration))
        after = ctx.pending.new_state if ctx.pending else ctx.current_state
        peek = decide_next_action(ctx.model_copy(update={"current_state": after, "pending": None}))
        result = {
            Action.FINALIZE_SUCCESS: "resolved",
            Action.QUARANTINE: "escalated",
            Action.FINALIZE_INFRA_ERROR: "escalated",
        }.get(peek.action, "continue")
        if peek.outcome is not None and peek.outcome is not Outcome.FIXED:
            result = str(peek.outcome)  # passing is not this fix's doing: no credit
        applied = [a.agent for a in ctx.ai_attempts[-1:]] if ctx.current_agent != "none" else []
        verdict = Attempt.model_validate(
            {
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
                "report": artifacts.report_name(report.label),
                "total_issues": report.summary.total_issues,
                # what did not block this verdict, for a reviewer (fsm.preexisting)
                **(
                    {"preexisting": _lines(excused)}
                    if (excused := preexisting(ctx, report))
                    else {}
                ),
            }
        )
        merged = attempts.merge_skill_attempt(path, verdict)
        fsutil.atomic_write_bytes(path, fsutil.dump_model(merged))

    def amend_attempt(self, ctx: ErrorPipelineContext, why: str) -> None:
        """The close did not grant the success the last recheck's attempt record foresaw
        (`verdict_mismatch`): that record says so (`result: escalated`, `verdict_problem`),
        rewritten atomically; an incident with no fix-and-recheck has none."""
        if attempts.fixes_applied(ctx) < 1:
            return
        path = self.artifact(artifacts.attempt_name(attempts.attempt_iteration(ctx)))
        try:
            doc = fsutil.read_json_object(path)
        except (IncidentsError, OSError):
            return  # none written, or not readable: nothing that says "resolved"
        if doc.get("result") == "escalated" and doc.get("verdict_problem") == why:
            return
        doc.update({"result": "escalated", "verdict_problem": why})
        fsutil.atomic_write_json(path, doc)

    def autofix(self, incident: Incident, ctx: ErrorPipelineContext) -> None:
        from incidents.checks.autofix import apply_mechanical_fixes, keep_targets, put_targets_back

        path = self.artifact(artifacts.autofix_step_name(ctx.step))
        if path.exists():
            log = fsutil.read_json_object(path)
        else:
            workdir = self.workdir(incident)
            # the targets as they were before this step's autofix, kept first: a run killed
            # while the tool rewrote a file (a truncated target passes every check) is
            # redone on the files as they were, never on what the killed run left
            before = self.artifact(artifacts.autofix_step_name(ctx.step) + ".before")
            if before.exists():
                put_targets_back(workdir, fsutil.read_json_object(before))
            else:
                fsutil.atomic_write_json(before, keep_targets(workdir, ctx.python_files))
            result = apply_mechanical_fixes(ctx.python_files, settings=self.cfg.checks, cwd=workdir)
            log = {"ok": result.ok, **result.to_json()}
            fsutil.atomic_write_json(path, log)
        if not log.get("ok", False):
            errors = [s.get("error") for s in log.get("log", []) if s.get("error")]
            ctx.record_fixer_failure(f"mechanical autofix failed: {'; '.join(errors) or '?'}")
        ctx.record_autofix()

    def await_handoff(self, ctx: ErrorPipelineContext, agent: Agent) -> None:
        wait = self.cfg.handoff.wait_s
        deadline = self.clock() + timedelta(seconds=wait) if wait > 0 else None
        ctx.begin_handoff(agent, TIER_NUMBER[agent], deadline)
        self.save_prompt(ctx, agent)
        self.events.append(("waiting_for_input", {"agent": agent}))

    def history(self, incident: Incident) -> planner.SignatureHistory:
        """How the signature's other incidents ended (the planner's view of history)."""
        try:
            with mirror.shared(self.root.db_path) as conn:
                counts = mirror.signature_history(conn, incident.group_key, exclude=self.id)
        except Exception:  # the mirror is derivable: without it the plan has no history
            return planner.SignatureHistory()
        return planner.SignatureHistory(
            occurrences=sum(counts.values()),
            resolved=counts.get("resolved", 0),
            escalated=counts.get("escalated", 0),
        )
