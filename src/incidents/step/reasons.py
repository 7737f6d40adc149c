"""What a tick says about an incident it closes without success, and what it reads for it.

An escalation's reason is the machine's decision (`NextAction.reason`) with what a person
needs first: for a failure no fixer can mend (env, never_retry) the headline of what is
missing and the decision that fits (`incidents.needs`), for a transient failure still
failing its own message, for an infrastructure failure the tools that could not run, and
the flaky and tamper findings of the last report.
"""

from __future__ import annotations

from incidents import artifacts, bundle_files
from incidents.errors import IncidentsError
from incidents.fsm import NextAction
from incidents.models import ErrorPipelineContext, Incident
from incidents.models.pipeline import Action, EscalationKind
from incidents.step.base import TickBase
from incidents.vocab import Category


class Reasons(TickBase):
    def bundle_text(self, name: str) -> str:
        """A bundle file as text ("" when it is missing or cannot be read)."""
        try:
            return bundle_files.read(self.folder, name).decode("utf-8", "replace")
        except (IncidentsError, OSError):
            return ""

    def command(self) -> list[str]:
        """The command `incidents run` ran (context.json `command`), as one string."""
        import json
        import shlex

        try:
            argv = json.loads(self.bundle_text(artifacts.CONTEXT) or "{}").get("command")
        except (ValueError, AttributeError):
            return []
        ok = isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)
        return [shlex.join(argv)] if ok else []

    def escalation_reason(
        self, na: NextAction, ctx: ErrorPipelineContext, incident: Incident
    ) -> str:
        from incidents import needs

        report = ctx.last_error_report
        reason = na.reason
        if na.escalation in (EscalationKind.ENVIRONMENT, EscalationKind.NEVER_RETRY):
            # what a person must put in place, read from the failure's own output
            log = self.bundle_text(artifacts.LOG_TAIL)
            found = "\n".join(f.message for f in report.issues[:5]) if report else ""
            said = needs.headline(
                incident.message, f"{log}\n{found}", str(ctx.failure_class), self.id
            )
            reason = f"{said} [{na.reason}]"
        elif na.escalation is EscalationKind.STILL_FAILING:  # the failure's own words first
            reason = f"{self.own_words(incident)} ({na.reason})"
        if na.action is Action.FINALIZE_INFRA_ERROR and report and report.infra_failures:
            details = "; ".join(f"{f.tool}: {f.reason}" for f in report.infra_failures[:5])
            reason += f" ({details})"
        flaky = [f for f in report.issues if f.code == "flaky"] if report else []
        if flaky:  # it passes sometimes: a person must know it is not a steady failure
            shown = "; ".join(f"{f.path}: {f.message}" for f in flaky[:3])
            reason += f" (flaky with [policy] confirm_runs: {shown})"
        tampered = [f for f in report.issues if f.category is Category.TAMPER] if report else []
        if tampered:  # what a reviewer must know first: a fix was faked, not just missed
            shown = "; ".join(
                f"{f.code} in {f.path}" + (f":{f.line}" if f.line else "") for f in tampered[:5]
            )
            reason += f" (suppressions added instead of fixes, not accepted: {shown})"
        return reason

    def own_words(self, incident: Incident) -> str:
        """What the failure said: the exception its output ends with, its message and the
        command that printed it (`incidents run`'s message is only `CMD: exited with N`);
        the captured message when the output names no exception."""
        from incidents.infer import scan

        said = scan(self.bundle_text(artifacts.LOG_TAIL)).exception
        return f"{said} [{incident.message}]" if said else incident.message
