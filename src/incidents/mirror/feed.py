"""What `incidents serve` reads from the mirror: pages of incident rows with their total,
counts for the dashboard, escalations by run, and the event feed (events in commit order).

The event feed is the `events` table read by row id: rows are appended in commit order
(SQLite has one writer at a time) and an id is never given twice (AUTOINCREMENT: the ids
of events deleted with an incident set aside are not reused), so "every event after id N"
is exactly what a client that has seen N has missed. A rebuild (`reindex`) numbers the rows again; `generation`
(the rebuild's mark) tells a reader that ids it holds belong to an older numbering.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from incidents.mirror.budget import Escalation
from incidents.mirror.db import DERIVED, translating
from incidents.mirror.queries import _SELECT_INCIDENT, IncidentRow, _row, incident_filter

__all__ = [
    "EscalationRecord",
    "FeedEvent",
    "data_version",
    "escalation",
    "events_after",
    "generation",
    "incident_counts",
    "incident_events",
    "page_incidents",
    "run_escalations",
    "tail_id",
]


@dataclass(frozen=True, slots=True)
class FeedEvent:
    """One row of `events`: its id (commit order), time, incident (None: the root's), type
    and payload (redacted when it was written)."""

    id: int
    ts: str
    incident_id: str | None
    event_type: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EscalationRecord(Escalation):
    """One escalation (open while `resolved_at` is None) with its incident's run, bucket and
    state now (None when the incident's row is gone)."""

    run_id: str | None
    bucket: str | None
    state: str | None


_EVENT_COLUMNS = "id, ts, incident_id, event_type, payload_json"
_ESCALATION_SELECT = (
    "SELECT e.id, e.ts, e.incident_id, e.signature, e.reason, e.resolved_at, e.guidance, "
    "i.run_id, i.bucket, i.state FROM escalations e LEFT JOIN incidents i USING (incident_id)"
)


def _event(row: Sequence[Any]) -> FeedEvent:
    payload = json.loads(row[4])
    return FeedEvent(int(row[0]), str(row[1]), row[2], str(row[3]), payload)


def _escalation(row: Sequence[Any]) -> EscalationRecord:
    return EscalationRecord(*row)


@translating
def data_version(conn: sqlite3.Connection) -> int:
    """SQLite's `data_version`: it changes when another connection commits (a cheap "did
    anything change?" for a poller)."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


@translating
def generation(conn: sqlite3.Connection) -> str:
    """The mark of the last rebuild ("" before any): event ids hold within one generation."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (DERIVED,)).fetchone()
    return str(row[0]) if row else ""


@translating
def tail_id(conn: sqlite3.Connection) -> int:
    """The id of the last event committed (0: none)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0])


@translating
def events_after(conn: sqlite3.Connection, after: int, limit: int = 1000) -> list[FeedEvent]:
    """The events committed after event `after`, oldest first, at most `limit`."""
    rows = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM events WHERE id > ? ORDER BY id LIMIT ?",
        (int(after), int(limit)),
    )
    return [_event(r) for r in rows]


@translating
def incident_events(
    conn: sqlite3.Connection, incident_id: str, limit: int = 500
) -> list[FeedEvent]:
    """One incident's last `limit` events, oldest first."""
    rows = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM events WHERE incident_id = ? ORDER BY id DESC LIMIT ?",
        (incident_id, int(limit)),
    ).fetchall()
    return [_event(r) for r in reversed(rows)]


@translating
def page_incidents(
    conn: sqlite3.Connection,
    *,
    buckets: Sequence[str],
    status: str | None = None,
    step: str | None = None,
    since: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[IncidentRow], int]:
    """A page of `list_incidents`' answer (newest first) and how many rows match in all."""
    cond, params = incident_filter(buckets, status, step, since)
    total = int(conn.execute(f"SELECT count(*) FROM incidents WHERE {cond}", params).fetchone()[0])
    rows = conn.execute(
        f"{_SELECT_INCIDENT} WHERE {cond} ORDER BY created_at DESC, incident_id DESC "
        "LIMIT ? OFFSET ?",
        [*params, int(limit), int(offset)],
    )
    return [_row(r) for r in rows], total


@translating
def incident_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Rows per bucket, the inbox's per status, and the inbox's waiting and claimed ones:
    `{"inbox": n, "resolved": n, "escalated": n, "inbox.new": n, ..., "waiting": n,
    "claimed": n, "open_escalations": n}`."""
    counts = {"inbox": 0, "resolved": 0, "escalated": 0}
    for bucket, status, n in conn.execute(
        "SELECT bucket, status, count(*) FROM incidents GROUP BY bucket, status"
    ):
        counts[bucket] = counts.get(bucket, 0) + int(n)
        if bucket == "inbox":
            counts[f"inbox.{status}"] = int(n)
    waiting, claimed = conn.execute(
        "SELECT coalesce(sum(waiting), 0), count(lease_owner) FROM incidents WHERE bucket = 'inbox'"
    ).fetchone()
    counts["waiting"], counts["claimed"] = int(waiting), int(claimed)
    counts["open_escalations"] = int(
        conn.execute("SELECT count(*) FROM escalations WHERE resolved_at IS NULL").fetchone()[0]
    )
    return counts


@translating
def run_escalations(conn: sqlite3.Connection, run_id: str) -> list[EscalationRecord] | None:
    """The escalations of the incidents of run `run_id`, oldest first; None: no such run."""
    if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
        return None
    rows = conn.execute(f"{_ESCALATION_SELECT} WHERE i.run_id = ? ORDER BY e.ts, e.id", (run_id,))
    return [_escalation(r) for r in rows]


@translating
def escalation(conn: sqlite3.Connection, escalation_id: int) -> EscalationRecord | None:
    row = conn.execute(f"{_ESCALATION_SELECT} WHERE e.id = ?", (int(escalation_id),)).fetchone()
    return _escalation(row) if row else None
