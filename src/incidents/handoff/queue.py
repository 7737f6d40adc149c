"""The hand-off queue: which incidents wait for an outside agent, claiming one, and the
work item an agent is given.

A tier configured `mode = "handoff"` makes the machine stop in its FIX state with
`waiting_for_input` (its prompt written to `error_runs/<id>/prompt_attempt_N.md`).
`next_incident` gives the oldest waiting incident that no live lease holds; `claim` takes
an agent lease (`leases.acquire(..., agent=NAME)`) for a TTL and snapshots the workdir
(`handoff.workspace`); an agent lease that expires returns the incident to the queue
(`lease_expired` event).
"""

from __future__ import annotations

import os
import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from incidents import artifacts, attempts, fsutil, leases, mirror, pause, store
from incidents.clock import iso_precise
from incidents.decisions import read_guidance
from incidents.errors import IncidentsError, LockBusy, NotFound, NotWaiting, Paused, UsageError
from incidents.handoff import workspace
from incidents.layout import Root, validate_id
from incidents.models import ErrorPipelineContext
from incidents.step.documents import load_context, workdir_of

if TYPE_CHECKING:
    from incidents.config import Config

_TTL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_TTL_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MAX_LEASE_S = 30 * 86400  # an agent that needs longer should claim again
MAX_AGENT_LEN = 100
Clock = Callable[[], float]


def validate_agent(agent: str) -> str:
    """An agent's name, as leases, notes, events and `status` show it: one line of
    printable characters (no newline, control or format character), at most 100. The one
    check `claim`, `submit` and `attempt` (CLI and MCP alike) make."""
    if not isinstance(agent, str) or not agent.strip():
        raise UsageError("--agent is required (the agent's name)")
    bad = next((c for c in agent if unicodedata.category(c)[0] == "C" or c in "\u2028\u2029"), None)
    if bad is not None:
        raise UsageError(
            f"--agent {agent!r}: a name is one line of printable characters (not {bad!r})"
        )
    if len(agent) > MAX_AGENT_LEN:
        raise UsageError(f"--agent: at most {MAX_AGENT_LEN} characters (got {len(agent)})")
    return agent


def parse_ttl(text: str) -> float:
    """`30m`, `2h`, `90s`, `1d` or plain seconds."""
    m = _TTL_RE.match(text)
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--lease {text!r}: use a duration like 30m, 2h or 90s")
    seconds = float(m.group(1)) * _TTL_UNITS[m.group(2)]
    if seconds > MAX_LEASE_S:
        raise UsageError(f"--lease {text!r}: at most {MAX_LEASE_S // 86400} days")
    return seconds


def _waiting(root: Root, incident_id: str) -> tuple[Path, Path, ErrorPipelineContext]:
    where, folder = root.locate(validate_id(incident_id))
    if where != "inbox":
        raise NotWaiting(f"incident {incident_id} is closed ({where})")
    ctx = load_context(root, folder)
    if ctx is None or not ctx.waiting_for_input or ctx.pending is not None:
        state = ctx.current_state.value if ctx else "not started"
        raise NotWaiting(f"incident {incident_id} is not waiting for an agent (state {state})")
    return folder, workdir_of(root, store.read_incident(folder).get("workdir")), ctx


def _last_report(root: Root, incident_id: str, ctx: ErrorPipelineContext) -> str | None:
    if not ctx.report_labels:
        return None
    path = root.runs_dir(incident_id) / artifacts.report_name(ctx.report_labels[-1])
    return str(path) if path.is_file() else None


def _prompt_file(root: Root, incident_id: str, ctx: ErrorPipelineContext) -> Path:
    return root.runs_dir(incident_id) / artifacts.prompt_name(len(ctx.ai_attempts) + 1)


@dataclass(frozen=True)
class WorkItem:
    """What an agent needs to do the work (`incidents next --json`, `claim --json`)."""

    incident_id: str
    agent: str | None
    state: str
    prompt: str
    prompt_file: str
    files: list[str]
    workdir: str
    last_report: str | None
    attempt_iteration: int
    guidance: str | None
    lease_expires_at: str | None = None  # set by a claim

    def to_json(self) -> dict[str, object]:
        doc = asdict(self)
        if self.lease_expires_at is None:
            del doc["lease_expires_at"]
        return doc


def work_item(root: Root, incident_id: str) -> WorkItem:
    """The work item of an incident waiting for an agent: prompt, files, workdir, report."""
    folder, workdir, ctx = _waiting(root, incident_id)
    prompt_file = _prompt_file(root, incident_id, ctx)
    try:
        prompt = fsutil.read_regular_file(prompt_file).decode("utf-8", "replace")
    except FileNotFoundError:
        prompt = ""
    return WorkItem(
        incident_id=incident_id,
        agent=ctx.handoff_agent,
        state=ctx.current_state.value,
        prompt=prompt,
        prompt_file=str(prompt_file),
        files=ctx.target_files,
        workdir=str(workdir),
        last_report=_last_report(root, incident_id, ctx),
        attempt_iteration=attempts.waiting_iteration(ctx),
        guidance=read_guidance(folder),
    )


