"""Hand-off to outside agents (skills) and human decisions on escalations.

A tier configured `mode = "handoff"` makes the machine stop in its FIX state with
`waiting_for_input` (its prompt written to `error_runs/<id>/prompt_attempt_N.md`). Then:

- `next_incident`: the oldest waiting incident that no live lease holds;
- `claim`: an agent lease (`leases.acquire(..., agent=NAME)`) for a TTL; it snapshots the
  workdir once per handoff step with the bytes of its files (`fixers.snapshot`, the runner's
  limits), kept under `.state/handoff/<id>/step_<N>/` so it outlives the claiming process
  (`handoff_step_<N>.json` keeps the digests and when it was claimed);
- `submit` reverts every change outside the target files (changed and deleted files get
  their old bytes, created files and emptied new folders are removed) and records them as
  the attempt's violations; the machine's own reports root is never touched;
- `submit`: under the agent's lease (fenced) and the incident lock, records the attempt
  in the context (`ctx.submit_handoff`), commits `state.json`, releases the lease. The next
  `step` (or watcher tick) runs the RECHECK: success is decided on the canonical check,
  never on the agent's word;
- an agent lease that expires returns the incident to the queue (`lease_expired` event);
- `record_attempt`: a skill's `attempt_XX.json`, validated (seed 004) before it is stored.

Human decisions (seed 003's escalation resolve): `resolve_escalation` records the
decision in the bundle (`decisions.json`, which moves with it) and in the mirror (which
resets the signature's budget), then either requeues the incident (back to the inbox at
S_INIT, its history kept: step numbers, reports and attempts continue; the guidance goes
into every later prompt) or archives it as resolved with the human's reason.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from incidents import attempts, fsutil, leases, mirror, store
from incidents.errors import (
    AlreadyArchived,
    IncidentsError,
    InvalidDocument,
    LockBusy,
    UsageError,
)
from incidents.fixers import snapshot
from incidents.layout import Root, validate_id
from incidents.models import AIAttempt, Attempt, ErrorPipelineContext
from incidents.models.pipeline import State
from incidents.vocab import FailureClass

STATE_FILE = "state.json"
DECISIONS_FILE = "decisions.json"
TIER_NUMBER = {"aider": 1, "codex": 2, "claude": 3}
_TTL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_TTL_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_MANIFEST = "manifest.json"
_MANIFEST_MAX = 64 << 20
_DIGESTS = snapshot.Limits(max_file_bytes=0, max_files=1 << 40, max_total_bytes=1 << 40)
Clock = Callable[[], float]


class NotWaiting(IncidentsError):
    """The incident is not waiting for an agent (or not for this one)."""

    exit_code = 1


MAX_LEASE_S = 30 * 86400  # an agent that needs longer should claim again


def parse_ttl(text: str) -> float:
    """`30m`, `2h`, `90s`, `1d` or plain seconds."""
    m = _TTL_RE.match(text)
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--lease {text!r}: use a duration like 30m, 2h or 90s")
    seconds = float(m.group(1)) * _TTL_UNITS[m.group(2)]
    if seconds > MAX_LEASE_S:
        raise UsageError(f"--lease {text!r}: at most {MAX_LEASE_S // 86400} days")
    return seconds


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


# --- reading an incident ------------------------------------------------------------------


def _context(folder: Path) -> ErrorPipelineContext | None:
    try:
        return ErrorPipelineContext.model_validate(fsutil.read_json_object(folder / STATE_FILE))
    except FileNotFoundError:
        return None
    except ValidationError as exc:
        raise InvalidDocument(str(folder / STATE_FILE), str(exc.errors()[0]["msg"])) from exc


def _workdir(root: Root, incident: dict[str, Any]) -> Path:
    return Path(incident.get("workdir") or root.path.parent)


def _waiting(root: Root, incident_id: str) -> tuple[Path, dict[str, Any], ErrorPipelineContext]:
    where, folder = root.locate(validate_id(incident_id))
    if where != "inbox":
        raise NotWaiting(f"incident {incident_id} is closed ({where})")
    ctx = _context(folder)
    if ctx is None or not ctx.waiting_for_input or ctx.pending is not None:
        state = ctx.current_state.value if ctx else "not started"
        raise NotWaiting(f"incident {incident_id} is not waiting for an agent (state {state})")
    return folder, store.read_incident(folder), ctx


def _last_report(root: Root, incident_id: str, ctx: ErrorPipelineContext) -> str | None:
    if not ctx.report_labels:
        return None
    path = root.runs_dir(incident_id) / f"error_report_attempt_{ctx.report_labels[-1]}.json"
    return str(path) if path.is_file() else None


def _prompt_file(root: Root, incident_id: str, ctx: ErrorPipelineContext) -> Path:
    return root.runs_dir(incident_id) / f"prompt_attempt_{len(ctx.ai_attempts) + 1}.md"


def work_item(root: Root, incident_id: str) -> dict[str, Any]:
    """What an agent needs to do the work: prompt, files, workdir, last report."""
    folder, incident, ctx = _waiting(root, incident_id)
    prompt_file = _prompt_file(root, incident_id, ctx)
    try:
        prompt = fsutil.read_regular_file(prompt_file).decode("utf-8", "replace")
    except FileNotFoundError:
        prompt = ""
    return {
        "incident_id": incident_id,
        "agent": ctx.handoff_agent,
        "state": ctx.current_state.value,
        "prompt": prompt,
        "prompt_file": str(prompt_file),
        "files": ctx.target_files,
        "workdir": str(_workdir(root, incident)),
        "last_report": _last_report(root, incident_id, ctx),
        "attempt_iteration": attempts.waiting_iteration(ctx),
        "guidance": read_guidance(folder),
    }


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
        _events(root, [(incident_id, "lease_expired", {"agent": lease.agent})])
    return True


def next_incident(root: Root, *, clock: Clock = time.time) -> dict[str, Any] | None:
    """The oldest incident waiting for an agent that nobody holds, or None."""
    now = clock()
    try:
        names = sorted(n for n in os.listdir(root.inbox) if not n.startswith("."))
    except FileNotFoundError:
        return None
    for name in names:
        try:
            validate_id(name)
            ctx = _context(root.inbox / name)
        except (IncidentsError, OSError):
            continue  # the step service rejects what does not validate
        if ctx is None or not ctx.waiting_for_input or ctx.pending is not None:
            continue
        if _free(root, name, now):
            return work_item(root, name)
    return None


def claim(
    root: Root, incident_id: str, agent: str, ttl_s: float, *, clock: Clock = time.time
) -> dict[str, Any]:
    """Take the incident for `agent` until the lease expires; returns the work item."""
    if not agent.strip():
        raise UsageError("claim: --agent is required")
    folder, incident, ctx = _waiting(root, incident_id)
    _free(root, incident_id, clock())
    lease = leases.acquire(root, incident_id, f"agent:{agent}", ttl_s, agent=agent, clock=clock)
    if lease is None:
        holder = leases.read(root, incident_id)
        who = (holder.agent or holder.owner) if holder else "another process"
        raise LockBusy(f"incident {incident_id} is held by {who}")
    baseline = root.runs_dir(incident_id) / f"handoff_step_{ctx.step}.json"
    saved = _snapshot_dir(root, incident_id, ctx.step)
    if not (saved / _MANIFEST).exists():  # once per handoff: a re-claim keeps the first
        snap = _take_restorable(root, _workdir(root, incident))
        _save_snapshot(saved, snap)
    else:
        snap = _load_snapshot(saved)
    if not baseline.exists():
        fsutil.ensure_dir(baseline.parent)
        fsutil.atomic_write_json(
            baseline,
            {
                "step": ctx.step,
                "agent": agent,
                "claimed_at": _iso(clock()),
                "digests": {rel: [e.kind, e.digest] for rel, e in snap.files.items()},
            },
        )
    _events(root, [(incident_id, "claimed", {"agent": agent, "expires_at": lease.expires_at})])
    return {**work_item(root, incident_id), "lease_expires_at": _iso(lease.expires_at)}


def _snapshot_dir(root: Root, incident_id: str, step: int) -> Path:
    return root.state / "handoff" / incident_id / f"step_{step}"


def _skip(root: Root, workdir: Path) -> tuple[str, ...]:
    """The reports root's top-level name when it lives directly in the workdir."""
    rel = _root_prefix(root, workdir)
    return (rel,) if rel and "/" not in rel else ()


