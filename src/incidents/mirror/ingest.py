"""The mirror's `events` and `step_attempts`, read from the bundles' `events.jsonl`.

Live writers append a line to the file first (`incidents.eventlog`), then call
`ingest_incident`; `reindex` calls the same function for every bundle, so the live tables
and the rebuilt ones hold the same rows. `event_files` (mirror bookkeeping) remembers how
far each file was read, so a sync reads only what was appended since; a line whose key
is known is not inserted twice (the first line with a key wins, as in the file).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from incidents import eventlog
from incidents.errors import IncidentsError
from incidents.layout import Root
from incidents.mirror.db import dumps, translating, write
from incidents.mirror.dialect import here
from incidents.mirror.schema import EVENT_TYPES, MIRROR_BUCKETS

__all__ = ["ROOT_FILE_ID", "ingest_file", "ingest_incident", "ingest_root", "root_events_path"]

ROOT_FILE_ID = ""  # event_files' key for `.state/events.jsonl` (events of no incident)


def root_events_path(root: Root) -> Path:
    return root.state / eventlog.EVENTS


def _text(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) else None


@translating
def ingest_file(conn: sqlite3.Connection, path: Path, file_id: str) -> int:
    """Insert the lines of `path` not read yet (`file_id`: its incident, or ROOT_FILE_ID);
    the lines of a bundle's file are its incident's whatever they say. Returns how many
    lines were read. An unreadable file (a symlink, over its cap) is skipped, unread."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return 0
    known = conn.execute(
        f"SELECT offset, inode FROM event_files WHERE file_id = ? AND {here(conn)}", (file_id,)
    ).fetchone()
    offset = int(known[0]) if known and known[1] == st.st_ino else 0
    if known and offset == st.st_size:
        return 0
    try:
        docs, end, _bad = eventlog.read(path, offset)
    except (IncidentsError, OSError):
        return 0
    with write(conn):
        for doc in docs:
            _insert(conn, doc, file_id or _text(doc, "incident_id"))
        conn.execute(
            "INSERT INTO event_files (file_id, offset, inode) VALUES (?, ?, ?) "
            "ON CONFLICT (file_id) DO UPDATE SET offset = excluded.offset, inode = excluded.inode",
            (file_id, end, st.st_ino),
        )
    return len(docs)


def _insert(conn: sqlite3.Connection, doc: dict[str, Any], incident_id: str | None) -> None:
    key, ts, kind = doc["key"], _text(doc, "ts") or "", doc.get("kind")
    if kind == "event":
        event_type, payload = _text(doc, "event"), doc.get("payload")
        if event_type not in EVENT_TYPES or not isinstance(payload, dict):
            return
        conn.execute(
            "INSERT INTO events (ts, incident_id, event_type, payload_json, event_key) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (ts, incident_id, event_type, dumps(payload), key),
        )
    elif kind == "step_attempt" and incident_id:
        step_name, label = _text(doc, "step_name"), _text(doc, "label")
        result = doc.get("result")
        if not step_name or not label or not isinstance(result, dict):
            return
        conn.execute(
            "INSERT INTO step_attempts (run_id, ws_id, step_name, label, started_at, "
            "finished_at, result_json) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (_text(doc, "run_id") or "", incident_id, step_name, label,
             _text(doc, "started_at"), _text(doc, "finished_at"), dumps(result)),
        )  # fmt: skip


def ingest_incident(conn: sqlite3.Connection, root: Root, incident_id: str) -> int:
    """Read the incident's `events.jsonl` wherever its folder is now."""
    for bucket in MIRROR_BUCKETS:
        folder = root.bucket(bucket) / incident_id
        if folder.is_dir() and not folder.is_symlink():
            return ingest_file(conn, folder / eventlog.EVENTS, incident_id)
    return 0


def ingest_root(conn: sqlite3.Connection, root: Root) -> int:
    """Read `.state/events.jsonl` (events of no incident: pause, resume)."""
    return ingest_file(conn, root_events_path(root), ROOT_FILE_ID)
