"""Keeping the mirror up to date while processes work: `refresh`, `sync`, `catch_up`.

Capture does not open the database (it must stay near a bare interpreter start): it drops
a hint, an empty file `.state/dirty/<id>`, after every bundle it creates or changes.
`catch_up` folds those hints into the mirror and compares the inbox listing (one `listdir`,
not a walk) with the mirror's inbox rows, and the `error_rejected/` listing with the
`rejected` rows, so nothing a capture or a rejection did is missed even when a hint was
lost to a crash.

One incident is brought up to date by deriving from its folder every row `reindex` would
derive from it (`_derive`): its row, its workstream, its escalation records, the lines of
its events.jsonl, and its signature's `errors` row when any of those moved. So the live
mirror equals a rebuilt one by construction, whoever moved the folder last (a human
decision, an archive by hand, a bundle put back from error_rejected/, a database file
older than the folders).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from incidents import eventlog
from incidents.errors import IncidentsError
from incidents.layout import Root, shown_name, validate_id
from incidents.mirror.budget import derive_errors, note_incident, refresh_budget
from incidents.mirror.db import MirrorError, connect, write
from incidents.mirror.fleet import note_host
from incidents.mirror.ingest import ingest_file, ingest_root
from incidents.mirror.queries import (
    Context,
    forget_incident,
    get_incident,
    inbox_ids,
    sync_rejected,
    upsert_incident,
)
from incidents.mirror.rebuild import ensure_derived
from incidents.mirror.scan import rejected_row, scan_one, workstream_row
from incidents.mirror.schema import MIRROR_BUCKETS

__all__ = ["CatchUp", "catch_up", "catch_up_root", "refresh", "sync"]


@dataclass
class CatchUp:
    """What a catch-up or refresh changed, and what it could not read."""

    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def _an_id(name: str) -> bool:
    try:
        validate_id(name)
    except IncidentsError:
        return False
    return True


def _locate(root: Root, name: str) -> tuple[str, Path] | None:
    for bucket in MIRROR_BUCKETS:
        folder = root.bucket(bucket) / name
        if folder.is_dir() and not folder.is_symlink():
            return bucket, folder
    return None


def _derive(
    conn: sqlite3.Connection,
    root: Root,
    name: str,
    result: CatchUp,
    state: Context | None = None,
) -> None:
    found = _locate(root, name)
    old = get_incident(conn, name)
    if found is None:
        # once more: a folder moved from a later bucket to an earlier one (a requeue) while
        # the buckets were looked in is in neither at the moment it is looked for
        found = _locate(root, name)
    if found is None:
        if old is not None:
            forget_incident(conn, name)
            derive_errors(conn, [old.signature])
            result.removed.append(name)
        return
    bucket, folder = found
    try:
        row, context, records = scan_one(root, bucket, folder, state)
    except (IncidentsError, OSError, ValueError) as exc:
        result.unreadable.append((f"{bucket}/{name}", str(exc)))
        return
    changed = bool(ingest_file(conn, folder / eventlog.EVENTS, name))
    if row != old:
        upsert_incident(conn, row)
        note_incident(conn, row, old)
        changed = True
    changed |= _workstream(conn, name, workstream_row(row, context))
    if _escalations(conn, name, records):
        derive_errors(conn, [row.signature, *([old.signature] if old else [])])
        changed = True
    if changed and name not in result.updated:
        result.updated.append(name)


def _workstream(
    conn: sqlite3.Connection, name: str, want: tuple[str, str, str, str, str] | None
) -> bool:
    """The workstream row as `reindex` makes it (`want`); True if it moved."""
    have = conn.execute(
        "SELECT run_id, ws_id, current_state, metadata_json, updated_at FROM workstreams "
        "WHERE ws_id = ?",
        (name,),
    ).fetchone()
    if (tuple(have) if have else None) == want:
        return False
    conn.execute("DELETE FROM workstreams WHERE ws_id = ?", (name,))
    if want is not None:
        conn.execute(
            "INSERT INTO workstreams (run_id, ws_id, current_state, metadata_json, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            want,
        )
    before = have[3] if have else None
    if want is None or before is None or _attempts(before) != _attempts(want[3]):
        refresh_budget(conn, _group(conn, name))  # its attempts count in its group's budget
    return True


def _attempts(metadata_json: str) -> int:
    import json

    doc = json.loads(metadata_json).get("error_pipeline") or {}
    attempts = doc.get("ai_attempts") if isinstance(doc, dict) else None
    return len(attempts) if isinstance(attempts, list) else 0


def _group(conn: sqlite3.Connection, name: str) -> str:
    row = conn.execute("SELECT group_key FROM incidents WHERE incident_id = ?", (name,)).fetchone()
    return str(row[0]) if row else ""


def _escalations(
    conn: sqlite3.Connection, name: str, records: Sequence[tuple[object, ...]]
) -> bool:
    """The incident's escalation records as its bundle proves them; True if they moved."""
    columns = "ts, incident_id, signature, reason, resolved_at, guidance"
    have = sorted(
        tuple(r)
        for r in conn.execute(f"SELECT {columns} FROM escalations WHERE incident_id = ?", (name,))
    )
    want = sorted(tuple(r) for r in records)
    if have == want:
        return False
    conn.execute("DELETE FROM escalations WHERE incident_id = ?", (name,))
    conn.executemany(f"INSERT INTO escalations ({columns}) VALUES (?, ?, ?, ?, ?, ?)", want)
    return True


def refresh(
    conn: sqlite3.Connection, root: Root, name: str, *, state: Context | None = None
) -> CatchUp:
    """Bring one incident's rows up to date with its folder (wherever it is now). `state`:
    the context the caller has just committed to the folder's state.json (not read back)."""
    result = CatchUp()
    with write(conn):
        _derive(conn, root, name, result, state)
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
    ensure_derived(root, conn)  # never rebuilt from the folders: rebuilt first
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
    try:  # a name that is no id is no incident (the watcher sets it aside)
        listed = {n for n in os.listdir(root.inbox) if _an_id(n)}
    except FileNotFoundError:
        listed = set()
    try:  # any name may be dropped here: rows hold it as it is shown
        set_aside = {shown_name(n): n for n in os.listdir(root.rejected) if n[:1] != "."}
    except FileNotFoundError:
        set_aside = {}
    with write(conn):
        for name in sorted(names | (listed ^ inbox_ids(conn))):
            _derive(conn, root, name, result)
        sync_rejected(conn, set(set_aside), lambda name: rejected_row(root, set_aside[name]))
        ingest_root(conn, root)  # events of no incident (a pause) the mirror missed
        note_host(conn)  # this host reports in (doctor: hosts gone silent)
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


def sync(conn: sqlite3.Connection, root: Root, incident_id: str, state: Context | None) -> None:
    """One incident's committed progress, in one transaction: its context `state` (as
    committed to state.json; None: read the folder) and everything else its folder says."""
    with write(conn):
        _derive(conn, root, incident_id, CatchUp(), state)