def _root_prefix(root: Root, workdir: Path) -> str | None:
    """The reports root relative to the workdir (None when it is not inside it): the
    machine's own files there are never an agent's change, never reverted."""
    real_root = os.path.realpath(root.path)
    real_work = os.path.realpath(workdir)
    if os.path.commonpath([real_root, real_work]) != real_work:
        return None
    rel = os.path.relpath(real_root, real_work)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _take_restorable(root: Root, workdir: Path) -> snapshot.Snapshot:
    """The workdir with the bytes of its files (the runner's limits); a workdir over them
    keeps digests only, so a change outside the targets is reported but not reverted."""
    try:
        return snapshot.take(workdir, _skip(root, workdir), snapshot.Limits())
    except snapshot.SnapshotTooLarge:
        return snapshot.take(workdir, _skip(root, workdir), _DIGESTS)


def _save_snapshot(folder: Path, snap: snapshot.Snapshot) -> None:
    """Blobs (by digest) first, the manifest last (atomic): a crash leaves no manifest or a
    complete one; a re-claim then takes the snapshot again."""
    blobs = folder / "blobs"
    fsutil.ensure_dir(blobs)
    files: dict[str, list[Any]] = {}
    for rel, entry in snap.files.items():
        kept = entry.kind == "file" and entry.data is not None
        if kept and not (blobs / entry.digest).exists():
            fsutil.atomic_write_bytes(blobs / entry.digest, entry.data or b"")
        files[rel] = [entry.kind, entry.digest, entry.mode, kept]
    manifest = {"root": str(snap.root), "dirs": sorted(snap.dirs), "files": files}
    fsutil.atomic_write_json(folder / _MANIFEST, manifest)


