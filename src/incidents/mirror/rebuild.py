"""Rebuilding the mirror from the folders: `reindex` (everything derivable) and the
catch-up (`catch_up`, `refresh`, `sync`: one incident, or what captures changed).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents import clock, eventlog, fsutil
from incidents.layout import Root
from incidents.mirror.budget import derive_errors
from incidents.mirror.db import (
    DERIVED,
    DERIVED_INODE,
    MirrorCorrupt,
    check_integrity,
    connect,
    file_identity,
    rebuild_pending,
    write,
)
from incidents.mirror.dialect import POSTGRES, dialect_of, here
from incidents.mirror.fleet import note_host
from incidents.mirror.groups import rebuild_hints
from incidents.mirror.ingest import ingest_file, ingest_root, root_events_path
from incidents.mirror.queries import (
    IncidentRow,
    get_meta,
    insert_rows,
    set_meta,
)
from incidents.mirror.scan import (
    RejectedRow,
    Scanned,
    scan_bundles,
    scan_rejected,
    workstream_row,
)
from incidents.mirror.schema import MIRROR_BUCKETS

__all__ = ["ReindexResult", "ensure_derived", "export_history", "reindex"]

REINDEX_BUSY_TIMEOUT_MS = 30_000


@dataclass
class ReindexResult:
    """What `reindex` did: rows per bucket, what it could not read, what it kept."""

    counts: dict[str, int] = field(default_factory=dict)  # rows per bucket, plus 'rejected'
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (location, reason)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (location, reason.txt)
    workstreams: int = 0
    step_attempts: int = 0  # rows rebuilt from error_runs/ files (new or already there)
    events_kept: int = 0
    moved_aside: str | None = None  # where a corrupt database went
    group_hints: tuple[int, int] = (0, 0)  # merged signatures, groups with a resolved incident
    seconds: float = 0.0


def _open_for_reindex(db_path: Path) -> tuple[sqlite3.Connection, str | None]:
    """Connect; a corrupt file (at open or by quick_check) is moved aside, never deleted."""
    try:
        conn = connect(db_path, busy_timeout_ms=REINDEX_BUSY_TIMEOUT_MS)
        problems = check_integrity(conn)
        if not problems:
            return conn, None
        conn.close()
    except MirrorCorrupt:
        pass
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = db_path.with_name(f"{db_path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():
        aside = db_path.with_name(f"{db_path.name}.corrupt-{stamp}.{n}")
        n += 1
    for suffix in ("", "-wal", "-shm"):
        src = Path(f"{db_path}{suffix}")
        if src.exists():
            os.rename(src, f"{aside}{suffix}")
    return connect(db_path, busy_timeout_ms=REINDEX_BUSY_TIMEOUT_MS), str(aside)


def reindex(root: Root) -> ReindexResult:
    """Rebuild the derivable tables from the folders; moves nothing but a corrupt database.

    Clear-and-refill in one `BEGIN IMMEDIATE` transaction of the live database (not a new
    file renamed over it: renaming a WAL database that other processes have open pairs their
    -wal/-shm with the wrong file, which corrupts it). Readers see the old rows or the new
    ones. The folders are read before the write lock is taken, then re-checked under it
    (re-listed, re-stat'ed, changed bundles re-read), so the lock is held briefly and a
    change made while scanning is not undone by stale rows.
    """
    started = time.monotonic()
    result = ReindexResult()
    conn, result.moved_aside = _open_for_reindex(root.db_path)
    try:
        scanned = scan_bundles(root, {})
        rejected = scan_rejected(root)
        with write(conn):
            scanned = scan_bundles(root, scanned)
            export_history(conn, root)  # an older version's rows, before they are cleared
            if dialect_of(conn) == POSTGRES:
                _forget_elsewhere(conn, {s.row.incident_id for s in scanned.values() if s.row})
            _refill(conn, scanned, rejected, result)
            _rebuild_escalations(conn, scanned)
            result.step_attempts, result.events_kept = _refill_journals(conn, root, scanned)
            set_meta(conn, DERIVED, clock.iso_precise())  # the mark of a derived database
            identity = file_identity(conn)
            if identity is not None:
                set_meta(conn, DERIVED_INODE, identity)
            note_host(conn)  # a rebuild is this host's report too
        result.group_hints = rebuild_hints(root, conn)  # capture's hints follow the bundles
    finally:
        conn.close()
    result.seconds = round(time.monotonic() - started, 3)
    return result


_LEGACY_EVENTS = "event_type IN ('legacy_task', 'legacy_attempt')"
_LEGACY_RUN = "run_id LIKE 'legacy\\_%' ESCAPE '\\'"


def ensure_derived(root: Root, conn: sqlite3.Connection) -> bool:
    """Rebuild the root's mirror when `conn`'s database has no mark of a rebuild (`reindex` runs on its own connection; `conn` then sees the rows). Returns
    whether it rebuilt."""
    if not rebuild_pending(conn):
        return False
    reindex(root)
    return True


# what a shared mirror holds of an incident, by table and column (legacy imports kept)
_INCIDENT_ROWS = (
    ("incidents", "incident_id", ""),
    ("workstreams", "ws_id", ""),
    ("escalations", "incident_id", ""),
    ("step_attempts", "ws_id", f" AND NOT ({_LEGACY_RUN})"),
    ("events", "incident_id", f" AND NOT ({_LEGACY_EVENTS})"),
)


def _forget_elsewhere(conn: sqlite3.Connection, ids: set[str]) -> None:
    """The rows another host's name holds of this root's incidents (`reindex --host` of a
    renamed host, a root moved to another machine): the folders here are their truth, and
    ids are unique across the fleet, so those rows are stale; they would collide with the
    refill on the tables keyed by incident alone (workstreams, step_attempts)."""
    wanted = sorted(ids)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for table, column, keep in _INCIDENT_ROWS:
            conn.execute(
                f"DELETE FROM {table} WHERE {column} IN ({marks}) AND NOT ({here(conn)}){keep}",
                chunk,
            )


def _refill_journals(
    conn: sqlite3.Connection, root: Root, scanned: dict[str, Scanned]
) -> tuple[int, int]:
    """`events` and `step_attempts` again from every bundle's events.jsonl and the root's
    (rows imported from a legacy task file are kept: see `schema`)."""
    mine = here(conn)
    conn.execute(f"DELETE FROM events WHERE NOT ({_LEGACY_EVENTS}) AND {mine}")
    conn.execute(f"DELETE FROM step_attempts WHERE NOT ({_LEGACY_RUN}) AND {mine}")
    conn.execute(f"DELETE FROM event_files WHERE {mine}")
    seen: set[str] = set()
    for s in sorted(scanned.values(), key=lambda s: s.row.location if s.row else ""):
        if s.row is None or s.row.incident_id in seen:
            continue
        seen.add(s.row.incident_id)
        ingest_file(conn, root.path / s.row.location / eventlog.EVENTS, s.row.incident_id)
    ingest_root(conn, root)
    attempts = int(conn.execute(f"SELECT count(*) FROM step_attempts WHERE {mine}").fetchone()[0])
    return attempts, int(conn.execute(f"SELECT count(*) FROM events WHERE {mine}").fetchone()[0])


def export_history(conn: sqlite3.Connection, root: Root) -> int:
    """Once per database: the events and step attempts an older version kept only in the
    mirror (no key: written before events.jsonl existed) are appended to their incident's
    events.jsonl (to `.state/events.jsonl` when its folder is gone), keyed by their row
    id, so that `reindex` rebuilds them instead of losing them. Returns the lines."""
    if get_meta(conn, "history_exported") is not None:
        return 0
    files: dict[Path, list[dict[str, Any]]] = {}
    found = {name: folder for name, folder in _folders(root)}

    def file_of(incident_id: str | None) -> Path:
        folder = found.get(incident_id or "")
        return folder / eventlog.EVENTS if folder else root_events_path(root)

    for id_, ts, incident_id, event_type, payload in conn.execute(
        f"SELECT id, ts, incident_id, event_type, payload_json FROM events "
        f"WHERE event_key IS NULL AND NOT ({_LEGACY_EVENTS}) AND {here(conn)} ORDER BY id"
    ).fetchall():
        doc = eventlog.event(f"m{id_}", ts, incident_id, event_type, json.loads(payload))
        files.setdefault(file_of(incident_id), []).append(doc)
    for row in conn.execute(
        f"SELECT id, run_id, ws_id, step_name, label, started_at, finished_at, result_json "
        f"FROM step_attempts WHERE NOT ({_LEGACY_RUN}) AND {here(conn)} ORDER BY id"
    ).fetchall():
        id_, run_id, ws_id, step_name, label, started, finished, result_json = row
        doc = eventlog.step_attempt(
            f"ma{id_}", started or finished or "", ws_id, run_id, step_name, label,
            json.loads(result_json), started, finished,
        )  # fmt: skip
        files.setdefault(file_of(ws_id), []).append(doc)
    for path, docs in files.items():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        eventlog.append(path, docs, redact=False)  # the mirror's rows were redacted already
        eventlog.sync(path)
        fsutil.fsync_dir(path.parent)
    conn.execute(
        f"UPDATE events SET event_key = 'm' || id WHERE event_key IS NULL AND NOT ({_LEGACY_EVENTS})"
    )
    set_meta(conn, "history_exported", clock.iso_precise())
    return sum(len(d) for d in files.values())


def _folders(root: Root) -> list[tuple[str, Path]]:
    found = []
    for bucket in MIRROR_BUCKETS:
        try:
            names = os.listdir(root.bucket(bucket))
        except FileNotFoundError:
            continue
        found += [(n, root.bucket(bucket) / n) for n in names if not n.startswith(".")]
    return found


# a shared mirror's runs after one host's refill: each as every host's incidents make it
# (`queries._UPSERT_RUN`: its earliest incident's time and step), none without incidents
_UNUSED_RUNS = (
    f"DELETE FROM runs WHERE NOT ({_LEGACY_RUN}) "
    "AND run_id NOT IN (SELECT run_id FROM incidents)"
)
_FIRST_OF_RUNS = f"""
    UPDATE runs SET created_at = f.created_at, source = f.step
    FROM (SELECT run_id, created_at, step FROM (
            SELECT run_id, created_at, step, row_number() OVER (
                PARTITION BY run_id ORDER BY created_at, step) AS n
            FROM incidents) AS ranked WHERE n = 1) AS f
    WHERE runs.run_id = f.run_id AND NOT ({_LEGACY_RUN.replace("run_id", "runs.run_id")})
      AND (runs.created_at != f.created_at OR runs.source != f.step)
"""


def _refill(
    conn: sqlite3.Connection,
    scanned: dict[str, Scanned],
    rejected: list[RejectedRow],
    result: ReindexResult,
) -> None:
    rows = [s.row for s in scanned.values() if s.row is not None]
    result.unreadable.extend((loc, s.error) for loc, s in scanned.items() if s.error)
    result.counts = {b: 0 for b in MIRROR_BUCKETS}
    seen: dict[str, IncidentRow] = {}
    for row in rows:
        if row.incident_id in seen:  # the same id in two buckets: I1 says this never happens
            result.unreadable.append(
                (row.location, f"duplicate of {seen[row.incident_id].location}")
            )
            continue
        seen[row.incident_id] = row
        result.counts[row.bucket] += 1
    mine = here(conn)  # on a shared PostgreSQL, this host's rows only (`reindex --host`)
    fleet = dialect_of(conn) == POSTGRES
    conn.execute(f"DELETE FROM incidents WHERE {mine}")
    if not fleet:  # imported legacy runs are history (their source file was renamed): kept
        conn.execute(f"DELETE FROM runs WHERE NOT ({_LEGACY_RUN})")
    conn.execute(f"DELETE FROM workstreams WHERE {mine}")
    conn.execute(f"DELETE FROM rejected WHERE {mine}")
    insert_rows(conn, seen.values())
    if fleet:  # a run may span hosts (one --run-id): its row is the fleet's, as `errors`
        conn.execute(_UNUSED_RUNS)
        conn.execute(_FIRST_OF_RUNS)
    workstreams = [
        w
        for s in scanned.values()
        if (r := s.row) is not None
        and seen.get(r.incident_id) is r
        and (w := workstream_row(r, s.state)) is not None
    ]
    conn.executemany(
        "INSERT INTO workstreams (run_id, ws_id, current_state, metadata_json, updated_at) "
        "VALUES (?, ?, ?, ?, ?)",
        workstreams,
    )
    result.workstreams = len(workstreams)
    conn.executemany(
        "INSERT INTO rejected (name, location, reason, rejected_at, incident_id) "
        "VALUES (?, ?, ?, ?, ?)",
        [(r.name, r.location, r.reason, r.rejected_at, r.incident_id) for r in rejected],
    )
    result.rejected = [(r.location, r.reason) for r in rejected]
    result.counts["rejected"] = len(rejected)


def _rebuild_escalations(conn: sqlite3.Connection, scanned: dict[str, Scanned]) -> None:
    """Escalation records (and with them the budget resets) from the bundles: one resolved
    record per human decision in `decisions.json`, and the open record of an incident in
    the escalated bucket not resolved since (scan's `_escalation_records`); then every
    `errors` row follows the incidents and the records (`derive_errors`)."""
    conn.execute(f"DELETE FROM escalations WHERE {here(conn)}")
    records = sorted(
        (r for s in scanned.values() if s.row is not None for r in s.escalations),
        key=lambda r: (r[0], r[1], r[4] or ""),
    )
    conn.executemany(
        "INSERT INTO escalations (ts, incident_id, signature, reason, resolved_at, guidance) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        records,
    )
    derive_errors(conn)
