"""Incident rows, events, step attempts and workstreams: the mirror's per-incident tables.

Callers redact secrets before they hand payloads to `add_event` (the mirror is a sink).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from incidents import clock
from incidents.mirror.db import dumps, translating, write
from incidents.mirror.dialect import here
from incidents.mirror.schema import EVENT_TYPES, MIRROR_BUCKETS
from incidents.redact import redact, redact_json

__all__ = [
    "Context",
    "Event",
    "IncidentRow",
    "SignatureGroup",
    "add_event",
    "add_meta",
    "add_run",
    "forget_incident",
    "sync_rejected",
    "get_incident",
    "get_meta",
    "inbox_ids",
    "incident_buckets",
    "incident_filter",
    "insert_rows",
    "last_event_ts",
    "record_step_attempt",
    "save_workstream",
    "set_meta",
    "signature_group",
    "upsert_incident",
]


# an event's type and its payload (a JSON object, redacted by the caller)
Event = tuple[str, dict[str, Any]]


# --- incident rows ------------------------------------------------------------------------


@dataclass(frozen=True)
class IncidentRow:
    """One row of `incidents`, the same columns in the same order."""

    incident_id: str
    status: str
    state: str | None
    step: str
    failure_class: str
    error_code: str | None
    signature: str
    run_id: str
    message: str
    occurrences: int
    created_at: str
    updated_at: str
    last_seen: str
    bucket: str
    location: str
    not_before: float | None = None
    waiting: bool = False
    lease_owner: str | None = None
    group_key: str = ""  # "": the signature (incidents.grouping)
    group_decisions: str = "[]"  # incident.json `group.decisions`, as JSON text
    regression_of: str | None = None
    regression_count: int = 0

    def __post_init__(self) -> None:
        if not self.group_key:  # a row made without one: its signature's group
            object.__setattr__(self, "group_key", self.signature)


_INCIDENT_COLUMNS = (
    "incident_id",
    "status",
    "state",
    "step",
    "failure_class",
    "error_code",
    "signature",
    "run_id",
    "message",
    "occurrences",
    "created_at",
    "updated_at",
    "last_seen",
    "bucket",
    "location",
    "not_before",
    "waiting",
    "lease_owner",
    "group_key",
    "group_decisions",
    "regression_of",
    "regression_count",
)
_SELECT_INCIDENT = f"SELECT {', '.join(_INCIDENT_COLUMNS)} FROM incidents"
# every row says which host and root hold its bundle (the connection's: `where`)
_WRITTEN = (*_INCIDENT_COLUMNS, "host", "root")
_UPSERT_INCIDENT = (
    f"INSERT INTO incidents ({', '.join(_WRITTEN)}) "
    f"VALUES ({', '.join('?' * len(_WRITTEN))}) ON CONFLICT (incident_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _WRITTEN[1:])
)
# A run's created_at is its earliest incident's; its source that incident's step.
_UPSERT_RUN = """
    INSERT INTO runs (run_id, created_at, source) VALUES (?, ?, ?)
    ON CONFLICT (run_id) DO UPDATE SET
        source = CASE WHEN (excluded.created_at, excluded.source) < (runs.created_at, runs.source)
                      THEN excluded.source ELSE runs.source END,
        created_at = min(runs.created_at, excluded.created_at)
"""


def _row(values: Sequence[Any], _new: Any = object.__new__) -> IncidentRow:
    """A row from a SELECT of _INCIDENT_COLUMNS. Fills the frozen instance's __dict__
    directly: 2x faster than __init__'s per-field object.__setattr__ on 10k-row listings."""
    row: IncidentRow = _new(IncidentRow)
    row.__dict__.update(zip(_INCIDENT_COLUMNS, values, strict=True))
    row.__dict__["waiting"] = bool(values[16])
    return row


def where(conn: Any) -> tuple[str, str]:
    """(host, root) the connection writes rows for ("" on a connection made elsewhere)."""
    return str(getattr(conn, "host", "")), str(getattr(conn, "root", ""))