def _load_snapshot(folder: Path) -> snapshot.Snapshot:
    doc = fsutil.read_json(folder / _MANIFEST, _MANIFEST_MAX)
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        raise InvalidDocument(str(folder / _MANIFEST), "is not a handoff snapshot")
    snap = snapshot.Snapshot(Path(str(doc["root"])), dirs={str(d) for d in doc["dirs"]})
    for rel, (kind, digest, mode, kept) in doc["files"].items():
        data = None
        if kept:
            data = fsutil.read_regular_file(folder / "blobs" / str(digest), snapshot.MAX_FILE_BYTES)
        snap.files[str(rel)] = snapshot.Entry(str(kind), str(digest), data, int(mode))
    return snap


def _before(
    root: Root, incident: dict[str, Any], ctx: ErrorPipelineContext
) -> tuple[snapshot.Snapshot | None, str | None]:
    """The claim's snapshot (with bytes) and its claimed_at; a claim made before snapshots
    were kept has digests only (then nothing can be reverted)."""
    try:
        base = fsutil.read_json_object(
            root.runs_dir(ctx.workstream_id) / f"handoff_step_{ctx.step}.json"
        )
    except FileNotFoundError:
        return None, None
    claimed_at = base.get("claimed_at")
    when = claimed_at if isinstance(claimed_at, str) else None
    saved = _snapshot_dir(root, ctx.workstream_id, ctx.step)
    if (saved / _MANIFEST).exists():
        return _load_snapshot(saved), when
    snap = snapshot.Snapshot(Path(os.path.realpath(_workdir(root, incident))))
    for rel, (kind, digest) in dict(base.get("digests") or {}).items():
        snap.files[rel] = snapshot.Entry(str(kind), str(digest), None, 0)
    return snap, when


