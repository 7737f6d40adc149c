"""An executor's failures in a reports root (`ExecutorConfig(root=...)`).

A failed attempt is captured as `incidents capture --step TASK_ID` would take it, so it is
grouped, budgeted and seen like any failure; the incident's id is remembered in the state
file (`executor_meta` key `open:<task_id>`, a JSON list). A later success of the same task
means the loop fixed it: each incident remembered for the task that is still in the inbox
is closed as resolved, outcome `not_reproduced`, through the same close as
`incidents archive --resolved` (run_result.json, status, move, mirror), so the escalation
ladder never picks it up as "unverifiable" and it never counts toward the root's pause.
An incident whose lease another process holds (a watcher working on it) is left open and
remembered: the task's next success tries again.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from incidents import executor_db
from incidents.capture_config import read_settings
from incidents.layout import Root
from incidents.vocab import ErrorCode

OPEN = "open:"


def capture(
    root: Root,
    state_file: Path,
    task_id: str,
    attempt_id: int,
    code: ErrorCode,
    error: str | None,
    output: str | None,
    duration: float,
) -> str:
    """The failure into the root, as `incidents capture --step TASK_ID` would take it."""
    from incidents import capture as capturing

    cfg = read_settings(None)
    inp = capturing.CaptureInput(
        step=task_id,
        message=(error or "").strip() or f"task {task_id} failed ({code.value})",
        error_code=code.value,
        log_text=output or "",
        context={"executor": {"state_file": str(state_file), "task_id": task_id,
                              "attempt_id": attempt_id, "duration_s": duration}},
        dedupe=bool(cfg.table["dedupe"]),
    )  # fmt: skip
    result = capturing.capture(
        root, inp, cfg.table["max_message_chars"], cfg.table["regression_window_days"]
    )
    return result.incident_id


def remembered(conn: sqlite3.Connection, task_id: str) -> list[str]:
    row = conn.execute("SELECT value FROM executor_meta WHERE key = ?", (OPEN + task_id,))
    found = row.fetchone()
    try:
        ids = json.loads(found[0]) if found is not None else []
    except ValueError:
        return []
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def remember(conn: sqlite3.Connection, task_id: str, ids: list[str]) -> None:
    """Inside the caller's transaction: the task's open incidents (none: the key goes)."""
    if not ids:
        conn.execute("DELETE FROM executor_meta WHERE key = ?", (OPEN + task_id,))
        return
    conn.execute(
        "INSERT INTO executor_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (OPEN + task_id, json.dumps(sorted(set(ids)))),
    )


def note_open(conn: sqlite3.Connection, task_id: str, incident_id: str) -> None:
    with executor_db.immediate(conn):
        remember(conn, task_id, [*remembered(conn, task_id), incident_id])


def close_fixed(
    conn: sqlite3.Connection, root: Root, state_file: Path, task_id: str, attempt_id: int
) -> list[str]:
    """After the task succeeded: close its open incidents as fixed by the loop. Returns
    the ids closed."""
    ids = remembered(conn, task_id)
    if not ids:
        return []
    reason = (
        f"task {task_id} succeeded on a later attempt ({state_file.name}, attempt "
        f"{attempt_id}): fixed by the loop, not reproduced"
    )
    closed, kept = [], []
    for incident_id in ids:
        outcome = _close(root, incident_id, reason)
        if outcome == "closed":
            closed.append(incident_id)
        elif outcome == "busy":
            kept.append(incident_id)
    with executor_db.immediate(conn):  # ids remembered since by another process stay
        now = remembered(conn, task_id)
        remember(conn, task_id, [i for i in now if i not in ids or i in kept])
    return closed


def _close(root: Root, incident_id: str, reason: str) -> str:
    """ "closed", "gone" (archived already, or no such incident) or "busy" (leased)."""
    from incidents import leases, store
    from incidents.errors import AlreadyArchived, NotFound
    from incidents.step import close as closing
    from incidents.vocab import Outcome

    try:
        where, folder = root.locate(incident_id)
    except NotFound:
        return "gone"
    if where != "inbox":
        return "gone"
    lease = leases.acquire(root, incident_id, leases.new_owner("executor"), 60.0)
    if lease is None:
        return "busy"
    try:
        doc = store.read_incident(folder)
        result = closing.default_run_result(incident_id, doc, "resolved", reason)
        result = result.model_copy(update={"outcome": Outcome.NOT_REPRODUCED})
        target = closing.archive(root, incident_id, "resolved", reason, result)
    except (AlreadyArchived, NotFound):
        return "gone"
    finally:
        leases.release(root, lease, closed=True)
    payload = {"bucket": "resolved", "by": "executor", "outcome": Outcome.NOT_REPRODUCED.value}
    store.mirror_bundle(root, "resolved", target, "archived", payload)
    return "closed"
