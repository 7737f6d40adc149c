"""The close sequence: how an incident leaves the inbox, and how a human sends it back.

Closing is `run_result.json`, then the status, then one rename into the archive bucket,
each part idempotent so a close done again after a crash finishes what is left. A close
that no terminal `state.json` stands behind (`incidents archive`) writes its intent to
`.state/pending/` first, and `complete_pending` finishes it; every command completes
pending closes before it starts.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from incidents import artifacts, fsutil, grouping, notify, store
from incidents.clock import iso_at
from incidents.errors import AlreadyArchived, IncidentsError
from incidents.layout import BUCKETS, Root, validate_id
from incidents.models import RunResult
from incidents.redact import redact
from incidents.vocab import Outcome


def _pending_dir(root: Root) -> Path:
    path = root.state / "pending"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def archive(
    root: Root,
    incident_id: str,
    bucket: str,
    reason: str,
    run_result: RunResult | None = None,
    *,
    journal: bool = True,
) -> Path:
    """Close an inbox incident into `resolved` or `escalated`: status, run_result.json, rename.

    The close's intent goes to `.state/pending/` first, so `complete_pending` finishes a close
    a crash interrupted. `journal=False` is for a caller whose own record already says how to
    close (the step service: a terminal `state.json` closes the incident again when it is
    picked up), and saves a file written and deleted per incident.
    """
    if bucket not in ("resolved", "escalated"):
        raise ValueError(bucket)
    validate_id(incident_id)
    reason = redact(reason)  # a human's text: it reaches run_result.json, decisions, the mirror
    with store.incident_lock(root, incident_id):
        where, folder = root.locate(incident_id)
        if where != "inbox":
            raise AlreadyArchived(f"incident {incident_id} is already archived in {BUCKETS[where]}")
        doc = store.read_incident(folder)
        if journal:
            fsutil.atomic_write_json(
                _pending_dir(root) / incident_id,
                {
                    "bucket": bucket,
                    "reason": reason,
                    "run_result": run_result.model_dump(mode="json") if run_result else None,
                },
            )
        return _close(root, incident_id, folder, doc, bucket, reason, run_result)


def _close(
    root: Root,
    incident_id: str,
    folder: Path,
    doc: dict[str, Any],
    bucket: str,
    reason: str,
    run_result: RunResult | None,
) -> Path:
    """The close after its intent (if any): run_result.json, the status, the move. Done
    again after a crash, it finishes what is left (every part is idempotent)."""
    # run_result.json first: its folder's fsync makes the incident's run artifacts
    # durable before the folder whose state.json refers to them
    runs = root.runs_dir(incident_id)
    fsutil.ensure_dir(runs)
    for directory in (runs, folder):  # temp files of a writer killed mid-close
        fsutil.remove_orphan_temps(directory)
    result_path = runs / artifacts.RUN_RESULT
    if not result_path.exists():
        result = run_result or default_run_result(incident_id, doc, bucket, reason)
        fsutil.atomic_write_bytes(result_path, fsutil.dump_model(result))
    else:  # a close done again: what else is in the folder is durable all the same
        fsutil.fsync_dir(runs)
    store.repair_status_txt(folder, doc["status"])  # killed between incident.json and status.txt
    if doc["status"] != bucket or doc.get("resolution") != reason:
        store.set_status(folder, doc, bucket, resolution=reason)  # fsyncs the folder
    else:
        fsutil.fsync_dir(folder)  # what was written in it is durable before it moves
    if bucket != "resolved":  # a person is told (the outbox; delivered by the watcher).
        # Before the move: a close killed after it is not redone, and its alert would be lost
        notify.escalated(root, doc, grouping.group_of(doc))
    store.move(folder, root.bucket(bucket) / incident_id)
    if bucket == "resolved":  # the group's latest resolved incident (regressions)
        grouping.note_resolved(root, doc)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(root.state / "pending" / incident_id)
    return root.bucket(bucket) / incident_id


def default_run_result(
    incident_id: str, doc: dict[str, Any], bucket: str, reason: str
) -> RunResult:
    """The run result of a close the escalation machine did not decide."""
    from datetime import datetime

    now = time.time()
    try:
        created = datetime.fromisoformat(doc["created_at"]).timestamp()
        minutes = max(0.0, round((now - created) / 60, 2))
    except (ValueError, TypeError):
        minutes = 0.0
    return RunResult.model_validate(
        {
            "incident_id": incident_id,
            "final_status": bucket,
            "loops_used": 0,
            "runtime_minutes": minutes,
            "same_error_repeats": 0,
            "archived_to": f"{BUCKETS[bucket]}/{incident_id}",
            "reason": reason,
            "finished_at": iso_at(now),
            "closed_by": grouping.who(),
        }
    )


def complete_pending(root: Root) -> list[str]:
    """Finish closes that a crash interrupted (their intent is in `.state/pending/`)."""
    done: list[str] = []
    pending = root.state / "pending"
    if not pending.is_dir():
        return done
    fsutil.remove_orphan_temps(pending)  # an intent whose writer was killed mid-write
    for entry in sorted(os.listdir(pending)):
        if entry.startswith("."):
            continue  # a temp file of an interrupted intent write
        try:
            intent = fsutil.read_json_object(pending / entry)
            bucket, reason = str(intent["bucket"]), str(intent["reason"])
            result = intent.get("run_result")
            with store.incident_lock(root, entry):
                folder = root.inbox / entry
                if folder.is_dir():
                    _close(
                        root, entry, folder, store.read_incident(folder), bucket, reason,
                        RunResult.model_validate(result) if isinstance(result, dict) else None,
                    )  # fmt: skip
                else:
                    (pending / entry).unlink(missing_ok=True)
            done.append(entry)
        except (IncidentsError, KeyError, OSError, ValidationError):
            continue  # left for doctor to report; never guessed at
    return done


# --- a human's decision on an escalated incident (the caller holds the incident lock) ---


def reopen(root: Root, folder: Path) -> Path:
    """Back to the inbox: the last run result becomes history (the next close writes its
    own), the status `new`. The caller committed the requeued context first."""
    incident = store.read_incident(folder)
    incident_id = folder.name
    runs = root.runs_dir(incident_id)
    result_path = runs / artifacts.RUN_RESULT
    if result_path.exists():
        n = sum(1 for _ in runs.glob("run_result.*.json")) + 1
        os.replace(result_path, runs / f"run_result.{n}.json")
    doc = {k: v for k, v in incident.items() if k != "resolution"}
    store.set_status(folder, doc, "new")
    target = root.inbox / incident_id
    store.move(folder, target)
    return target


def resolve_escalated(root: Root, folder: Path, reason: str, now: str) -> Path:
    """Into `resolved` with a human's reason; the escalation's run result is kept beside
    the resolved one."""
    incident = store.read_incident(folder)
    incident_id = folder.name
    runs = root.runs_dir(incident_id)
    result_path = runs / artifacts.RUN_RESULT
    store.set_status(folder, incident, "resolved", resolution=reason)
    if result_path.exists():
        result = fsutil.read_json_object(result_path)
        if result.get("final_status") != "resolved":
            os.replace(result_path, runs / "run_result.escalated.json")
            fsutil.atomic_write_json(
                result_path,
                {**result, "final_status": "resolved", "reason": reason,
                 "archived_to": f"{BUCKETS['resolved']}/{incident_id}", "finished_at": now,
                 # not "escalated" beside "resolved": a person closed it, not the machine
                 "outcome": str(Outcome.RESOLVED_BY_HUMAN),
                 # a person's decision: no check found it clean (the escalation's verdict
                 # stays in run_result.escalated.json)
                 "verdict": None},
            )  # fmt: skip
    target = root.bucket("resolved") / incident_id
    store.move(folder, target)
    grouping.note_resolved(root, incident)
    return target
