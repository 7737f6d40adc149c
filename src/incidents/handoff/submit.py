"""What an agent hands back: its submission, and a skill's `attempt_XX.json`.

`submit`, under the agent's lease (fenced) and the incident lock, reverts the changes
outside the targets (`handoff.workspace`), has the step service commit the attempt into
the context, and releases the lease. The next `step` (or watcher tick) runs the RECHECK:
success is decided on the canonical check, never on the agent's word. `record_attempt`
stores a skill's `attempt_XX.json`, validated (seed 004) before it is stored.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from incidents import artifacts, attempts, eventlog, fsutil, leases, mirror, store
from incidents.clock import iso_precise
from incidents.errors import (
    AlreadyArchived,
    InvalidDocument,
    NotWaiting,
    UsageError,
    explain_validation,
)
from incidents.fsm import TIER_NUMBER
from incidents.handoff import workspace
from incidents.handoff.queue import (
    Clock,
    _prompt_file,
    _waiting,
    mirror_progress,
    validate_agent,
)
from incidents.layout import Root, validate_id
from incidents.models import AIAttempt, Attempt
from incidents.redact import redact, redact_json
from incidents.step import service as step_service


def submit(
    root: Root,
    incident_id: str,
    notes: str,
    *,
    agent: str | None = None,
    clock: Clock = time.time,
) -> AIAttempt:
    """Hand the incident back: record the agent's attempt and release its lease."""
    if agent is not None:
        validate_agent(agent)
    _, _, ctx = _waiting(root, incident_id)
    lease = leases.read(root, incident_id)
    now = clock()
    if lease is None or lease.agent is None or lease.expires_at == 0.0:
        raise NotWaiting(f"incident {incident_id} is not claimed; run `incidents claim` first")
    if lease.expired(now):
        raise NotWaiting(f"the lease of {lease.agent} on {incident_id} expired; claim it again")
    if agent is not None and agent != lease.agent:
        raise NotWaiting(f"incident {incident_id} is claimed by {lease.agent}, not {agent}")
    with leases.fenced(root, lease), store.incident_lock(root, incident_id):
        folder, workdir, ctx = _waiting(root, incident_id)  # again, under the lock
        changed, outside, unreverted, claimed_at = workspace.changes(root, workdir, ctx)
        tier = ctx.handoff_agent or "none"
        text = redact(notes.strip())
        if outside:
            text += f"\nchanged outside the targets (not accepted, reverted): {', '.join(outside)}"
        if unreverted:
            text += f"\nnot reverted: {', '.join(unreverted)}"
        attempt = AIAttempt(
            attempt_number=TIER_NUMBER.get(tier, 1),
            agent=tier,
            input_error_report_id=artifacts.report_id((ctx.report_labels or ["0"])[-1]),
            changed_files=changed,
            notes=f"{lease.agent}: {text}".strip(),
            started_at=datetime.fromisoformat(claimed_at) if claimed_at else None,
            finished_at=datetime.fromtimestamp(now, UTC),
            violations=outside,
            prompt_file=str(_prompt_file(root, incident_id, ctx)),
            handoff=True,
            step=ctx.step,
        )
        if not step_service.commit_submission(root, folder, ctx, attempt):
            raise NotWaiting(f"incident {incident_id} is not waiting for {tier}")
    leases.release(root, lease)
    shutil.rmtree(workspace.snapshot_dir(root, incident_id, attempt.step or 0), ignore_errors=True)
    submitted = {"agent": lease.agent, "changed_files": changed}
    events = [("submitted", submitted), ("ai_attempt", attempt.model_dump(mode="json"))]
    mirror_progress(root, incident_id, ctx, events)
    return attempt


def record_attempt(root: Root, incident_id: str, path: Path, *, agent: str | None = None) -> Path:
    """Validate a skill's attempt document and store it as `attempt_XX.json` (once): for
    an open incident, and for the next free iteration or one it recorded already."""
    if agent is not None:
        validate_agent(agent)
    where, _ = root.locate(validate_id(incident_id))
    if where != "inbox":
        raise AlreadyArchived(f"incident {incident_id} is closed ({where}); its attempts are final")
    try:
        doc = fsutil.read_json_object(path)
    except FileNotFoundError:
        raise UsageError(f"attempt --file {path}: no such file") from None
    return record_attempt_doc(root, incident_id, doc, str(path), agent=agent)


