"""Rebuilding the mirror from the folders: `reindex` (everything derivable) and the
catch-up (`catch_up`, `refresh`, `sync`: one incident, or what captures changed).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents import clock
from incidents.errors import IncidentsError
from incidents.layout import Root
from incidents.mirror.budget import bump_error, open_escalation, refresh_budget
from incidents.mirror.db import MirrorCorrupt, MirrorError, check_integrity, connect, dumps, write
from incidents.mirror.queries import (
    Context,
    Event,
    IncidentRow,
    add_event,
    delete_incident,
    get_incident,
    inbox_ids,
    insert_rows,
    record_step_attempt,
    save_workstream,
    set_meta,
    upsert_incident,
)
from incidents.mirror.scan import (
    RejectedRow,
    Scanned,
    row_from_bundle,
    scan_bundles,
    scan_rejected,
    scan_step_attempts,
)
from incidents.mirror.schema import MIRROR_BUCKETS

__all__ = ["CatchUp", "ReindexResult", "catch_up", "catch_up_root", "refresh", "reindex", "sync"]

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
            _refill(conn, scanned, rejected, result)
            _rebuild_escalations(conn, scanned)
            run_ids = {s.row.incident_id: s.row.run_id for s in scanned.values() if s.row}
            attempts = scan_step_attempts(root, run_ids, result.unreadable)
            conn.executemany(
                "INSERT INTO step_attempts (run_id, ws_id, step_name, label, started_at, "
                "finished_at, result_json) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (ws_id, step_name, label) DO NOTHING",
                attempts,
            )
            result.step_attempts = len(attempts)
            result.events_kept = int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
            set_meta(conn, "reindexed_at", clock.iso_precise())
    finally:
        conn.close()
    result.seconds = round(time.monotonic() - started, 3)
    return result


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
    conn.execute("DELETE FROM incidents")
    # imported legacy runs are history (their source file was renamed to .bak): kept
    conn.execute("DELETE FROM runs WHERE run_id NOT LIKE 'legacy\\_%' ESCAPE '\\'")
    conn.execute("DELETE FROM workstreams")
    conn.execute("DELETE FROM rejected")
    insert_rows(conn, seen.values())
    workstreams = [
        (r.run_id, r.incident_id, r.state, dumps({"error_pipeline": s.state.doc}), r.updated_at)
        for s in scanned.values()
        if (r := s.row) is not None
        and s.state is not None
        and r.state
        and seen.get(r.incident_id) is r
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
    _rebuild_errors(conn)


def _rebuild_escalations(conn: sqlite3.Connection, scanned: dict[str, Scanned]) -> None:
    """Escalation records (and with them the budget resets) from the bundles: a record the
    folders prove and the table lacks is added; an open record a decision resolved is
    resolved. Records the folders cannot prove (history of a readable database) are kept.
    Then the per-signature counts and budget caches follow the records."""
    signatures: set[str] = set()
    for s in scanned.values():
        if s.row is None:
            continue
        for ts, incident_id, signature, reason, resolved_at, guidance in s.escalations:
            signatures.add(signature)
            if resolved_at is None:
                if open_escalation(conn, incident_id) is None:
                    conn.execute(
                        "INSERT INTO escalations (ts, incident_id, signature, reason) "
                        "VALUES (?, ?, ?, ?)",
                        (ts, incident_id, signature, reason),
                    )
                continue
            known = conn.execute(
                "SELECT 1 FROM escalations WHERE incident_id = ? AND resolved_at = ?",
                (incident_id, resolved_at),
            ).fetchone()
            if known:
                continue
            cur = conn.execute(
                "UPDATE escalations SET resolved_at = ?, guidance = ? WHERE id = (SELECT min(id) "
                "FROM escalations WHERE incident_id = ? AND resolved_at IS NULL AND ts <= ?)",
                (resolved_at, guidance, incident_id, resolved_at),
            )
            if cur.rowcount == 0:
                conn.execute(
                    "INSERT INTO escalations (ts, incident_id, signature, reason, resolved_at, "
                    "guidance) VALUES (?, ?, ?, ?, ?, ?)",
                    (ts, incident_id, signature, reason, resolved_at, guidance),
                )
    conn.execute(
        "UPDATE errors SET escalations = max(escalations, (SELECT count(*) FROM escalations "
        "AS e WHERE e.signature = errors.signature))"
    )
    for signature in sorted(signatures):
        refresh_budget(conn, signature)


def _rebuild_errors(conn: sqlite3.Connection) -> None:
    """Counts from the incidents (sum of occurrences); budgets are history and kept."""
    conn.execute(
        "UPDATE errors SET count = 0, first_seen = '', last_seen = '', last_incident_id = NULL"
    )
    conn.execute("""
        INSERT INTO errors (signature, failure_class, error_code, step, count, first_seen,
                            last_seen, last_incident_id)
        SELECT signature, failure_class, error_code, step, total, first_seen, last_seen,
               incident_id
        FROM (
            SELECT signature, failure_class, error_code, step, incident_id, last_seen,
                   sum(occurrences) OVER w AS total,
                   min(created_at) OVER w AS first_seen,
                   row_number() OVER (PARTITION BY signature
                                      ORDER BY last_seen DESC, incident_id DESC) AS rank
            FROM incidents
            WINDOW w AS (PARTITION BY signature)
        ) WHERE rank = 1
        ON CONFLICT (signature) DO UPDATE SET
            failure_class = excluded.failure_class, error_code = excluded.error_code,
            step = excluded.step, count = excluded.count, first_seen = excluded.first_seen,
            last_seen = excluded.last_seen, last_incident_id = excluded.last_incident_id
        """)
    conn.execute("DELETE FROM errors WHERE count = 0 AND attempts_used = 0 AND escalations = 0")


# --- catching up with the folders ---------------------------------------------------------
#
# Capture does not open the database (it must stay near a bare interpreter start): it drops
# a hint, an empty file `.state/dirty/<id>`, after every bundle it creates or changes.
# `catch_up` folds those hints into the mirror and compares the inbox listing (one
# `listdir`, not a walk) with the mirror's inbox rows, so nothing a capture did is missed
# even when its hint was lost to a crash.


@dataclass
class CatchUp:
    """What a catch-up or refresh changed, and what it could not read."""

    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def _locate(root: Root, name: str) -> tuple[str, Path] | None:
    for bucket in MIRROR_BUCKETS:
        folder = root.bucket(bucket) / name
        if folder.is_dir() and not folder.is_symlink():
            return bucket, folder
    return None


def _refresh(
    conn: sqlite3.Connection,
    root: Root,
    name: str,
    result: CatchUp,
    state: Context | None = None,
) -> None:
    found = _locate(root, name)
    old = get_incident(conn, name)
    if found is None:
        if old is not None:
            delete_incident(conn, name)
            result.removed.append(name)
        return
    bucket, folder = found
    try:
        row = row_from_bundle(root, bucket, folder, state=state)
    except (IncidentsError, OSError, ValueError) as exc:
        result.unreadable.append((f"{bucket}/{name}", str(exc)))
        return
    if row == old:
        return
    upsert_incident(conn, row)
    new_captures = row.occurrences - (old.occurrences if old else 0)
    if old is None:
        add_event(conn, name, "captured", {"occurrences": row.occurrences}, ts=row.created_at)
    elif new_captures > 0:
        add_event(conn, name, "occurrence", {"occurrences": row.occurrences}, ts=row.last_seen)
    for _ in range(max(0, new_captures)):
        bump_error(
            conn, row.signature, row.failure_class, row.error_code, row.step, name, row.last_seen
        )
    result.updated.append(name)


def refresh(
    conn: sqlite3.Connection, root: Root, name: str, *, state: Context | None = None
) -> CatchUp:
    """Bring one incident's row up to date with its folder (wherever it is now). `state`:
    the context the caller has just committed to the folder's state.json (not read back)."""
    result = CatchUp()
    with write(conn):
        _refresh(conn, root, name, result, state)
    return result