def _params(row: IncidentRow, place: tuple[str, str]) -> tuple[Any, ...]:
    return (
        row.incident_id,
        row.status,
        row.state,
        row.step,
        row.failure_class,
        row.error_code,
        row.signature,
        row.run_id,
        redact(row.message),  # a hand-written bundle never went through capture
        row.occurrences,
        row.created_at,
        row.updated_at,
        row.last_seen,
        row.bucket,
        row.location,
        row.not_before,
        int(row.waiting),
        row.lease_owner,
        row.group_key,
        row.group_decisions,  # redacted by its reader (mirror.scan)
        row.regression_of,
        row.regression_count,
        *place,
    )


@translating
def upsert_incident(conn: sqlite3.Connection, row: IncidentRow) -> None:
    """Insert or replace the incident's row, and note its run."""
    if row.bucket not in MIRROR_BUCKETS:
        raise ValueError(f"bucket must be one of {MIRROR_BUCKETS}, not {row.bucket!r}")
    with write(conn):
        conn.execute(_UPSERT_INCIDENT, _params(row, where(conn)))
        conn.execute(_UPSERT_RUN, (row.run_id, row.created_at, row.step))


@translating
def get_incident(conn: sqlite3.Connection, incident_id: str) -> IncidentRow | None:
    found = conn.execute(f"{_SELECT_INCIDENT} WHERE incident_id = ?", (incident_id,)).fetchone()
    return _row(found) if found else None


def incident_filter(
    buckets: Sequence[str], status: str | None, step: str | None, since: str | None
) -> tuple[str, list[Any]]:
    """The WHERE condition (and its parameters) of `list_incidents`' filters."""
    where = [f"bucket IN ({', '.join('?' * len(buckets))})"]
    params: list[Any] = list(buckets)
    for clause, value in (("status = ?", status), ("step = ?", step), ("created_at >= ?", since)):
        if value is not None:
            where.append(clause)
            params.append(value)
    return " AND ".join(where), params


@dataclass(frozen=True)
class SignatureGroup:
    """The incidents grouped together by their signatures (`incidents explain`).

    `signatures` are the signatures whose incidents make up the group: the one asked for
    (and, for an incident signed by older normalisation rules, the signature the current
    rules give it). Every reader of a group asks `signature_group`, so that a decision to
    merge or split groups (`incidents group merge/split`, issue 16) changes the answer
    here, in one place: the merged signatures join `signatures`, and the decisions that
    shaped the group belong beside them."""

    signatures: tuple[str, ...]
    incidents: list[IncidentRow]  # every bucket, oldest first


@translating
def signature_group(conn: sqlite3.Connection, signatures: Sequence[str]) -> SignatureGroup:
    """The incidents whose signature or group (`incidents group`) is one of `signatures`."""
    wanted = tuple(dict.fromkeys(signatures))
    if not wanted:
        return SignatureGroup((), [])
    marks = ", ".join("?" * len(wanted))
    rows = conn.execute(
        f"{_SELECT_INCIDENT} WHERE signature IN ({marks}) OR group_key IN ({marks}) "
        "ORDER BY created_at, incident_id",
        wanted + wanted,
    )
    return SignatureGroup(wanted, [_row(r) for r in rows])


def insert_rows(conn: sqlite3.Connection, rows: Iterable[IncidentRow]) -> None:
    """Upsert many rows and note their runs (`reindex` refilling the table)."""
    rows = list(rows)
    place = where(conn)
    conn.executemany(_UPSERT_INCIDENT, [_params(r, place) for r in rows])
    conn.executemany(_UPSERT_RUN, [(r.run_id, r.created_at, r.step) for r in rows])