def record_attempt_doc(
    root: Root,
    incident_id: str,
    doc: dict[str, Any],
    source: str,
    *,
    agent: str | None = None,
    clock: Clock = time.time,
) -> Path:
    """`record_attempt` for a document already read (`source` names it in errors): the
    MCP server's `submit_attempt` hands the agent's JSON object over as it is.

    While a live agent lease holds the incident only its holder (`agent`) records an
    attempt, under that lease (fenced); the document's `error_signature` is the
    incident's (filled in when omitted)."""
    if agent is not None:
        validate_agent(agent)
    where, folder = root.locate(validate_id(incident_id))
    if where != "inbox":
        raise AlreadyArchived(f"incident {incident_id} is closed ({where}); its attempts are final")
    held = _holder(root, incident_id, agent, clock())
    doc = _with_signature(redact_json(doc), store.read_incident(folder), source)
    try:
        attempt = Attempt.model_validate(doc)
    except ValidationError as exc:
        field, reason = explain_validation(exc)
        raise InvalidDocument(source, reason, field) from exc
    if attempt.incident_id != incident_id:
        raise InvalidDocument(source, f"is for {attempt.incident_id}, not {incident_id}")
    runs = root.runs_dir(incident_id)
    target = attempts.path_for(runs, attempt.iteration)
    data = attempt.model_dump(mode="json")
    fence = leases.fenced(root, held) if held else contextlib.nullcontext()
    with fence, store.incident_lock(root, incident_id):
        if target.exists():
            if fsutil.read_json_object(target) == data:
                return target  # the same document again: recorded once
            whose = "the machine's recheck" if attempts.written_by_machine(target) else "a skill"
            raise UsageError(
                f"{target.name} was already recorded for {incident_id} by {whose}; not "
                f"replacing it (the next free iteration is {attempts.next_free(runs)})"
            )
        free = attempts.next_free(runs)
        if attempt.iteration > free:
            raise UsageError(
                f"{source}: iteration {attempt.iteration} skips ahead for {incident_id}; "
                f"the next free iteration is {free}"
            )
        fsutil.ensure_dir(target.parent)
        fsutil.atomic_write_json(target, data)
        key, now = eventlog.unique_key("a"), iso_precise()
        lines = [
            eventlog.step_attempt(
                f"{key}.r", now, incident_id, str(doc.get("run_id", "")), "attempt", target.stem,
                data, data["started_at"], data["finished_at"],
            ),
            eventlog.event(f"{key}.0", now, incident_id, "attempt_recorded",
                           {"file": target.name, **data}),
        ]  # fmt: skip
        folder = root.inbox / incident_id
        eventlog.append(folder / eventlog.EVENTS, lines)
        eventlog.sync(folder / eventlog.EVENTS)
    with mirror.best_effort(root, incident=incident_id) as conn:  # else a hint: caught up
        if conn is not None:
            mirror.ingest_incident(conn, root, incident_id)
    return target


def _holder(root: Root, incident_id: str, agent: str | None, now: float) -> leases.Lease | None:
    """The live agent lease on the incident, when `agent` holds it; None when no agent
    holds it; NotWaiting when another agent does (or no agent was named)."""
    lease = leases.read(root, incident_id)
    if lease is None or lease.agent is None or lease.expires_at == 0.0 or lease.expired(now):
        return None
    if agent is None:
        raise NotWaiting(
            f"incident {incident_id} is claimed by {lease.agent}; only its holder records "
            "an attempt (give --agent)"
        )
    if agent != lease.agent:
        raise NotWaiting(f"incident {incident_id} is claimed by {lease.agent}, not {agent}")
    return lease


def _with_signature(doc: dict[str, Any], incident: dict[str, Any], source: str) -> dict[str, Any]:
    """The document with the incident's error signature (filled in when omitted or
    empty); InvalidDocument when it names another one."""
    mine = incident.get("error_signature")
    given = doc.get("error_signature")
    if given in (None, "") and isinstance(mine, str) and mine:
        return {**doc, "error_signature": mine}
    if isinstance(mine, str) and mine and given != mine:
        raise InvalidDocument(
            source, f"{given!r} is not the incident's signature ({mine})", "error_signature"
        )
    return doc
