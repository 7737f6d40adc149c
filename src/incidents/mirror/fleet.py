"""Listing incidents, of this host's root or of every host sharing the mirror, and the
`hosts` table: each host's last report (doctor names the hosts that went silent).

On SQLite the mirror is one root's: every row is this host's, and `hosts` holds one row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from incidents import clock
from incidents.mirror.db import translating
from incidents.mirror.dialect import here
from incidents.mirror.queries import _INCIDENT_COLUMNS, IncidentRow, _row, where

__all__ = ["HostReport", "hosted_incidents", "hosts", "list_incidents", "note_host"]


def _listing(
    conn: sqlite3.Connection,
    columns: str,
    buckets: Sequence[str],
    status: str | None,
    step: str | None,
    since: str | None,
    limit: int | None,
    all_hosts: bool,
) -> list[Any]:
    if isinstance(buckets, str):
        buckets = (buckets,)
    if not buckets:
        return []
    clauses = [f"bucket IN ({', '.join('?' * len(buckets))})"]
    if not all_hosts:
        clauses.append(here(conn))
    params: list[Any] = list(buckets)
    for clause, value in (("status = ?", status), ("step = ?", step), ("created_at >= ?", since)):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    sql = (
        f"SELECT {columns} FROM incidents WHERE {' AND '.join(clauses)} "
        "ORDER BY created_at DESC, incident_id DESC"
    )
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    return conn.execute(sql, params).fetchall()


_COLUMNS = ", ".join(_INCIDENT_COLUMNS)


@translating
def list_incidents(
    conn: sqlite3.Connection,
    *,
    buckets: Sequence[str] = ("inbox",),
    status: str | None = None,
    step: str | None = None,
    since: str | None = None,
    limit: int | None = None,
    all_hosts: bool = False,
) -> list[IncidentRow]:
    """Incidents in `buckets`, newest first (`since`: created_at >= that ISO timestamp),
    of this host's root (`all_hosts`: of every host sharing the mirror)."""
    found = _listing(conn, _COLUMNS, buckets, status, step, since, limit, all_hosts)
    return [_row(r) for r in found]


@translating
def hosted_incidents(
    conn: sqlite3.Connection,
    *,
    buckets: Sequence[str] = ("inbox",),
    status: str | None = None,
    step: str | None = None,
    since: str | None = None,
    limit: int | None = None,
) -> list[tuple[IncidentRow, str]]:
    """`list_incidents(all_hosts=True)`, each row with the host that holds its bundle."""
    found = _listing(conn, f"{_COLUMNS}, host", buckets, status, step, since, limit, True)
    return [(_row(r[:-1]), str(r[-1])) for r in found]


@dataclass(frozen=True, slots=True)
class HostReport:
    host: str
    root: str
    last_seen: str  # ISO, the host's clock
    degraded: str  # why the host last worked without the shared mirror ("" : it did not)


@translating
def note_host(conn: sqlite3.Connection, degraded: str = "") -> None:
    """This host reports in (every catch-up: a watcher's pass, a status)."""
    host, root = where(conn)
    conn.execute(
        "INSERT INTO hosts (host, root, last_seen, degraded) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (host, root) DO UPDATE SET last_seen = excluded.last_seen, "
        "degraded = excluded.degraded",
        (host, root, clock.iso_precise(), degraded),
    )


@translating
def hosts(conn: sqlite3.Connection) -> list[HostReport]:
    """Every host that ever reported, oldest report first."""
    return [
        HostReport(str(h), str(r), str(s), str(d))
        for h, r, s, d in conn.execute(
            "SELECT host, root, last_seen, degraded FROM hosts ORDER BY last_seen, host"
        ).fetchall()
    ]