@translating
def forget_incident(conn: sqlite3.Connection, incident_id: str) -> None:
    """Every row that describes an incident whose folder is in no mirrored bucket any more
    (set aside in `error_rejected/`, or gone): what `reindex` would not rebuild for it.
    Rows imported from a legacy task file are history and stay, as in `reindex`. Its
    `event_files` mark goes too, so the events are read again if the folder comes back."""
    row = conn.execute(
        "SELECT run_id FROM incidents WHERE incident_id = ?", (incident_id,)
    ).fetchone()
    with write(conn):
        conn.execute("DELETE FROM incidents WHERE incident_id = ?", (incident_id,))
        conn.execute(
            "DELETE FROM events WHERE incident_id = ? "
            "AND event_type NOT IN ('legacy_task', 'legacy_attempt')",
            (incident_id,),
        )
        conn.execute(
            "DELETE FROM step_attempts WHERE ws_id = ? AND run_id NOT LIKE 'legacy\\_%' ESCAPE '\\'",
            (incident_id,),
        )
        conn.execute("DELETE FROM escalations WHERE incident_id = ?", (incident_id,))
        conn.execute("DELETE FROM workstreams WHERE ws_id = ?", (incident_id,))
        conn.execute(f"DELETE FROM event_files WHERE file_id = ? AND {here(conn)}", (incident_id,))
        if row is not None:  # the run as its other incidents make it (`_UPSERT_RUN`), or none
            conn.execute(
                "DELETE FROM runs WHERE run_id = ? AND run_id NOT LIKE 'legacy\\_%' ESCAPE '\\' "
                "AND NOT EXISTS (SELECT 1 FROM incidents WHERE run_id = runs.run_id)",
                (row[0],),
            )
            conn.execute(
                "UPDATE runs SET (created_at, source) = (SELECT created_at, step FROM incidents "
                "WHERE run_id = runs.run_id ORDER BY created_at, step LIMIT 1) "
                "WHERE run_id = ? AND EXISTS (SELECT 1 FROM incidents WHERE run_id = runs.run_id)",
                (row[0],),
            )


@translating
def sync_rejected(conn: sqlite3.Connection, listed: set[str], read: Callable[[str], Any]) -> None:
    """Make `rejected` hold one row per entry of `error_rejected/` (`listed`), as reindex
    builds it; `read(name)` gives a new entry's row. A row that had no reason yet (its
    reason.txt is written just after the move) is read again."""
    sql = f"SELECT name, rejected_at FROM rejected WHERE {here(conn)}"
    known = {name: bool(stamp) for name, stamp in conn.execute(sql)}
    with write(conn):
        for name in set(known) - listed:
            conn.execute(f"DELETE FROM rejected WHERE name = ? AND {here(conn)}", (name,))
        for name in sorted(listed):
            if known.get(name):
                continue
            r = read(name)
            conn.execute(
                "INSERT INTO rejected (name, location, reason, rejected_at, incident_id) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                "location = excluded.location, reason = excluded.reason, "
                "rejected_at = excluded.rejected_at, incident_id = excluded.incident_id",
                (r.name, r.location, r.reason, r.rejected_at, r.incident_id),
            )


@translating
def inbox_ids(conn: sqlite3.Connection) -> set[str]:
    """The ids of the rows in the inbox bucket."""
    sql = f"SELECT incident_id FROM incidents WHERE bucket = 'inbox' AND {here(conn)}"
    return {r[0] for r in conn.execute(sql)}


@translating
def incident_buckets(conn: sqlite3.Connection) -> dict[str, str]:
    """Every row's bucket by incident id (doctor compares them with the folders)."""
    sql = f"SELECT incident_id, bucket FROM incidents WHERE {here(conn)}"
    return {r[0]: r[1] for r in conn.execute(sql)}


@translating
def add_run(conn: sqlite3.Connection, run_id: str, created_at: str, source: str) -> None:
    """Note a run unless it is known (an imported legacy file's run)."""
    conn.execute(
        "INSERT INTO runs (run_id, created_at, source) VALUES (?, ?, ?) "
        "ON CONFLICT (run_id) DO NOTHING",
        (run_id, created_at, source),
    )


# --- events and step attempts --------------------------------------------------------------