def _changes(
    root: Root, incident: dict[str, Any], ctx: ErrorPipelineContext
) -> tuple[list[str], list[str], list[str], str | None]:
    """Since the claim: (changed targets, changed files outside the targets, those of them
    that could not be reverted, claimed_at). Changes outside the targets are reverted:
    changed and deleted files get their old bytes back, created files are removed."""
    workdir = _workdir(root, incident)
    before, claimed_at = _before(root, incident, ctx)
    if before is None:
        return [], [], [], None
    if before.root != Path(os.path.realpath(workdir)):
        raise NotWaiting(f"the workdir of {ctx.workstream_id} moved since the claim")
    after = snapshot.take(workdir, _skip(root, workdir), _DIGESTS)
    prefix = _root_prefix(root, workdir)
    changed = [
        p
        for p in snapshot.changed_paths(before, after)
        if prefix is None or not (prefix == "" or p == prefix or p.startswith(prefix + "/"))
    ]
    wanted = {os.path.normpath(t) for t in ctx.target_files}
    outside = [p for p in changed if p not in wanted]
    _, unreverted = snapshot.restore(before, outside)
    snapshot.remove_new_dirs(before, after)
    return [p for p in changed if p in wanted], outside, unreverted, claimed_at


def submit(
    root: Root,
    incident_id: str,
    notes: str,
    *,
    agent: str | None = None,
    clock: Clock = time.time,
) -> AIAttempt:
    """Hand the incident back: record the agent's attempt and release its lease."""
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
        folder, incident, ctx = _waiting(root, incident_id)  # again, under the lock
        changed, outside, unreverted, claimed_at = _changes(root, incident, ctx)
        tier = ctx.handoff_agent or "none"
        text = notes.strip()
        if outside:
            text += f"\nchanged outside the targets (not accepted, reverted): {', '.join(outside)}"
        if unreverted:
            text += f"\nnot reverted: {', '.join(unreverted)}"
        attempt = AIAttempt(
            attempt_number=TIER_NUMBER.get(tier, 1),
            agent=tier,
            input_error_report_id=f"error_report_attempt_{(ctx.report_labels or ['0'])[-1]}",
            changed_files=changed,
            notes=f"{lease.agent}: {text}".strip(),
            started_at=datetime.fromisoformat(claimed_at) if claimed_at else None,
            finished_at=datetime.fromtimestamp(now, UTC),
            violations=outside,
            prompt_file=str(_prompt_file(root, incident_id, ctx)),
            handoff=True,
            step=ctx.step,
        )
        if not ctx.submit_handoff(attempt):
            raise NotWaiting(f"incident {incident_id} is not waiting for {tier}")
        fsutil.atomic_write_json(folder / STATE_FILE, ctx.model_dump(mode="json"))
        fsutil.atomic_write_json(
            root.runs_dir(incident_id) / "ai_attempts.json",
            [a.model_dump(mode="json") for a in ctx.ai_attempts],
        )
    leases.release(root, lease)
    shutil.rmtree(_snapshot_dir(root, incident_id, attempt.step or 0), ignore_errors=True)
    _sync(root, incident_id, ctx)
    _events(
        root,
        [
            (incident_id, "submitted", {"agent": lease.agent, "changed_files": changed}),
            (incident_id, "ai_attempt", attempt.model_dump(mode="json")),
        ],
    )
    return attempt


# --- a skill's attempt_XX.json ------------------------------------------------------------


def record_attempt(root: Root, incident_id: str, path: Path) -> Path:
    """Validate a skill's attempt document and store it as `attempt_XX.json` (once): for
    an open incident, and for the next free iteration or one it recorded already."""
    where, _ = root.locate(validate_id(incident_id))
    if where != "inbox":
        raise AlreadyArchived(f"incident {incident_id} is closed ({where}); its attempts are final")
    try:
        doc = fsutil.read_json_object(path)
    except FileNotFoundError:
        raise UsageError(f"attempt --file {path}: no such file") from None
    try:
        attempt = Attempt.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise InvalidDocument(str(path), err["msg"], field) from exc
    if attempt.incident_id != incident_id:
        raise InvalidDocument(str(path), f"is for {attempt.incident_id}, not {incident_id}")
    runs = root.runs_dir(incident_id)
    target = attempts.path_for(runs, attempt.iteration)
    data = attempt.model_dump(mode="json")
    with store.incident_lock(root, incident_id):
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
                f"{path}: iteration {attempt.iteration} skips ahead for {incident_id}; "
                f"the next free iteration is {free}"
            )
        fsutil.ensure_dir(target.parent)
        fsutil.atomic_write_json(target, data)
    try:
        conn = mirror.connect(root.db_path)
        try:
            with mirror.write(conn):
                mirror.record_step_attempt(
                    conn, str(doc.get("run_id", "")), incident_id, "attempt", target.stem,
                    result=data, started_at=data["started_at"], finished_at=data["finished_at"],
                )  # fmt: skip
                mirror.add_event(
                    conn, incident_id, "attempt_recorded", {"file": target.name, **data}
                )
        finally:
            conn.close()
    except Exception as exc:  # the mirror is derivable: reindex rebuilds the row
        store.warn_mirror(exc)
    return target