def catch_up(conn: sqlite3.Connection, root: Root) -> CatchUp:
    """Bring the mirror up to date with captures (their hints) and the inbox listing.

    It commits its own transaction before it deletes the hints it consumed, so it must not
    run inside a caller's transaction: a hint deleted before the outer commit would be
    lost with it (a crash, a failed commit)."""
    if conn.in_transaction:
        raise MirrorError(
            "catch_up must run outside a transaction (it commits before it deletes hints)"
        )
    result = CatchUp()
    dirty = root.state / "dirty"
    claimed: dict[Path, str] = {}
    if dirty.is_dir():
        for name in os.listdir(dirty):
            if name.startswith("."):
                continue
            # claim the hint first: a capture that touches it again meanwhile makes a new one
            mine = dirty / f".{name}.{os.getpid()}.{os.urandom(3).hex()}"
            try:
                os.rename(dirty / name, mine)
            except FileNotFoundError:
                continue
            claimed[mine] = name
    names = set(claimed.values())
    try:
        listed = {n for n in os.listdir(root.inbox) if not n.startswith(".")}
    except FileNotFoundError:
        listed = set()
    with write(conn):
        for name in sorted(names | (listed ^ inbox_ids(conn))):
            _refresh(conn, root, name, result)
    for path in claimed:
        path.unlink(missing_ok=True)
    return result


def catch_up_root(root: Root, report: Callable[[BaseException], None]) -> CatchUp | None:
    """`catch_up` on its own connection, a failure handed to `report` instead of raised
    (the mirror is derivable: a watcher never stops for it)."""
    try:
        conn = connect(root.db_path)
        try:
            return catch_up(conn, root)
        finally:
            conn.close()
    except Exception as exc:
        report(exc)
        return None


def sync(
    conn: sqlite3.Connection,
    root: Root,
    incident_id: str,
    state: Context | None,
    *,
    reports: Iterable[tuple[str, dict[str, Any] | None]] = (),
    events: Iterable[Event] = (),
) -> None:
    """One incident's committed progress, in one transaction: its context `state` (as
    committed to state.json; None: read the folder) as workstream and row, the error
    reports it wrote (`(label, summary)`, as `error_pipeline` step attempts) and its events."""
    with write(conn):
        run_id = state.run_id if state is not None else None
        if state is not None and run_id is not None:
            save_workstream(conn, run_id, incident_id, state)
        refresh(conn, root, incident_id, state=state)
        if run_id is not None:
            for label, summary in reports:
                record_step_attempt(
                    conn, run_id, incident_id, "error_pipeline", label, result=summary
                )
        for event, payload in events:
            add_event(conn, incident_id, event, payload)
