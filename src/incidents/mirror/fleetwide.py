"""What a fleet decides together, in the mirror: the global pause and the human decisions
routed to the host that holds the bundle (`incidents.fleet` drives them).

On SQLite (one root) the tables exist too and stay empty: nothing is routed anywhere.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from incidents import clock
from incidents.mirror.db import dumps, translating
from incidents.mirror.dialect import here
from incidents.mirror.queries import where

__all__ = [
    "Routed",
    "SharedPause",
    "active_pause",
    "claimed",
    "counted_elsewhere",
    "holder",
    "mark_applied",
    "pause_since",
    "pending",
    "publish_pause",
    "queue_decision",
    "resume_all",
]


@dataclass(frozen=True, slots=True)
class SharedPause:
    id: int
    reason: str
    since: float
    by: str
    host: str
    resumed_at: str | None


_SELECT_PAUSE = "SELECT id, reason, since, by_whom, host, resumed_at FROM fleet_pause"


def _pause(row: Any) -> SharedPause:
    return SharedPause(int(row[0]), str(row[1]), float(row[2]), str(row[3]), str(row[4]),
                       None if row[5] is None else str(row[5]))  # fmt: skip


@translating
def active_pause(conn: sqlite3.Connection) -> SharedPause | None:
    """The global pause standing now (the oldest, when several hosts paused at once)."""
    row = conn.execute(f"{_SELECT_PAUSE} WHERE resumed_at IS NULL ORDER BY id").fetchone()
    return _pause(row) if row else None


@translating
def pause_since(conn: sqlite3.Connection, since: float) -> SharedPause | None:
    """The newest pause, standing or resumed, published at or after `since` (a local pause
    flag that has one was published: it is not published twice)."""
    row = conn.execute(
        f"{_SELECT_PAUSE} WHERE since >= ? ORDER BY id DESC", (since - 0.001,)
    ).fetchone()
    return _pause(row) if row else None


@translating
def publish_pause(conn: sqlite3.Connection, reason: str, since: float, by: str) -> None:
    """Pause the fleet (unless a pause stands already)."""
    if active_pause(conn) is None:
        conn.execute(
            "INSERT INTO fleet_pause (reason, since, by_whom, host) VALUES (?, ?, ?, ?)",
            (reason, since, by, where(conn)[0]),
        )


@translating
def resume_all(conn: sqlite3.Connection, before: float | None = None) -> int:
    """A resume on any host lifts the fleet's pause; how many pause rows it closed.
    `before` (epoch seconds): only the pauses published before it (a resume that waited)."""
    sql = "UPDATE fleet_pause SET resumed_at = ? WHERE resumed_at IS NULL"
    params: tuple[object, ...] = (clock.iso_precise(),)
    if before is not None:
        sql, params = f"{sql} AND since <= ?", (*params, before)
    return int(conn.execute(sql, params).rowcount)


@dataclass(frozen=True, slots=True)
class Routed:
    """A decision addressed to the host holding the bundle."""

    id: int
    incident_id: str
    kind: str  # "resolve-escalation" or "archive"
    args: dict[str, Any]
    decided_at: str
    decided_by: str  # the host where it was made


@translating
def holder(conn: sqlite3.Connection, incident_id: str) -> tuple[str, str] | None:
    """(host, bucket) of the incident's row, whichever host holds it."""
    row = conn.execute(
        "SELECT host, bucket FROM incidents WHERE incident_id = ?", (incident_id,)
    ).fetchone()
    return (str(row[0]), str(row[1])) if row else None


@translating
def counted_elsewhere(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """This host's new incidents (in the inbox, never started) whose group has an older
    open incident on another host: (incident, group, that host, that incident). Older:
    so that two hosts never count each other's at once; the group's oldest open one stays."""
    return [
        (str(a), str(g), str(h), str(b))
        for a, g, h, b in conn.execute(
            "SELECT mine.incident_id, mine.group_key, other.host, other.incident_id "
            "FROM incidents AS mine JOIN incidents AS other ON other.group_key = mine.group_key "
            "AND other.bucket = 'inbox' AND other.host != mine.host "
            "AND (other.created_at, other.incident_id) < (mine.created_at, mine.incident_id) "
            f"WHERE mine.bucket = 'inbox' AND mine.state IS NULL AND {here(conn, 'mine')} "
            "ORDER BY mine.incident_id, other.created_at, other.incident_id"
        ).fetchall()
    ]


@translating
def queue_decision(
    conn: sqlite3.Connection, host: str, incident_id: str, kind: str, args: dict[str, Any]
) -> int:
    """Address a decision to `host`; its id."""
    cur = conn.execute(
        "INSERT INTO decisions (host, incident_id, kind, args_json, decided_at, decided_by) "
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        (host, incident_id, kind, dumps(args), clock.iso_precise(), where(conn)[0]),
    )
    row = cur.fetchone()
    return int(row[0]) if row else 0


@translating
def pending(conn: sqlite3.Connection) -> list[Routed]:
    """The decisions addressed to this connection's host not applied yet, oldest first."""
    return [
        Routed(int(i), str(inc), str(k), json.loads(a), str(at), str(by))
        for i, inc, k, a, at, by in conn.execute(
            "SELECT id, incident_id, kind, args_json, decided_at, decided_by FROM decisions "
            "WHERE host = ? AND applied_at IS NULL ORDER BY id",
            (where(conn)[0],),
        ).fetchall()
    ]


@contextmanager
def claimed(conn: sqlite3.Connection, decision_id: int) -> Iterator[bool]:
    """In a transaction, the decision's row locked for the caller to apply it and
    `mark_applied` (committed together): True when it is still pending and no other pass
    of this host (watchers of one shared root, one host name) holds it, which then skips
    it (PostgreSQL only: `FOR UPDATE SKIP LOCKED`). An exception rolls back: pending again."""
    conn.execute("BEGIN")
    try:
        row = conn.execute(
            "SELECT applied_at FROM decisions WHERE id = ? FOR UPDATE SKIP LOCKED",
            (decision_id,),
        ).fetchone()
        yield row is not None and row[0] is None
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@translating
def mark_applied(conn: sqlite3.Connection, decision_id: int, outcome: str) -> None:
    conn.execute(
        "UPDATE decisions SET applied_at = ?, outcome = ? WHERE id = ? AND applied_at IS NULL",
        (clock.iso_precise(), outcome, decision_id),
    )