# --- human decisions ----------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    incident_id: str
    decision: str  # "requeue" or "resolved"
    guidance: str
    location: str


def read_decisions(folder: Path) -> list[dict[str, Any]]:
    try:
        doc = fsutil.read_json(folder / DECISIONS_FILE)
    except FileNotFoundError:
        return []
    return [d for d in doc if isinstance(d, dict)] if isinstance(doc, list) else []


def read_guidance(folder: Path) -> str | None:
    """The latest human guidance given when the incident was requeued (for the prompt)."""
    try:
        decisions = read_decisions(folder)
    except IncidentsError:
        return None
    for decision in reversed(decisions):
        if decision.get("decision") == "requeue" and isinstance(decision.get("guidance"), str):
            return str(decision["guidance"])
    return None


def _requeued_context(ctx: ErrorPipelineContext) -> ErrorPipelineContext:
    """Back to S_INIT for another climb; history kept (steps, report labels, attempts and
    the artifacts keyed by them continue, never overwritten), per-climb counters reset."""
    return ctx.model_copy(
        update={
            "current_state": State.S_INIT,
            # a human requeued it: check it again even if it was never-retry
            "failure_class": (
                FailureClass.UNKNOWN
                if ctx.failure_class is FailureClass.NEVER_RETRY
                else ctx.failure_class
            ),
            "pending": None,
            "planned": True,  # the plan and original_scripts/ of the first climb stand
            "current_agent": "none",
            "attempt_number": 0,
            "agent_attempt_counts": {},
            "transient_retries": 0,
            "not_before": None,
            "waiting_for_input": False,
            "handoff_agent": None,
            "fixer_failure": None,
            "signature_attempts_used": 0,
            "final_status": None,
            "escalation_kind": None,
            "escalation_reason": None,
            "quarantine_path": None,
        }
    )


def resolve_escalation(
    root: Root, incident_id: str, guidance: str, *, requeue: bool, by: str = "human"
) -> Decision:
    """Record a human's decision on an escalated incident (see the module docstring)."""
    if not guidance.strip():
        raise UsageError("resolve-escalation: --guidance is required")
    guidance = guidance.strip()
    with store.incident_lock(root, validate_id(incident_id)):
        where, folder = root.locate(incident_id)
        if where != "escalated":
            raise NotWaiting(f"incident {incident_id} is not escalated (it is in {where})")
        incident = store.read_incident(folder)
        ctx = _context(folder)
        kind = "requeue" if requeue else "resolved"
        now = datetime.now(UTC).isoformat()
        decisions = read_decisions(folder)
        last = decisions[-1] if decisions else {}
        if (last.get("decision"), last.get("guidance")) == (kind, guidance) and _after(
            last.get("at"), _escalated_at(folder)
        ):
            # a re-run after a crash: finish that decision, with its time (the mirror's
            # budget reset and the one reindex rebuilds from decisions.json agree)
            now = str(last.get("at") or now)
        else:
            decisions.append(
                {
                    "at": now, "decision": kind, "guidance": guidance, "by": by,
                    "escalation_reason": incident.get("resolution"),
                    "signature": incident["error_signature"],
                }
            )  # fmt: skip
            fsutil.atomic_write_json(folder / DECISIONS_FILE, decisions)
        runs = root.runs_dir(incident_id)
        result_path = runs / "run_result.json"
        if requeue:
            if ctx is not None:
                fsutil.atomic_write_json(
                    folder / STATE_FILE, _requeued_context(ctx).model_dump(mode="json")
                )
            if result_path.exists():  # the next close writes its own; this one is history
                n = sum(1 for p in runs.glob("run_result.*.json")) + 1
                os.replace(result_path, runs / f"run_result.{n}.json")
            doc = {k: v for k, v in incident.items() if k != "resolution"}
            store.set_status(folder, doc, "new")
            target = root.inbox / incident_id
        else:
            reason = f"resolved by {by}: {guidance}"
            store.set_status(folder, incident, "resolved", resolution=reason)
            if result_path.exists():
                result = fsutil.read_json_object(result_path)
                if result.get("final_status") != "resolved":
                    os.replace(result_path, runs / "run_result.escalated.json")
                    fsutil.atomic_write_json(
                        result_path,
                        {**result, "final_status": "resolved", "reason": reason,
                         "archived_to": f"error_archive/resolved/{incident_id}",
                         "finished_at": now},
                    )  # fmt: skip
            target = root.bucket("resolved") / incident_id
        _move(folder, target)
    _record_decision(root, incident_id, incident["error_signature"], guidance, kind, now)
    return Decision(incident_id, kind, guidance, str(target.relative_to(root.path)))