# --- the queue ----------------------------------------------------------------------------


def _free(root: Root, incident_id: str, now: float) -> bool:
    """No live lease holds it; an expired agent lease is released (the incident returns
    to the queue) and noted as `lease_expired`."""
    lease = leases.read(root, incident_id)
    if lease is None or lease.expires_at == 0.0:
        return True
    if not lease.expired(now):
        return False
    if lease.agent is not None:
        leases.release(root, lease)
        mirror_progress(root, incident_id, None, [("lease_expired", {"agent": lease.agent})])
    return True


def next_incident(
    root: Root,
    *,
    clock: Clock = time.time,
    cfg: Config | None = None,
    why: dict[str, str] | None = None,
) -> WorkItem | None:
    """The oldest incident waiting for an agent that nobody holds, or None. Paused: raises
    `Paused` (an agent loop stops, as the watcher does). With `cfg`, an open incident
    that does not wait yet is first brought to its hand-off (`handoff.prepare`: its plan,
    its baseline check), so no watcher need run; `why` collects, per incident that is
    still not waiting, the reason and the command that goes on with it."""
    from incidents.handoff.prepare import prepare

    pause.refuse_new_work(root, agent=True)
    now = clock()
    try:
        names = sorted(n for n in os.listdir(root.inbox) if not n.startswith("."))
    except FileNotFoundError:
        return None
    later: list[str] = []
    for name in names:  # first what waits already: handing it out runs nothing
        try:
            validate_id(name)
            ctx = load_context(root, root.inbox / name)
        except (IncidentsError, OSError):
            continue  # the step service rejects what does not validate
        if ctx is not None and ctx.waiting_for_input and ctx.pending is None:
            if _free(root, name, now):
                return work_item(root, name)
        elif cfg is not None:
            later.append(name)
    for name in later:  # then the oldest that can be brought to its hand-off
        assert cfg is not None
        if not _free(root, name, clock()):
            continue
        try:
            reason = prepare(root, cfg, name)
        except Paused:
            raise
        except IncidentsError as exc:  # gone meanwhile, set aside: not an agent's work
            reason = str(exc)
        if reason is None and _free(root, name, clock()):
            return work_item(root, name)
        if reason is not None and why is not None:
            why[name] = reason
    return None


def no_work(why: dict[str, str]) -> dict[str, object]:
    """`next --json` when nothing waits: `incident_id` null, and the open incidents that do
    not wait for an agent yet, each with why and the command that goes on with it."""
    doc: dict[str, object] = {"incident_id": None}
    if why:
        doc["not_waiting"] = [{"incident_id": i, "why": w} for i, w in why.items()]
    return doc


def claim(
    root: Root, incident_id: str, agent: str, ttl_s: float, *, clock: Clock = time.time
) -> WorkItem:
    """Take the incident for `agent` until the lease expires; returns the work item."""
    validate_agent(agent)
    folder, workdir, ctx = _waiting(root, incident_id)
    pause.refuse_new_work(root, agent=True)
    _free(root, incident_id, clock())
    lease = leases.acquire(root, incident_id, f"agent:{agent}", ttl_s, agent=agent, clock=clock)
    if lease is None:
        holder = leases.read(root, incident_id)
        who = (holder.agent or holder.owner) if holder else "another process"
        raise LockBusy(f"incident {incident_id} is held by {who}")
    workspace.record_claim(
        root, incident_id, workdir, ctx.step, agent,
        iso_precise(clock()),
    )  # fmt: skip
    claimed = {"agent": agent, "expires_at": lease.expires_at}
    mirror_progress(root, incident_id, None, [("claimed", claimed)])
    return replace(work_item(root, incident_id), lease_expires_at=iso_precise(lease.expires_at))


# --- the mirror ---------------------------------------------------------------------------


def mirror_progress(
    root: Root, incident_id: str, ctx: ErrorPipelineContext | None, events: list[mirror.Event]
) -> None:
    """One transaction: the incident's row (who holds it; its context as just committed,
    else as its folder has it) and `events`."""
    from incidents import eventlog

    state = mirror.Context.of(ctx.model_dump(mode="json")) if ctx is not None else None
    try:
        _, folder = root.locate(incident_id)
    except NotFound:  # gone meanwhile (archived and pruned by hand): nothing to record
        return
    eventlog.append_events(folder, incident_id, events, eventlog.unique_key("h"))
    eventlog.sync(folder / eventlog.EVENTS)
    with mirror.best_effort(root, incident=incident_id) as conn:
        if conn is not None:
            mirror.sync(conn, root, incident_id, state)
