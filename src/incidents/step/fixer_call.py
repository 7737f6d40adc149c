"""The fixer tier step: the prompt, one run of the tier's CLI, and what its API's answer
means for the ladder (a try spent, a wait for the same tier, an infrastructure failure:
`incidents.fixers.api_rules`). Keyed by the step like every action (`incidents.step.actions`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from incidents import artifacts, fsutil, leases, proc
from incidents.classify import code_of_findings
from incidents.decisions import read_guidance
from incidents.fixers.settings import TierSettings
from incidents.fsm import TIER_NUMBER
from incidents.models import AIAttempt, ErrorPipelineContext, Incident
from incidents.models.pipeline import Agent
from incidents.step.base import TickBase
from incidents.vocab import ErrorCode

if TYPE_CHECKING:  # imported where used: a tick that calls no fixer never loads them
    from incidents.fixers.api_rules import Decision


class FixerCalls(TickBase):
    def save_prompt(
        self, ctx: ErrorPipelineContext, agent: Agent, *, tier: str | None = None, mcp: bool = False
    ) -> Path:
        """The prompt, shaped for the `tier` that runs it (None: a hand-off's plain prompt)."""
        from incidents.fixers.prompt import RetryContext, build_prompt

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
        guidance = ctx.guidance or read_guidance(self.folder)
        text = build_prompt(
            report, ctx.target_files, retry, guidance, tier=tier, incident_id=self.id, mcp=mcp
        )
        path = self.artifact(artifacts.prompt_name(len(ctx.ai_attempts) + 1))
        fsutil.atomic_write_text(path, text)
        return path

    def call_fixer(self, agent: Agent, incident: Incident, ctx: ErrorPipelineContext) -> None:
        from incidents.fixers import api_rules, spend

        ctx.enter_tier(agent, TIER_NUMBER[agent])
        path = self.artifact(artifacts.fixer_step_name(ctx.step))
        if path.exists():  # the fixer ran before a crash: record its result once
            saved = fsutil.read_json_object(path)
            attempt = AIAttempt.model_validate(saved["attempt"]) if saved["attempt"] else None
            infra = saved.get("infra_error")
            decision = api_rules.Decision.from_json(saved.get("api")) or api_rules.Decision()
        else:
            settings = getattr(self.cfg.tiers, agent)
            # a spend limit reached, the tier cooling down after a rate limit or disabled
            # after AUTH: no call
            refused = self.spend_limit(incident, ctx) or api_rules.before(
                self.root.state, agent, settings, self.clock()
            )
            if refused is None:
                attempt, infra, decision = self.run_tier(agent, incident, ctx, settings)
                spend.record(self.root.state, self.id, incident.group_key, attempt, self.clock())
            else:
                attempt, infra, decision = None, refused.infra, refused
            fsutil.atomic_write_json(
                path,
                {
                    "attempt": attempt.model_dump(mode="json") if attempt else None,
                    "infra_error": infra,
                    "api": decision.to_json(),
                },
            )
        if attempt is not None and decision.budgeted:
            ctx.record_ai_attempt(attempt)
        else:  # refused by the API: no try spent (seed 002), and maybe a wait for the tier
            ctx.record_api_failure(attempt, decision.wait, decision.until)
        if infra:
            ctx.record_fixer_failure(f"{agent}: {infra}")
        if attempt is not None:
            self.events.append(("ai_attempt", attempt.model_dump(mode="json")))
        if decision.wait:
            self.events.append(("fixer_waiting", {"agent": agent, "reason": decision.wait}))

    def spend_limit(self, incident: Incident, ctx: ErrorPipelineContext) -> Decision | None:
        """The decision when a `[policy]` spend limit is already reached (no tier runs: the
        incident waits or escalates, as `spend_limit` says), or None; the limit is alerted
        like a pause (`notify.spend_limited`: once per limit until its setting changes)."""
        from incidents import notify
        from incidents.fixers import api_rules, spend

        own = spend.of_attempts([*ctx.ai_attempts, *ctx.unbudgeted_attempts])
        found = spend.limit_reached(self.cfg.policy, self.root.state, own, self.clock())
        if found is None:
            return None
        why = found.why
        self.events.append(("spend_limit", {"reason": why}))
        notify.spend_limited(self.root, found, self.id, incident.group_key)
        if self.cfg.policy.spend_limit == "escalate":
            return api_rules.Decision(False, infra=why)
        return api_rules.Decision(False, wait=f"{why}; waiting", until=found.until)

    def run_tier(
        self, agent: Agent, incident: Incident, ctx: ErrorPipelineContext, settings: TierSettings
    ) -> tuple[AIAttempt, str | None, Decision]:
        """Run the tier's fixer once: its attempt, the infrastructure failure (or None) and
        what its API's answer means for the ladder (`fixers.api_rules.Decision`)."""
        from incidents.fixers import api_rules
        from incidents.fixers.runner import run_fixer
        from incidents.fixers.sandbox import Containment

        mcp = bool(getattr(settings, "mcp", False))  # [tiers.claude] mcp
        prompt_file = self.save_prompt(ctx, agent, tier=agent, mcp=mcp)
        run = self.with_mcp_server(incident, settings, prompt_file) if mcp else settings
        # a fixer may run for its whole timeout: hold the lease at least that long
        ttl = settings.timeout_s + self.cfg.policy.lease_ttl_s
        self.lease = leases.renew(self.root, self.lease, ttl_s=ttl)
        # a fixer of a tick that was killed may still be running: never two at once
        pidfile = self.root.state / "running" / f"{self.id}.pid"
        pidfile.parent.mkdir(mode=0o700, exist_ok=True)
        proc.kill_recorded(pidfile)
        source = (self.cfg.source,) if self.cfg.source else ()
        outcome = run_fixer(
            agent, run, prompt_file, ctx.target_files, self.workdir(incident),
            pidfile=pidfile, containment=Containment(
                self.cfg.tiers.sandbox, protect=(str(self.root.path),), watch=source,
                watch_root=tuple(map(str, (self.runs, self.folder,
                                           self.root.plan_dir(self.id), self.root.seal_key))),
                hide=(str(self.root.state),),
                aside=str(self.root.state / "stray" / self.id)),
        )  # fmt: skip
        report_id = artifacts.report_id(ctx.report_labels[-1] if ctx.report_labels else "0")
        attempt = outcome.ai_attempt(TIER_NUMBER[agent], report_id).model_copy(
            update={"step": ctx.step}
        )
        infra = outcome.infra_error
        # the fixer and everything it started are gone: a step artifact no step has
        # written yet (a recheck's report, a verdict) is its own, planted for a later
        # step to reuse; set aside before this step's own result is written
        planted = [
            n for n in os.listdir(self.runs)
            if artifacts.ahead_of(n, ctx.step, ctx.report_labels)
        ]  # fmt: skip
        self.set_aside(planted, "planted_artifacts")
        if planted:
            note = f"planted in the runs folder, set aside: {', '.join(sorted(planted)[:10])}"
            attempt = attempt.model_copy(
                update={"notes": f"{attempt.notes}; {note}" if attempt.notes else note}
            )
        decision = api_rules.after(
            self.root.state, agent, settings, attempt.error_code, outcome.readout.message,
            outcome.readout.retry_after_s, self.clock(),
        )  # fmt: skip
        if not decision.budgeted:
            infra = decision.infra
        return attempt, infra, decision

    def with_mcp_server(
        self, incident: Incident, settings: TierSettings, prompt_file: Path
    ) -> TierSettings:
        """The tier's settings with `--mcp-config` for `incidents mcp --fixer ID` on this
        root and the incident's workdir (incidents.mcp_server.claude): only the read-only
        checks of this incident. The file is written beside the prompt."""
        from incidents.mcp_server import claude

        doc = claude.server_config(
            str(self.root.path), str(self.workdir(incident)), self.cfg.source, self.id
        )
        path = prompt_file.with_name(prompt_file.stem.replace("prompt_", "mcp_config_") + ".json")
        fsutil.atomic_write_json(path, doc)
        return settings.model_copy(update={"argv": claude.with_mcp(settings.argv, str(path))})
