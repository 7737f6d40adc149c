"""What `incidents serve` reads from the mirror: pages of incident rows with their total,
counts for the dashboard, escalations by run, and the event feed (events in commit order).

The event feed is the `events` table read by row id: rows are appended in commit order
(SQLite has one writer at a time) and an id is never given twice (AUTOINCREMENT: the ids
of events deleted with an incident set aside are not reused), so "every event after id N"
is exactly what a client that has seen N has missed. A rebuild (`reindex`) numbers the rows again; `generation`
(the rebuild's mark) tells a reader that ids it holds belong to an older numbering.

On a fleet's shared PostgreSQL mirror the feed is every host's events and the rows are
every host's (each names its host; `page_incidents` can keep to one). Ids there come from
a sequence: hosts write at once, so an event may commit after one with a higher id, and a
poller past that id misses it (it still shows in the incident's events and the lists).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from incidents.mirror.budget import Escalation
from incidents.mirror.db import DERIVED, translating
from incidents.mirror.dialect import SQLITE, dialect_of, here
from incidents.mirror.fleet import host_of
from incidents.mirror.queries import (
    _INCIDENT_COLUMNS,
    IncidentRow,
    _row,
    incident_filter,
    where,
)

__all__ = [
    "EscalationRecord",
    "FeedEvent",
    "data_version",
    "escalation",
    "events_after",
    "generation",
    "held_row",
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
    anything change?" for a poller). PostgreSQL has none: the last event's id there (event
    ids are never given again, and the poller asks for nothing else)."""
    if dialect_of(conn) != SQLITE:
        return tail_id(conn)
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


@translating
def generation(conn: sqlite3.Connection) -> str:
    """The mark of the last rebuild ("" before any): event ids hold within one generation.
    On a fleet's shared mirror: this host's last `reindex` (it gave its events new ids)."""
    row = conn.execute(
        f"SELECT value FROM meta WHERE key = ? AND {here(conn)}", (DERIVED,)
    ).fetchone()
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


def _hosts(conn: sqlite3.Connection, host: str | None, all_hosts: bool) -> tuple[str, list[Any]]:
    """The condition keeping the rows of host `host` (None: of every host, or of this
    host's root only when not `all_hosts`). On SQLite every row is this host's."""
    if host is None:
        return ("1 = 1" if all_hosts else here(conn)), []
    if dialect_of(conn) == SQLITE:
        return ("1 = 1" if host == where(conn)[0] else "1 = 0"), []
    return "host = ?", [host]


_SELECT_HELD = f"SELECT {', '.join(_INCIDENT_COLUMNS)}, host FROM incidents"


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
    host: str | None = None,
    all_hosts: bool = True,
    hosts: dict[str, str] | None = None,
) -> tuple[list[IncidentRow], int]:
    """A page of `list_incidents`' answer (newest first) and how many rows match in all:
    of every host sharing the mirror (`all_hosts`, the default), of this host's root, or
    of host `host` only. `hosts`: a dict to fill with each row's host (id -> host)."""
    cond, params = incident_filter(buckets, status, step, since)
    on_host, more = _hosts(conn, host, all_hosts)
    cond, params = f"{cond} AND {on_host}", [*params, *more]
    total = int(conn.execute(f"SELECT count(*) FROM incidents WHERE {cond}", params).fetchone()[0])
    found = conn.execute(
        f"{_SELECT_HELD} WHERE {cond} ORDER BY created_at DESC, incident_id DESC "
        "LIMIT ? OFFSET ?",
        [*params, int(limit), int(offset)],
    ).fetchall()
    rows = [_row(r[:-1]) for r in found]
    if hosts is not None:
        hosts.update(
            (row.incident_id, host_of(conn, r[-1])) for row, r in zip(rows, found, strict=True)
        )
    return rows, total


@translating
def held_row(conn: sqlite3.Connection, incident_id: str) -> tuple[IncidentRow, str] | None:
    """The incident's row and the host holding its bundle, whichever host that is."""
    found = conn.execute(f"{_SELECT_HELD} WHERE incident_id = ?", (incident_id,)).fetchone()
    return None if found is None else (_row(found[:-1]), host_of(conn, found[-1]))


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
