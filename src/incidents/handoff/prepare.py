"""What an open incident still owes before it can be handed to an agent, done by `incidents
next` itself, so that an agent skill finds work without a watcher running.

A new incident is planned and checked (its baseline) before any fixer sees it, and a
rechecked one climbs to its next tier; `prepare` runs those steps through the step
service (under the incident's lease, exactly as `incidents drive` does) until the
incident waits for an agent or closes. It stops before any step that is not the hand-off's
to take: a fixer program's run (that is `incidents watch` / `drive`'s work, which may take
its whole timeout), a retry that is not yet due. It then says why, and which command goes
on with it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from incidents import ladder
from incidents.clock import utc_now
from incidents.errors import IncidentsError, Paused
from incidents.fsm import decide_next_action, due, is_actionable, is_terminal
from incidents.layout import Root
from incidents.models import ErrorPipelineContext
from incidents.step.actions import AGENT_OF
from incidents.step.documents import load_context
from incidents.vocab import FailureClass

if TYPE_CHECKING:
    from incidents.config import Config

MAX_STEPS = 50  # the ladder's longest climb to a hand-off is far shorter


def not_an_agents(failure_class: str) -> str | None:
    """Why an incident of `failure_class` is never an agent's: a transient failure clears
    itself (the machine re-runs it), a missing credential or a refused permission is a
    person's to set. None for the classes a code fix may mend (code, unknown)."""
    if failure_class == FailureClass.TRANSIENT:
        return "transient: the machine re-runs it and closes it when it passes; leave it alone"
    if failure_class in (FailureClass.ENV, FailureClass.NEVER_RETRY):
        return (
            f"{failure_class}: a person sets what is missing, then requeues it "
            "(`incidents resolve-escalation ID --requeue`); leave it alone"
        )
    return None


def _unplanned(root: Root, incident_id: str) -> str | None:
    """A new incident with nothing to check (no target file, no verification command, and
    no plan naming one) would escalate as unverifiable at its first step: a plan must name
    its targets first. None when it has something to check; not an agent's incident
    (`not_an_agents`) is left to the watcher and a person."""
    from incidents import planner, store
    from incidents.policy import effective_failure_class

    _, folder = root.locate(incident_id)
    doc = store.read_incident(folder)
    cls = effective_failure_class(doc.get("error_code"), str(doc.get("failure_class")))
    why = not_an_agents(cls)
    if why is not None:
        return why
    if doc.get("python_files") or doc.get("powershell_files") or doc.get("verify"):
        return None
    plan = planner.load_plan(root, incident_id)
    if plan is not None and (
        plan.verification_commands or any(a.target_paths or a.verification for a in plan.actions)
    ):
        return None
    return (
        "no target file and no verification command yet: plan it first, naming the files "
        f"to fix (the error-plan skill: `incidents plan {incident_id} --from FILE`)"
    )


def _blocked(
    root: Root, incident_id: str, ctx: ErrorPipelineContext | None, cfg: Config, now: datetime
) -> str | None:
    """Why the next step is not one `next` takes, or None."""
    if ctx is None:  # a new incident: its plan and baseline check come first
        return _unplanned(root, incident_id)
    if (why := not_an_agents(ctx.failure_class)) is not None:
        return why
    if ctx.pending is not None:  # a step begun and interrupted: its redo is the machine's
        action = ctx.pending.action
        return None if action not in AGENT_OF else _fixer(incident_id, AGENT_OF[action])
    peek = ctx.model_copy(deep=True)
    ladder.refresh(peek, cfg.tiers, cfg.handoff)
    na = due(decide_next_action(peek), peek, now)
    if na.action in AGENT_OF:
        return _fixer(incident_id, AGENT_OF[na.action])
    if not is_actionable(na, now):
        when = f" (not before {na.not_before.isoformat()})" if na.not_before else ""
        return f"{na.reason}{when}: `incidents watch` goes on with it"
    return None


def _fixer(incident_id: str, agent: str) -> str:
    return f"its next step runs the {agent} fixer: `incidents drive {incident_id}`"


def prepare(root: Root, cfg: Config, incident_id: str) -> str | None:
    """Step the incident until it waits for an agent: None when it does, else why it does
    not (closed, held by another process, or its next step is not the hand-off's to take,
    with the command that takes it)."""
    from incidents.step.service import run_step

    for _ in range(MAX_STEPS):
        where, folder = root.locate(incident_id)
        if where != "inbox":
            return f"closed ({where})"
        ctx = load_context(root, folder)
        if ctx is not None and ctx.waiting_for_input and ctx.pending is None:
            return None
        if ctx is not None and is_terminal(ctx.current_state):  # a close was interrupted
            return f"closing: `incidents drive {incident_id}` finishes it"
        why = _blocked(root, incident_id, ctx, cfg, utc_now())
        if why is not None:
            return why
        try:
            outcome = run_step(root, cfg, incident_id)
        except Paused:
            raise
        except IncidentsError as exc:  # held by another process, set aside, gone
            return str(exc)
        if outcome.terminal:
            return f"closed: {outcome.archived_to or outcome.new_state}"
        if outcome.idle and not outcome.waiting:
            return f"{outcome.reason}: `incidents watch` goes on with it"
    return f"still climbing after {MAX_STEPS} steps: `incidents drive {incident_id}`"
