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
from incidents.mirror.dialect import SQLITE, dialect_of, here
from incidents.mirror.queries import _INCIDENT_COLUMNS, IncidentRow, _row, incident_filter, where

__all__ = ["HostReport", "host_of", "hosts", "list_incidents", "note_host"]


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
    cond, params = incident_filter(buckets, status, step, since)
    if not all_hosts:
        cond = f"{cond} AND {here(conn)}"
    sql = (
        f"SELECT {columns} FROM incidents WHERE {cond} "
        "ORDER BY created_at DESC, incident_id DESC"
    )
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    return conn.execute(sql, params).fetchall()


_COLUMNS = ", ".join(_INCIDENT_COLUMNS)


def host_of(conn: sqlite3.Connection, written: Any) -> str:
    """The host holding a row's bundle: on SQLite this host, whatever name an older row was
    written with, '' before rows named their host (the mirror is its root's alone)."""
    return where(conn)[0] if dialect_of(conn) == SQLITE else str(written)


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
    hosts: dict[str, str] | None = None,
) -> list[IncidentRow]:
    """Incidents in `buckets`, newest first (`since`: created_at >= that ISO timestamp),
    of this host's root (`all_hosts`: of every host sharing the mirror). `hosts`: a dict
    to fill with the host that holds each row's bundle (incident id -> host)."""
    columns = _COLUMNS if hosts is None else f"{_COLUMNS}, host"
    found = _listing(conn, columns, buckets, status, step, since, limit, all_hosts)
    if hosts is None:
        return [_row(r) for r in found]
    rows = [_row(r[:-1]) for r in found]
    hosts.update(
        (row.incident_id, host_of(conn, r[-1])) for row, r in zip(rows, found, strict=True)
    )
    return rows


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
