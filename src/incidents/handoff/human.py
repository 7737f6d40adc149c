"""Human decisions on escalations (seed 003's escalation resolve).

`resolve_escalation` records the decision in the bundle (`decisions.json`, which moves
with it) and in the mirror (which resets the signature's budget), then has the step
service either requeue the incident (back to the inbox at S_INIT, its history kept: step
numbers, reports and attempts continue; the guidance goes into every later prompt) or
close it as resolved with the human's reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from incidents import clock, decisions, eventlog, mirror, store
from incidents.errors import NotWaiting, UsageError
from incidents.layout import Root, validate_id
from incidents.models import ErrorPipelineContext, HumanDecision
from incidents.models.pipeline import EscalationKind
from incidents.redact import redact
from incidents.step import service as step_service
from incidents.step.documents import load_context


@dataclass(frozen=True)
class Decision:
    incident_id: str
    decision: str  # "requeue" or "resolved"
    guidance: str
    location: str


def deciding_user() -> str:
    """The login name of the person running the command ("human" when there is none)."""
    import getpass

    try:
        return getpass.getuser() or "human"
    except (OSError, KeyError):
        return "human"


def resolve_escalation(
    root: Root,
    incident_id: str,
    guidance: str,
    *,
    requeue: bool,
    by: str = "human",
    accept_fix: bool = False,
) -> Decision:
    """Record a human's decision on an escalated incident (see the module docstring).
    `accept_fix`: a person accepts a fix escalated for review (`review_fix`) as it is."""
    if accept_fix and requeue:
        raise UsageError("resolve-escalation: --accept-fix and --requeue exclude each other")
    if accept_fix and not guidance.strip():
        guidance = "the fix was reviewed and accepted"
    if not guidance.strip():
        raise UsageError("resolve-escalation: --guidance is required")
    guidance = redact(guidance.strip())  # it reaches every later prompt, the mirror, the page
    with store.incident_lock(root, validate_id(incident_id)):
        where, folder = root.locate(incident_id)
        if where != "escalated":
            raise NotWaiting(f"incident {incident_id} is not escalated (it is in {where})")
        incident = store.read_incident(folder)  # what the decision needs, read leniently
        ctx = load_context(root, folder)  # a broken one stops here, before anything is written
        if accept_fix:
            _check_review(incident_id, ctx)
        kind: Literal["requeue", "resolved", "accept_fix"] = (
            "requeue" if requeue else "accept_fix" if accept_fix else "resolved"
        )
        now = clock.utc_now().isoformat()
        taken = decisions.read_decisions(folder)
        last = taken[-1] if taken else None
        if (
            last is not None
            and (last.decision, last.guidance) == (kind, guidance)
            and decisions.taken_since(last.at, decisions.escalated_at(folder))
        ):
            # a re-run after a crash: finish that decision, with its time (the mirror's
            # budget reset and the one reindex rebuilds from decisions.json agree)
            now = last.at
        else:
            decision = HumanDecision(
                at=now, decision=kind, guidance=guidance, by=by,
                escalation_reason=incident.get("resolution"), signature=incident["error_signature"],
                escalated_at=clock.normalized(began.isoformat()) if (
                    began := decisions.escalated_at(folder)) else None,
            )  # fmt: skip
            decisions.append_decision(folder, decision)
        if requeue:
            target = step_service.requeue(root, folder, ctx, guidance)
        else:
            how = "fix accepted after review" if accept_fix else "resolved"
            reason = f"{how} by {by}: {guidance}"
            target = step_service.resolve(root, folder, reason, now)
        # the decision's lines, keyed by its time (a re-run after a crash writes the same)
        taken_events: list[mirror.Event] = [
            ("escalation_resolved", {"decision": kind, "guidance": guidance})
        ]
        if requeue:
            taken_events.append(("requeued", {"guidance": guidance}))
        eventlog.append_events(target, incident_id, taken_events, f"d{now}", ts=now)
        eventlog.sync(target / eventlog.EVENTS)
    _record_decision(root, incident_id, incident["error_signature"], guidance, kind, now)
    return Decision(incident_id, kind, guidance, str(target.relative_to(root.path)))


def _check_review(incident_id: str, ctx: ErrorPipelineContext | None) -> None:
    """Only a fix escalated for review may be accepted as it is: any other escalation
    was not a clean fix, and accepting it would call unfixed code resolved."""
    kind = ctx.escalation_kind if ctx is not None else None
    if kind is not EscalationKind.REVIEW_FIX:
        shown = kind.value if kind is not None else "none recorded"
        raise NotWaiting(
            f"incident {incident_id} was not escalated for review of its fix (its escalation "
            f"kind: {shown}): resolve or requeue it instead"
        )


def _record_decision(
    root: Root, incident_id: str, signature: str, guidance: str, kind: str, now: str
) -> None:
    # the decision is in the bundle already: a mirror that cannot be opened or locked is
    # warned about (reindex rebuilds the decision from decisions.json); a failing write
    # inside the transaction is raised
    with mirror.best_effort(root, errors=(), incident=incident_id) as conn:
        if conn is not None:
            mirror.resolve_escalation(conn, incident_id, signature, guidance, now)
            mirror.refresh(conn, root, incident_id)
            mirror.ingest_incident(conn, root, incident_id)
