"""The step service's entry points: the only ways anything moves an incident's context.

`run_step` and `drive` tick an incident under its lease; `poison` closes one whose
processing keeps killing its worker; `commit_submission` takes an outside agent's
attempt into a handed-off incident; `requeue` and `resolve` carry out a human's decision
on an escalated one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from incidents import artifacts, leases, pause, store
from incidents.clock import utc_now
from incidents.config import Config
from incidents.errors import LockBusy, NotFound
from incidents.layout import Root, validate_id
from incidents.models import AIAttempt, ErrorPipelineContext
from incidents.step import close as closing
from incidents.step import seal
from incidents.step.base import Clock
from incidents.step.documents import (
    load_bundle,
    new_context,
    write_ai_attempts,
    write_state,
)
from incidents.step.outcome import StepOutcome
from incidents.step.tick import Tick


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
    closing.complete_pending(root)
    where, _folder = root.locate(incident_id)
    if where != "inbox":
        return StepOutcome.closed(incident_id, where)
    pause.refuse_new_work(root)
    seal.key(root)  # a root from before the seal seals its states now, before any lease
    me = owner or leases.new_owner("step")
    lease = leases.acquire(root, incident_id, me, cfg.policy.lease_ttl_s)
    if lease is None:
        holder = leases.read(root, incident_id)
        who = holder.agent or holder.owner if holder else "another process"
        raise LockBusy(f"incident {incident_id} is being worked by {who}")
    try:
        where, _folder = root.locate(incident_id)  # another process may have closed it
        if where != "inbox":
            return StepOutcome.closed(incident_id, where)
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


def poison(
    root: Root, cfg: Config, incident_id: str, lease: leases.Lease, reason: str, recoveries: int
) -> StepOutcome:
    """Close the incident as quarantined without running its step again (the caller holds
    its lease): its processing was interrupted `recoveries` times."""
    tick = Tick(root, cfg, incident_id, lease, utc_now)
    incident, ctx = load_bundle(root, cfg, tick.folder)
    ctx = ctx or new_context(incident, cfg, 0)
    old = ctx.current_state
    ctx.poison(reason)
    tick.persist(ctx)
    tick.events.append(("poisoned", {"recoveries": recoveries, "at_state": old.value}))
    return tick.close(incident, ctx, old)


def commit_submission(
    root: Root, folder: Path, ctx: ErrorPipelineContext, attempt: AIAttempt
) -> bool:
    """An outside agent's attempt into a handed-off incident's context, committed; False
    (nothing written) when the context awaits no submission from its agent. The caller
    holds the agent's fenced lease and the incident's lock."""
    if not ctx.submit_handoff(attempt):
        return False
    write_state(root, folder, ctx)
    write_ai_attempts(root.runs_dir(ctx.workstream_id) / artifacts.AI_ATTEMPTS, ctx.ai_attempts)
    return True


def requeue(root: Root, folder: Path, ctx: ErrorPipelineContext | None, guidance: str) -> Path:
    """An escalated incident back to the inbox for another climb with `guidance`, from
    its context `ctx` (None: it never had one). The caller holds the incident's lock and
    recorded the decision."""
    if ctx is not None:
        ctx.requeue(guidance)
        write_state(root, folder, ctx)
    return closing.reopen(root, folder)


def resolve(root: Root, folder: Path, reason: str, now: str) -> Path:
    """An escalated incident closed as resolved by a human (the caller holds the
    incident's lock and recorded the decision)."""
    return closing.resolve_escalated(root, folder, reason, now)