@translating
def add_event(
    conn: sqlite3.Connection,
    incident_id: str | None,
    event_type: str,
    payload: dict[str, Any],
    *,
    ts: str | None = None,
) -> None:
    """Append an event (history: kept by reindex, never derived). Its payload is redacted
    here too (defence in depth: callers redact what they take in)."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}; add it to EVENT_TYPES")
    conn.execute(
        "INSERT INTO events (ts, incident_id, event_type, payload_json) VALUES (?, ?, ?, ?)",
        (ts or clock.iso_precise(), incident_id, event_type, dumps(redact_json(payload))),
    )


@translating
def record_step_attempt(
    conn: sqlite3.Connection,
    run_id: str,
    ws_id: str,
    step_name: str,
    label: str,
    *,
    result: dict[str, Any] | None = None,
    started_at: str | None = None,
    finished_at: str | None = None,
) -> bool:
    """Record (ws, step, label) once (I2): False when it was already recorded.

    Label convention: the stem of the artifact written to `error_runs/<ws_id>/`
    (`attempt_01`, `error_report_attempt_3`), so `reindex` can rebuild the row.
    """
    cur = conn.execute(
        "INSERT INTO step_attempts "
        "(run_id, ws_id, step_name, label, started_at, finished_at, result_json) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ws_id, step_name, label) DO NOTHING",
        (
            run_id,
            ws_id,
            step_name,
            label,
            started_at,
            finished_at,
            dumps(redact_json(result or {})),
        ),
    )
    return cur.rowcount == 1


@translating
def last_event_ts(conn: sqlite3.Connection, event_type: str) -> str | None:
    """When the last event of `event_type` was recorded, or None."""
    row = conn.execute("SELECT max(ts) FROM events WHERE event_type = ?", (event_type,)).fetchone()
    return str(row[0]) if row and row[0] else None


# --- workstreams --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Context:
    """A machine context (`state.json`) as the mirror keeps it: the document, stored as it
    is, and the fields an incident's row shows, read from it once (leniently: a document
    from disk may be of an older or foreign shape)."""

    doc: dict[str, Any]
    run_id: str | None
    current_state: str | None
    not_before: float | None  # epoch seconds
    waiting: bool

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Context:
        current, run_id = doc.get("current_state"), doc.get("run_id")
        not_before: float | None = None
        raw = doc.get("not_before")
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            not_before = float(raw)
        elif isinstance(raw, str) and raw:
            from datetime import datetime  # only when a state carries an ISO not_before

            try:
                not_before = datetime.fromisoformat(raw).timestamp()
            except ValueError:
                not_before = None
        return cls(
            doc=doc,
            run_id=run_id if isinstance(run_id, str) and run_id else None,
            current_state=current if isinstance(current, str) and current else None,
            not_before=not_before,
            waiting=bool(doc.get("waiting")) or bool(doc.get("waiting_for_input")),
        )


@translating
def save_workstream(
    conn: sqlite3.Connection,
    run_id: str,
    ws_id: str,
    context: Context,
    *,
    updated_at: str | None = None,
) -> None:
    """Store the FSM context as `metadata_json.error_pipeline`; mirror its state onto the
    incident's row. The metadata is exactly `{"error_pipeline": context}` so that
    `reindex` rebuilds it from `state.json` (do not keep anything else there)."""
    current_state, not_before, waiting = context.current_state, context.not_before, context.waiting
    with write(conn):
        conn.execute(
            """
            INSERT INTO workstreams (run_id, ws_id, current_state, metadata_json, updated_at)
            VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (run_id, ws_id) DO UPDATE SET current_state = excluded.current_state,
                metadata_json = excluded.metadata_json, updated_at = excluded.updated_at
            """,
            (
                run_id,
                ws_id,
                current_state,
                dumps({"error_pipeline": redact_json(context.doc)}),
                updated_at or clock.iso_precise(),
            ),
        )
        conn.execute(
            "UPDATE incidents SET state = ?, not_before = ?, waiting = ? WHERE incident_id = ?",
            (current_state, not_before, int(waiting), ws_id),
        )


# --- meta ---------------------------------------------------------------------------------


@translating
def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute(f"SELECT value FROM meta WHERE key = ? AND {here(conn)}", (key,)).fetchone()
    return str(row[0]) if row else None


@translating
def add_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Store a new key (an IntegrityError when it exists: check with `get_meta` first)."""
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))


@translating
def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
