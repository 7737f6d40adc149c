"""Rows and bundle folders for the mirror's tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from incidents import mirror
from incidents.layout import Root
from incidents.mirror import IncidentRow, target


def incident_doc(incident_id: str, /, **overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "incident_id": incident_id,
        "status": "new",
        "created_at": "2026-02-17T03:00:00+00:00",
        "updated_at": "2026-02-17T03:00:00+00:00",
        "run_id": "run_20260217_115959_123456",
        "year": 2026,
        "month": 2,
        "ym": "2026-02",
        "step": "amazon_download",
        "failure_class": "transient",
        "message": "Network timeout during receipt download",
        "error_signature": "transient | amazon_download | Network timeout",
    }
    doc.update(overrides)
    return doc


def make_bundle(
    root: Root,
    bucket: str,
    incident_id: str,
    /,
    state: dict[str, Any] | None = None,
    **overrides: Any,
) -> Path:
    folder = root.bucket(bucket) / incident_id
    folder.mkdir(mode=0o700)
    doc = incident_doc(incident_id, **overrides)
    (folder / "incident.json").write_text(json.dumps(doc))
    (folder / "status.txt").write_text(f"{doc['status']}\n")
    (folder / "log_tail.txt").write_text("Traceback ...\n")
    if state is not None:
        (folder / "state.json").write_text(json.dumps(state))
    return folder


def a_row(incident_id: str = "inc_1", **overrides: Any) -> IncidentRow:
    values: dict[str, Any] = {
        "incident_id": incident_id,
        "status": "new",
        "state": None,
        "step": "download",
        "failure_class": "transient",
        "error_code": "TIMEOUT",
        "signature": "sig-a",
        "run_id": "run_1",
        "message": "timed out",
        "occurrences": 1,
        "created_at": "2026-02-17T03:00:00+00:00",
        "updated_at": "2026-02-17T03:00:00+00:00",
        "last_seen": "2026-02-17T03:00:00+00:00",
        "bucket": "inbox",
        "location": f"error_inbox/{incident_id}",
    }
    values.update(overrides)
    return IncidentRow(**values)


# every table of the mirror (on PostgreSQL, "deleting the mirror" empties them)
TABLES = ("incidents", "rejected", "runs", "workstreams", "step_attempts", "errors", "events",
          "escalations", "meta", "event_files")  # fmt: skip


def delete_db(db: Path) -> None:
    """Lose the mirror: its SQLite files, or every row of the PostgreSQL database the
    root is bound to (the test's own database)."""
    if target.target_of(db).url is not None:
        conn = mirror.connect(db)
        try:
            for table in TABLES:
                conn.execute(f"DELETE FROM {table}")
        finally:
            conn.close()
        return
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