def _escalated_at(folder: Path) -> datetime | None:
    """When the incident was last escalated (its quarantine bundle's `metadata.json`)."""
    try:
        when = fsutil.read_json_object(folder / "metadata.json").get("finished_at")
        return datetime.fromisoformat(when) if isinstance(when, str) else None
    except (IncidentsError, OSError, ValueError):
        return None


def _after(at: Any, escalated_at: datetime | None) -> bool:
    """Whether a decision taken `at` was taken on the current escalation (then running the
    same decision again finishes it instead of recording a second one)."""
    try:
        when = datetime.fromisoformat(at) if isinstance(at, str) else None
    except ValueError:
        return False
    try:
        return when is not None and (escalated_at is None or when >= escalated_at)
    except TypeError:  # a naive timestamp: not ours
        return False


def _move(src: Path, dst: Path) -> None:
    """One rename on one filesystem, never over an existing folder (invariant I1)."""
    if dst.exists() or dst.is_symlink():
        raise IncidentsError(f"{dst} already exists; not moving {src} over it")
    os.rename(src, dst)
    fsutil.fsync_dir(src.parent)
    fsutil.fsync_dir(dst.parent)


def _record_decision(
    root: Root, incident_id: str, signature: str, guidance: str, kind: str, now: str
) -> None:
    try:
        conn = mirror.connect(root.db_path)
    except Exception as exc:
        store.warn_mirror(exc)
        return
    try:
        with mirror.write(conn):
            mirror.resolve_escalation(conn, incident_id, signature, guidance, now)
            mirror.refresh(conn, root, incident_id)
            mirror.add_event(
                conn, incident_id, "escalation_resolved", {"decision": kind, "guidance": guidance}
            )
            if kind == "requeue":
                mirror.add_event(conn, incident_id, "requeued", {"guidance": guidance})
    finally:
        conn.close()


# --- the mirror ---------------------------------------------------------------------------


def _sync(root: Root, incident_id: str, ctx: ErrorPipelineContext) -> None:
    try:
        conn = mirror.connect(root.db_path)
        try:
            with mirror.write(conn):
                mirror.save_workstream(
                    conn, ctx.run_id, incident_id, ctx.current_state.value, ctx.model_dump_json()
                )
                mirror.refresh(conn, root, incident_id)
        finally:
            conn.close()
    except Exception as exc:
        store.warn_mirror(exc)


def _events(root: Root, events: list[tuple[str, str, dict[str, Any]]]) -> None:
    try:
        conn = mirror.connect(root.db_path)
        try:
            with mirror.write(conn):
                for incident_id, event, payload in events:
                    mirror.add_event(conn, incident_id, event, payload)
                for incident_id in dict.fromkeys(e[0] for e in events):
                    mirror.refresh(conn, root, incident_id)  # who holds it (lease_owner)
        finally:
            conn.close()
    except Exception as exc:
        store.warn_mirror(exc)


__all__ = [
    "Decision",
    "NotWaiting",
    "claim",
    "next_incident",
    "parse_ttl",
    "read_guidance",
    "record_attempt",
    "resolve_escalation",
    "submit",
    "work_item",
]
