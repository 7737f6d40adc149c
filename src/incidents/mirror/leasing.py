"""Incident leases as rows of the mirror (`[watch] leases = "postgres"`): the statements
behind `incidents.leases` when a fleet's watchers share one inbox over a network
filesystem. The rules are the lease files' (acquire, renew, fence, release); the row lock
(`SELECT ... FOR UPDATE`) is the guard the lock file is on a local disk, and the server's
clock decides expiry for every host alike.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

__all__ = ["LeaseRow", "agents_holding", "delete", "guarded", "now", "read", "read_all", "store"]

# incident_id, owner, generation, expires_at, pid, host, agent
LeaseRow = tuple[str, str, int, float, int, str, str | None]
_COLUMNS = "incident_id, owner, generation, expires_at, pid, host, agent"


def _row(found: Any) -> LeaseRow:
    i, o, g, e, p, h, a = found
    return (str(i), str(o), int(g), float(e), int(p), str(h), None if a is None else str(a))


def now(conn: sqlite3.Connection) -> float:
    """The database's clock (epoch seconds): one clock for every host's leases."""
    row = conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
    return float(row[0]) if row else 0.0


def read(conn: sqlite3.Connection, incident_id: str, *, lock: bool = False) -> LeaseRow | None:
    sql = f"SELECT {_COLUMNS} FROM leases WHERE incident_id = ?"
    found = conn.execute(sql + (" FOR UPDATE" if lock else ""), (incident_id,)).fetchone()
    return _row(found) if found else None


def agents_holding(conn: sqlite3.Connection) -> dict[str, str]:
    """incident id -> the outside agent whose live lease row holds it (a skill's claim)."""
    return {
        str(i): str(a)
        for i, a in conn.execute(
            "SELECT incident_id, agent FROM leases WHERE agent IS NOT NULL AND generation > 0 "
            "AND expires_at > extract(epoch FROM clock_timestamp())"
        ).fetchall()
    }


def read_all(conn: sqlite3.Connection) -> list[LeaseRow]:
    return [_row(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM leases ORDER BY incident_id")]


@contextmanager
def guarded(
    conn: sqlite3.Connection,
    incident_id: str,
    transaction: Callable[[Any], AbstractContextManager[None]],
    *,
    create: bool = False,
) -> Iterator[Callable[[], LeaseRow | None]]:
    """In `transaction(conn)`, the incident's lease row locked; yields a reader of it.
    `create` (an acquire): a placeholder row of generation 0 is made first when there is
    none, so that two first acquires cannot both win."""
    with transaction(conn):
        if create:
            conn.execute(
                "INSERT INTO leases (incident_id, owner, generation, expires_at, pid, host) "
                "VALUES (?, '', 0, 0, 0, '') ON CONFLICT DO NOTHING",
                (incident_id,),
            )
        yield lambda: read(conn, incident_id, lock=True)


def store(conn: sqlite3.Connection, row: LeaseRow) -> None:
    conn.execute(
        "UPDATE leases SET owner = ?, generation = ?, expires_at = ?, pid = ?, host = ?, "
        "agent = ? WHERE incident_id = ?",
        (row[1], row[2], row[3], row[4], row[5], row[6], row[0]),
    )


def delete(conn: sqlite3.Connection, incident_id: str) -> None:
    conn.execute("DELETE FROM leases WHERE incident_id = ?", (incident_id,))
