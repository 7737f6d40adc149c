"""The SQLite mirror: fast queries and history over the reports root (stdlib only).

The folders are the source of truth; this database is derived from them (invariant I5):
`reindex` rebuilds every derivable table from the folders, so the file can be deleted at
any time. Tables:

- derivable, rebuilt by `reindex`: `incidents` (one row per bundle in the inbox or an
  archive bucket), `rejected` (one row per folder in `error_rejected/`), `workstreams`
  (from `state.json`), `runs`, and the counts of `errors`;
- history, kept across a reindex of a readable database: `events`, `escalations` (and
  with them the budget resets, their `resolved_at`), the budget columns of `errors`
  (`attempts_used` is only a cache: budgets are counted by `budget_used`), `meta`; `step_attempts` is
  history too, but rows whose artifact file exists in `error_runs/<id>/` are rebuilt.

One door: `connect()` (WAL, `synchronous=NORMAL`, busy timeout, numbered migrations in a
`BEGIN IMMEDIATE` transaction). Functions here take a connection and do not open
transactions of their own beyond one statement, except where they write several rows
(then they nest inside the caller's `write()` as a savepoint). Wrap a batch in `write()`.

Callers redact secrets before they hand payloads to `add_event` (the mirror is a sink).
Timestamps are ISO 8601 text in UTC (`2026-02-17T03:00:00+00:00`) and compare as text.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from incidents.errors import IncidentsError, InvalidDocument, UnsafeFile
from incidents.fsutil import read_json, read_json_object, read_regular_file
from incidents.layout import BUCKETS, REJECTED, RUNS, Root, validate_id

__all__ = [
    "EVENT_TYPES",
    "MIGRATIONS",
    "Event",
    "IncidentRow",
    "MirrorCorrupt",
    "agent_holding",
    "MirrorError",
    "ReindexResult",
    "Workstream",
    "add_escalation",
    "add_event",
    "budget_reset_at",
    "budget_used",
    "bump_error",
    "connect",
    "shared",
    "count_by",
    "escalations_since",
    "events_for",
    "last_event_ts",
    "open_escalation",
    "refresh_budget",
    "resolve_escalation",
    "get_incident",
    "get_workstream",
    "list_incidents",
    "list_rejected",
    "record_step_attempt",
    "reindex",
    "row_from_bundle",
    "catch_up",
    "refresh",
    "save_workstream",
    "upsert_incident",
    "write",
]

P = ParamSpec("P")
T = TypeVar("T")

EVENT_TYPES = frozenset(
    {
        "state_transition",
        "error_report_generated",
        "ai_attempt",
        "ai_action_required",
        "infra_error",
        "archived",
        "waiting_for_input",
        "retrying",
        "build_paused",
        "captured",
        "occurrence",
        "resumed",
        "plan_generated",
        "plan_supplied",
        "claimed",
        "submitted",
        "lease_expired",
        "attempt_recorded",
        "escalation",
        "escalation_resolved",
        "requeued",
        "rejected",
        "no_progress",
        "lease_lost",
        "poisoned",
        "legacy_task",
        "legacy_attempt",
    }
)
MIRROR_BUCKETS = ("inbox", "resolved", "escalated")
STATUS_TXT_MAX = 64
REINDEX_BUSY_TIMEOUT_MS = 30_000

# Numbered migrations: `PRAGMA user_version` is how many are applied. Append, never edit.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE incidents (
        incident_id   TEXT NOT NULL UNIQUE,
        status        TEXT NOT NULL,
        state         TEXT,
        step          TEXT NOT NULL,
        failure_class TEXT NOT NULL,
        error_code    TEXT,
        signature     TEXT NOT NULL,
        run_id        TEXT NOT NULL,
        message       TEXT NOT NULL,
        occurrences   INTEGER NOT NULL DEFAULT 1,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        last_seen     TEXT NOT NULL,
        bucket        TEXT NOT NULL CHECK (bucket IN ('inbox', 'resolved', 'escalated')),
        location      TEXT NOT NULL,
        not_before    REAL,
        waiting       INTEGER NOT NULL DEFAULT 0,
        lease_owner   TEXT,
        -- clustered so that a bucket's rows, newest first, are one range of pages (list
        -- queries read 10k rows ~2x faster); incident_id is the logical key (UNIQUE)
        PRIMARY KEY (bucket, created_at, incident_id)
    ) WITHOUT ROWID;
    CREATE INDEX incidents_bucket_status ON incidents (bucket, status);
    CREATE INDEX incidents_step ON incidents (step);
    CREATE INDEX incidents_created ON incidents (created_at);
    CREATE INDEX incidents_signature ON incidents (signature);

    CREATE TABLE rejected (
        name        TEXT PRIMARY KEY,
        location    TEXT NOT NULL,
        reason      TEXT NOT NULL,
        rejected_at TEXT,
        incident_id TEXT
    );

    CREATE TABLE runs (
        run_id     TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        source     TEXT NOT NULL
    );

    CREATE TABLE workstreams (
        run_id        TEXT NOT NULL,
        ws_id         TEXT NOT NULL,
        current_state TEXT NOT NULL,
        metadata_json TEXT NOT NULL CHECK (json_valid(metadata_json)),
        updated_at    TEXT NOT NULL,
        PRIMARY KEY (run_id, ws_id)
    );
    CREATE UNIQUE INDEX workstreams_ws ON workstreams (ws_id);

    CREATE TABLE step_attempts (
        id          INTEGER PRIMARY KEY,
        run_id      TEXT NOT NULL,
        ws_id       TEXT NOT NULL,
        step_name   TEXT NOT NULL,
        label       TEXT NOT NULL,
        started_at  TEXT,
        finished_at TEXT,
        result_json TEXT NOT NULL CHECK (json_valid(result_json)),
        UNIQUE (ws_id, step_name, label)
    );

    CREATE TABLE errors (
        signature        TEXT PRIMARY KEY,
        failure_class    TEXT NOT NULL,
        error_code       TEXT,
        step             TEXT NOT NULL,
        count            INTEGER NOT NULL DEFAULT 0,
        first_seen       TEXT NOT NULL,
        last_seen        TEXT NOT NULL,
        last_incident_id TEXT,
        attempts_used    INTEGER NOT NULL DEFAULT 0,
        escalations      INTEGER NOT NULL DEFAULT 0
    );

    CREATE TABLE events (
        id           INTEGER PRIMARY KEY,
        ts           TEXT NOT NULL,
        incident_id  TEXT,
        event_type   TEXT NOT NULL,
        payload_json TEXT NOT NULL CHECK (json_valid(payload_json))
    );
    CREATE INDEX events_incident ON events (incident_id);
    CREATE INDEX events_type_ts ON events (event_type, ts);

    CREATE TABLE escalations (
        id          INTEGER PRIMARY KEY,
        ts          TEXT NOT NULL,
        incident_id TEXT NOT NULL,
        signature   TEXT NOT NULL,
        reason      TEXT NOT NULL,
        resolved_at TEXT,
        guidance    TEXT
    );
    CREATE INDEX escalations_ts ON escalations (ts);
    CREATE INDEX escalations_signature ON escalations (signature);

    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
)


class MirrorError(IncidentsError):
    """The mirror database cannot be used (newer schema, not a local file, ...)."""


class MirrorCorrupt(MirrorError):
    """The database file is not a database or fails its integrity check."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(
            f"the mirror database {path} is corrupt ({detail}); run `incidents reindex` "
            "to move it aside and rebuild it from the folders"
        )
        self.path, self.detail = path, detail


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    if name:
        return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    text = str(exc)
    return "not a database" in text or "malformed" in text


def _db_name(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row else "?"


def _translating(func: Callable[P, T]) -> Callable[P, T]:
    """Corruption found while using a connection becomes a `MirrorCorrupt`."""

    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return func(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if not isinstance(exc, sqlite3.IntegrityError) and _is_corruption(exc):
                conn = args[0] if args and isinstance(args[0], sqlite3.Connection) else None
                raise MirrorCorrupt(_db_name(conn) if conn else "?", str(exc)) from exc
            raise

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    wrapper.__wrapped__ = func  # type: ignore[attr-defined]
    return wrapper


# --- connecting and migrating -----------------------------------------------------------


def _create_private(db_path: Path) -> None:
    """Create the file 0600 (SQLite gives -wal/-shm the same mode); refuse a symlink.

    An existing file is only stat'ed and chmod'ed, never opened: closing any descriptor of
    the database drops every POSIX lock this process holds on it, including the SHARED lock
    of a connection that is still open. Another process closing its connection then takes
    the EXCLUSIVE lock, believes it is the last user, checkpoints and deletes the WAL under
    the live connection, and the database ends up malformed (SQLite's "How To Corrupt",
    section 2.2). A file we have just created with `O_EXCL` has no connection yet.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        os.close(os.open(db_path, flags, 0o600))
        return
    except FileExistsError:
        pass
    except OSError as exc:
        raise MirrorError(f"cannot create the mirror database {db_path}: {exc.strerror}") from exc
    try:
        st = os.lstat(db_path)
        if stat.S_ISLNK(st.st_mode):
            raise MirrorError(f"the mirror database {db_path} is a symbolic link")
        if not stat.S_ISREG(st.st_mode):
            raise MirrorError(f"the mirror database {db_path} is not a regular file")
        if st.st_mode & 0o077:
            os.chmod(db_path, 0o600)
    except OSError as exc:
        raise MirrorError(f"cannot open the mirror database {db_path}: {exc.strerror}") from exc


def connect(db_path: Path, *, busy_timeout_ms: int = 5000) -> sqlite3.Connection:
    """Open (creating if needed) the mirror with WAL, busy timeout and migrations applied.

    `isolation_level=None`: no implicit transactions; use `write()` for a batch.
    """
    db_path = Path(db_path)
    try:
        db_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise MirrorError(f"cannot create {db_path.parent}: {exc.strerror or exc}") from exc
    _create_private(db_path)
    conn = sqlite3.connect(
        db_path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=True
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        # reading the mode is cheap; setting it, even to what it is, was a tenth of a
        # watcher tick's CPU (every tick connects): switch only a file that is not WAL yet
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            mode = _retry_busy(
                lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0], busy_timeout_ms
            )
        if str(mode).lower() != "wal":
            raise MirrorError(
                f"the mirror database {db_path} cannot use WAL (journal_mode={mode}); "
                "keep the reports root on a local filesystem"
            )
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn, db_path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if _is_corruption(exc):
            raise MirrorCorrupt(str(db_path), str(exc)) from exc
        raise MirrorError(f"cannot open the mirror database {db_path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


# one open connection per (process, thread, database), for callers that write often (the
# watcher's worker ticks): a connect is a file check, five pragmas and a schema check
_SHARED: dict[tuple[int, int, str], tuple[sqlite3.Connection, tuple[int, int]]] = {}
_SHARED_MAX = 4


def _identity(db_path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(db_path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


@contextmanager
def shared(db_path: Path) -> Iterator[sqlite3.Connection]:
    """A connection kept open across calls in this process and thread (do not close it).

    It is reopened when the database file was replaced or removed since (`reindex`, a
    corrupt mirror moved aside), and dropped when a body raises, so a connection in an
    unknown state is never reused. Only a few databases are kept open at once.
    """
    import threading

    db_path = Path(db_path)
    key = (os.getpid(), threading.get_ident(), str(db_path))
    cached = _SHARED.get(key)
    if cached is not None and cached[1] != _identity(db_path):
        _drop_shared(key)
        cached = None
    if cached is None:
        conn = connect(db_path)
        ident = _identity(db_path)
        if ident is None:  # removed between connect and stat: use once, do not keep
            try:
                yield conn
            finally:
                conn.close()
            return
        while len(_SHARED) >= _SHARED_MAX:
            _drop_shared(next(iter(_SHARED)))
        cached = _SHARED[key] = (conn, ident)
    try:
        yield cached[0]
    except BaseException:
        _drop_shared(key)
        raise


def _drop_shared(key: tuple[int, int, str]) -> None:
    entry = _SHARED.pop(key, None)
    if entry is not None and key[0] == os.getpid():  # a forked child never closes its parent's
        with contextlib.suppress(sqlite3.Error):
            entry[0].close()


def _retry_busy(action: Callable[[], T], busy_timeout_ms: int) -> T:
    """Run `action`, retrying SQLITE_BUSY until the timeout: switching a new file to WAL
    needs an exclusive lock and SQLite returns BUSY there without calling its busy handler
    (two processes creating the mirror at once hit it)."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    delay = 0.001
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
            if not busy or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into complete statements (executescript would COMMIT)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                yield buf
            buf = ""
    if buf.strip():
        yield buf


def _migrate(conn: sqlite3.Connection, db_path: Path) -> None:
    target = len(MIGRATIONS)
    if _user_version(conn) == target:
        return
    with write(conn):
        current = _user_version(conn)  # again, under the write lock: another may have won
        if current > target:
            raise MirrorError(
                f"the mirror database {db_path} has schema version {current}, newer than this "
                f"program's {target}; upgrade incidents, or delete it and run `incidents reindex`"
            )
        for number in range(current, target):
            for statement in _statements(MIGRATIONS[number]):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {target}")


@contextmanager
def write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """`BEGIN IMMEDIATE` ... `COMMIT`, rolled back on any exception.

    Inside an open transaction it nests as a savepoint, so helpers that write several rows
    can use it whether or not their caller batches.
    """
    if conn.in_transaction:
        conn.execute("SAVEPOINT nested")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK TO nested")
            conn.execute("RELEASE nested")
            raise
        conn.execute("RELEASE nested")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def check_integrity(conn: sqlite3.Connection) -> list[str]:
    """`PRAGMA quick_check` problems (empty when healthy): for `doctor` and `reindex`."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    return [] if rows == ["ok"] else rows


# --- rows ---------------------------------------------------------------------------------


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
)
_SELECT_INCIDENT = f"SELECT {', '.join(_INCIDENT_COLUMNS)} FROM incidents"
_UPSERT_INCIDENT = (
    f"INSERT INTO incidents ({', '.join(_INCIDENT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_INCIDENT_COLUMNS))}) ON CONFLICT (incident_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _INCIDENT_COLUMNS[1:])
)
# A run's created_at is its earliest incident's; its source that incident's step.
_UPSERT_RUN = """
    INSERT INTO runs (run_id, created_at, source) VALUES (?, ?, ?)
    ON CONFLICT (run_id) DO UPDATE SET
        source = CASE WHEN (excluded.created_at, excluded.source) < (runs.created_at, runs.source)
                      THEN excluded.source ELSE runs.source END,
        created_at = min(runs.created_at, excluded.created_at)
"""
COUNTABLE = frozenset({"bucket", "status", "state", "step", "failure_class", "error_code"})


def _row(values: Sequence[Any], _new: Any = object.__new__) -> IncidentRow:
    """A row from a SELECT of _INCIDENT_COLUMNS. Fills the frozen instance's __dict__
    directly: 2x faster than __init__'s per-field object.__setattr__ on 10k-row listings."""
    row: IncidentRow = _new(IncidentRow)
    row.__dict__.update(zip(_INCIDENT_COLUMNS, values, strict=True))
    row.__dict__["waiting"] = bool(values[16])
    return row


def _params(row: IncidentRow) -> tuple[Any, ...]:
    return (
        row.incident_id,
        row.status,
        row.state,
        row.step,
        row.failure_class,
        row.error_code,
        row.signature,
        row.run_id,
        row.message,
        row.occurrences,
        row.created_at,
        row.updated_at,
        row.last_seen,
        row.bucket,
        row.location,
        row.not_before,
        int(row.waiting),
        row.lease_owner,
    )


@_translating
def upsert_incident(conn: sqlite3.Connection, row: IncidentRow) -> None:
    """Insert or replace the incident's row, and note its run."""
    if row.bucket not in MIRROR_BUCKETS:
        raise ValueError(f"bucket must be one of {MIRROR_BUCKETS}, not {row.bucket!r}")
    with write(conn):
        conn.execute(_UPSERT_INCIDENT, _params(row))
        conn.execute(_UPSERT_RUN, (row.run_id, row.created_at, row.step))


@_translating
def get_incident(conn: sqlite3.Connection, incident_id: str) -> IncidentRow | None:
    found = conn.execute(f"{_SELECT_INCIDENT} WHERE incident_id = ?", (incident_id,)).fetchone()
    return _row(found) if found else None


@_translating
def list_incidents(
    conn: sqlite3.Connection,
    *,
    buckets: Sequence[str] = ("inbox",),
    status: str | None = None,
    step: str | None = None,
    since: str | None = None,
    limit: int | None = None,
) -> list[IncidentRow]:
    """Incidents in `buckets`, newest first (`since`: created_at >= that ISO timestamp)."""
    if isinstance(buckets, str):
        buckets = (buckets,)
    if not buckets:
        return []
    where = [f"bucket IN ({', '.join('?' * len(buckets))})"]
    params: list[Any] = list(buckets)
    for clause, value in (("status = ?", status), ("step = ?", step), ("created_at >= ?", since)):
        if value is not None:
            where.append(clause)
            params.append(value)
    sql = (
        f"{_SELECT_INCIDENT} WHERE {' AND '.join(where)} ORDER BY created_at DESC, incident_id DESC"
    )
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    return [_row(r) for r in conn.execute(sql, params)]


@_translating
def count_by(
    conn: sqlite3.Connection, column: str, *, buckets: Sequence[str] | None = None
) -> dict[str, int]:
    """Incidents per value of `column` (one of COUNTABLE); NULL counts under ''."""
    if column not in COUNTABLE:
        raise ValueError(f"cannot count by {column!r}; choose from {sorted(COUNTABLE)}")
    sql = f"SELECT coalesce({column}, ''), count(*) FROM incidents"
    params: list[str] = []
    if buckets is not None:
        sql += f" WHERE bucket IN ({', '.join('?' * len(buckets))})"
        params.extend(buckets)
    sql += f" GROUP BY {column} ORDER BY {column}"
    return {str(value): int(n) for value, n in conn.execute(sql, params)}


@dataclass(frozen=True, slots=True)
class RejectedRow:
    name: str
    location: str
    reason: str
    rejected_at: str | None
    incident_id: str | None


@_translating
def list_rejected(conn: sqlite3.Connection) -> list[RejectedRow]:
    sql = "SELECT name, location, reason, rejected_at, incident_id FROM rejected ORDER BY name"
    return [RejectedRow(*r) for r in conn.execute(sql)]


# --- history ----------------------------------------------------------------------------


def now_iso() -> str:
    """UTC now with microseconds (sorts after the same second written without them)."""
    t = time.time()
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t))}.{int(t % 1 * 1e6):06d}+00:00"


def _dumps(doc: Any) -> str:
    return json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    ts: str
    incident_id: str | None
    event_type: str
    payload: dict[str, Any]


@_translating
def add_event(
    conn: sqlite3.Connection,
    incident_id: str | None,
    event_type: str,
    payload: dict[str, Any],
    *,
    ts: str | None = None,
) -> None:
    """Append an event (history: kept by reindex, never derived). Payload must be redacted."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}; add it to EVENT_TYPES")
    conn.execute(
        "INSERT INTO events (ts, incident_id, event_type, payload_json) VALUES (?, ?, ?, ?)",
        (ts or now_iso(), incident_id, event_type, _dumps(payload)),
    )


@_translating
def events_for(
    conn: sqlite3.Connection, incident_id: str, *, event_type: str | None = None
) -> list[Event]:
    """An incident's events, oldest first."""
    sql = "SELECT id, ts, incident_id, event_type, payload_json FROM events WHERE incident_id = ?"
    params: list[str] = [incident_id]
    if event_type is not None:
        sql += " AND event_type = ?"
        params.append(event_type)
    return [
        Event(int(i), ts, inc, et, json.loads(p))
        for i, ts, inc, et, p in conn.execute(sql + " ORDER BY id", params)
    ]


@_translating
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
        (run_id, ws_id, step_name, label, started_at, finished_at, _dumps(result or {})),
    )
    return cur.rowcount == 1


@_translating
def bump_error(
    conn: sqlite3.Connection,
    signature: str,
    failure_class: str,
    error_code: str | None,
    step: str,
    incident_id: str,
    ts: str,
) -> None:
    """Count one more capture of `signature` (call once per capture, new or folded)."""
    conn.execute(
        """
        INSERT INTO errors (signature, failure_class, error_code, step, count, first_seen,
                            last_seen, last_incident_id)
        VALUES (?, ?, ?, ?, 1, ?, ?, ?)
        ON CONFLICT (signature) DO UPDATE SET
            count = count + 1,
            first_seen = min(first_seen, excluded.first_seen),
            failure_class = CASE WHEN excluded.last_seen >= last_seen
                                 THEN excluded.failure_class ELSE failure_class END,
            error_code = CASE WHEN excluded.last_seen >= last_seen
                              THEN excluded.error_code ELSE error_code END,
            step = CASE WHEN excluded.last_seen >= last_seen THEN excluded.step ELSE step END,
            last_incident_id = CASE WHEN excluded.last_seen >= last_seen
                                    THEN excluded.last_incident_id ELSE last_incident_id END,
            last_seen = max(last_seen, excluded.last_seen)
        """,
        (signature, failure_class, error_code, step, ts, ts, incident_id),
    )


# --- budgets and escalations (seed 003) -----------------------------------------------------
#
# A signature's budget use is *derived*: the AI attempts recorded in the `state.json` of
# every incident with that signature (the `workstreams` rows, rebuilt by `reindex`), started
# after the signature's last reset (the latest `resolved_at` of its escalations). Counting
# from committed contexts makes it exactly-once without a counter to keep in step, and
# `reindex` rebuilds the workstreams from `state.json`; `errors.attempts_used` is a cache
# of it for display, refreshed whenever a tick reads the budget (`refresh_budget`).

_BUDGET_SQL = """
    SELECT count(*) FROM incidents AS i
    JOIN workstreams AS w ON w.ws_id = i.incident_id,
         json_each(w.metadata_json, '$.error_pipeline.ai_attempts') AS a
    WHERE i.signature = ? AND i.incident_id != ?
      AND coalesce(json_extract(a.value, '$.started_at'),
                   json_extract(a.value, '$.finished_at'), '') > ?
"""


@_translating
def budget_reset_at(conn: sqlite3.Connection, signature: str) -> str | None:
    """When a human last reset `signature`'s budget (resolve-escalation), or None."""
    row = conn.execute(
        "SELECT max(resolved_at) FROM escalations WHERE signature = ?", (signature,)
    ).fetchone()
    return str(row[0]) if row and row[0] else None


@_translating
def budget_used(conn: sqlite3.Connection, signature: str, *, exclude: str = "") -> int:
    """AI attempts made on `signature` since its last reset, over every incident with it
    (`exclude`: an incident whose own attempts the caller counts from its context)."""
    since = budget_reset_at(conn, signature) or ""
    row = conn.execute(_BUDGET_SQL, (signature, exclude, since)).fetchone()
    return int(row[0]) if row else 0


@_translating
def refresh_budget(conn: sqlite3.Connection, signature: str) -> int:
    """Store `budget_used(signature)` in `errors.attempts_used` (a cache; returns it)."""
    used = budget_used(conn, signature)
    conn.execute("UPDATE errors SET attempts_used = ? WHERE signature = ?", (used, signature))
    return used


@dataclass(frozen=True, slots=True)
class Escalation:
    id: int
    ts: str
    incident_id: str
    signature: str
    reason: str
    resolved_at: str | None
    guidance: str | None


_SELECT_ESCALATION = (
    "SELECT id, ts, incident_id, signature, reason, resolved_at, guidance FROM escalations"
)


@_translating
def open_escalation(conn: sqlite3.Connection, incident_id: str) -> Escalation | None:
    """The incident's escalation record not yet resolved by a human (at most one)."""
    row = conn.execute(
        f"{_SELECT_ESCALATION} WHERE incident_id = ? AND resolved_at IS NULL ORDER BY id DESC",
        (incident_id,),
    ).fetchone()
    return Escalation(*row) if row else None


@_translating
def add_escalation(
    conn: sqlite3.Connection, incident_id: str, signature: str, reason: str, ts: str
) -> bool:
    """Record an escalation once: False when the incident already has an open one (a
    close resumed after a crash). Counts it on the signature's `errors` row."""
    with write(conn):
        if open_escalation(conn, incident_id) is not None:
            return False
        conn.execute(
            "INSERT INTO escalations (ts, incident_id, signature, reason) VALUES (?, ?, ?, ?)",
            (ts, incident_id, signature, reason),
        )
        conn.execute(
            "UPDATE errors SET escalations = escalations + 1 WHERE signature = ?", (signature,)
        )
    return True


@_translating
def resolve_escalation(
    conn: sqlite3.Connection, incident_id: str, signature: str, guidance: str, ts: str
) -> int:
    """A human's decision: resolve the incident's open escalation (inserting a resolved
    record when the mirror lost it), which also resets the signature's budget at `ts`."""
    with write(conn):
        cur = conn.execute(
            "UPDATE escalations SET resolved_at = ?, guidance = ? "
            "WHERE incident_id = ? AND resolved_at IS NULL",
            (ts, guidance, incident_id),
        )
        if cur.rowcount == 0:
            conn.execute(
                "INSERT INTO escalations (ts, incident_id, signature, reason, resolved_at, "
                "guidance) VALUES (?, ?, ?, 'record rebuilt at resolution', ?, ?)",
                (ts, incident_id, signature, ts, guidance),
            )
        refresh_budget(conn, signature)
        return max(1, cur.rowcount)


@_translating
def escalations_since(conn: sqlite3.Connection, ts: str) -> int:
    """Escalations recorded at or after `ts` (the global threshold's window)."""
    return int(conn.execute("SELECT count(*) FROM escalations WHERE ts >= ?", (ts,)).fetchone()[0])


@_translating
def last_event_ts(conn: sqlite3.Connection, event_type: str) -> str | None:
    row = conn.execute("SELECT max(ts) FROM events WHERE event_type = ?", (event_type,)).fetchone()
    return str(row[0]) if row and row[0] else None


@dataclass(frozen=True, slots=True)
class Workstream:
    run_id: str
    ws_id: str
    current_state: str
    context_json: str  # metadata_json's `error_pipeline`
    updated_at: str


def _state_fields(state: dict[str, Any]) -> tuple[str | None, float | None, bool]:
    """(current_state, not_before epoch seconds, waiting) from an FSM context."""
    current = state.get("current_state")
    not_before: float | None = None
    raw = state.get("not_before")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        not_before = float(raw)
    elif isinstance(raw, str) and raw:
        from datetime import datetime  # only when a state carries an ISO not_before

        try:
            not_before = datetime.fromisoformat(raw).timestamp()
        except ValueError:
            not_before = None
    waiting = bool(state.get("waiting")) or bool(state.get("waiting_for_input"))
    return (current if isinstance(current, str) and current else None), not_before, waiting


@_translating
def save_workstream(
    conn: sqlite3.Connection,
    run_id: str,
    ws_id: str,
    current_state: str,
    context_json: str | dict[str, Any],
    *,
    updated_at: str | None = None,
) -> None:
    """Store the FSM context (JSON text, or the dict it parses to) as
    `metadata_json.error_pipeline`; mirror its state onto the incident's row. The metadata
    is exactly `{"error_pipeline": context}` so that `reindex` rebuilds it from `state.json`
    (do not keep anything else there)."""
    context = json.loads(context_json) if isinstance(context_json, str) else context_json
    if not isinstance(context, dict):
        raise ValueError("context_json must be a JSON object")
    _, not_before, waiting = _state_fields(context)
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
                _dumps({"error_pipeline": context}),
                updated_at or now_iso(),
            ),
        )
        conn.execute(
            "UPDATE incidents SET state = ?, not_before = ?, waiting = ? WHERE incident_id = ?",
            (current_state, not_before, int(waiting), ws_id),
        )


@_translating
def get_workstream(conn: sqlite3.Connection, ws_id: str) -> Workstream | None:
    found = conn.execute(
        "SELECT run_id, ws_id, current_state, json_extract(metadata_json, '$.error_pipeline'), "
        "updated_at FROM workstreams WHERE ws_id = ?",
        (ws_id,),
    ).fetchone()
    return Workstream(*found) if found else None


# --- from the folders ---------------------------------------------------------------------


def _text(doc: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = doc.get(key, default)
    if not isinstance(value, str) or not value:
        raise InvalidDocument(where, "missing or not a non-empty string", key)
    return value


def _optional_text(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) and value else None


def _location(bucket: str, name: str) -> str:
    return f"{BUCKETS[bucket]}/{name}"


def _read_state(folder: Path) -> dict[str, Any] | None:
    try:
        return read_json_object(folder / "state.json")
    except FileNotFoundError:
        return None


def row_from_bundle(
    root: Root, bucket: str, folder: Path, *, state: dict[str, Any] | None = None
) -> IncidentRow:
    """The mirror row of a bundle folder: incident.json (authoritative), its state.json.

    `status.txt` is read only when incident.json has no status (the store repairs
    status.txt from incident.json). `last_seen` defaults to `created_at`. Unreadable or
    unsafe files raise (InvalidDocument, UnsafeFile, FileNotFoundError). `state`: the
    context its writer has just committed to state.json, instead of reading it back.
    """
    return _bundle(bucket, folder, root.state / "leases", state)[0]


def agent_holding(leases_dir: Path, incident_id: str) -> str | None:
    """The outside agent (a skill's `claim`) whose live lease holds an open incident.
    A worker's lease lasts one pickup and is not shown: the row would be stale at once."""
    try:
        doc = read_json_object(leases_dir / f"{incident_id}.json")
    except (IncidentsError, OSError):
        return None
    agent, expires = doc.get("agent"), doc.get("expires_at")
    live = isinstance(expires, int | float) and expires > time.time()
    return agent if isinstance(agent, str) and agent and live else None


def _bundle(
    bucket: str, folder: Path, leases_dir: Path, state: dict[str, Any] | None = None
) -> tuple[IncidentRow, dict[str, Any] | None]:
    if bucket not in MIRROR_BUCKETS:
        raise ValueError(f"bucket must be one of {MIRROR_BUCKETS}, not {bucket!r}")
    path = folder / "incident.json"
    where = str(path)
    doc = read_json_object(path)
    incident_id = _text(doc, "incident_id", where)
    if incident_id != folder.name:
        raise InvalidDocument(
            where, f"does not match its folder name {folder.name!r}", "incident_id"
        )
    status = doc.get("status")
    if not isinstance(status, str) or not status:
        raw = read_regular_file(folder / "status.txt", STATUS_TXT_MAX)
        status = raw.decode("utf-8", "replace").strip()
        if not status:
            raise InvalidDocument(where, "missing, and status.txt is empty", "status")
    occurrences = doc.get("occurrences", 1)
    if not isinstance(occurrences, int) or isinstance(occurrences, bool) or occurrences < 1:
        raise InvalidDocument(where, "must be a positive integer", "occurrences")
    created_at = _text(doc, "created_at", where)
    if state is None:
        state = _read_state(folder)
    current, not_before, waiting = _state_fields(state) if state else (None, None, False)
    row = IncidentRow(
        incident_id=incident_id,
        status=status,
        state=current,
        step=_text(doc, "step", where),
        failure_class=_text(doc, "failure_class", where),
        error_code=_optional_text(doc, "error_code"),
        signature=_text(doc, "error_signature", where),
        run_id=_text(doc, "run_id", where),
        message=_text(doc, "message", where),
        occurrences=occurrences,
        created_at=created_at,
        updated_at=_text(doc, "updated_at", where, created_at),
        last_seen=_optional_text(doc, "last_seen") or created_at,
        bucket=bucket,
        location=_location(bucket, folder.name),
        not_before=not_before,
        waiting=waiting,
        lease_owner=agent_holding(leases_dir, incident_id) if bucket == "inbox" else None,
    )
    return row, state


@dataclass
class ReindexResult:
    counts: dict[str, int] = field(default_factory=dict)  # rows per bucket, plus 'rejected'
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (location, reason)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (location, reason.txt)
    workstreams: int = 0
    step_attempts: int = 0  # rows rebuilt from error_runs/ files (new or already there)
    events_kept: int = 0
    moved_aside: str | None = None  # where a corrupt database went
    seconds: float = 0.0


_Fingerprint = tuple[tuple[int, int, int] | None, ...]


# (ts, incident_id, signature, reason, resolved_at, guidance): an escalation record
_EscalationRecord = tuple[str, str, str, str, str | None, str | None]


@dataclass
class _Scanned:
    fingerprint: _Fingerprint
    row: IncidentRow | None
    state: dict[str, Any] | None
    error: str | None
    escalations: list[_EscalationRecord] = field(default_factory=list)


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _fingerprint(folder: Path) -> _Fingerprint:
    return tuple(_stat(folder / n) for n in _FINGERPRINTED)


_FINGERPRINTED = ("incident.json", "status.txt", "state.json", "decisions.json", "metadata.json")


def _iso_utc(value: Any) -> str | None:
    """An ISO timestamp as the mirror writes it (`+00:00`, comparable as text), or None."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when.astimezone(UTC).isoformat() if when.tzinfo else None


def _escalation_records(bucket: str, folder: Path, row: IncidentRow) -> list[_EscalationRecord]:
    """The escalation records a bundle proves: one resolved record per human decision in
    `decisions.json` (which moves with the bundle), and, for a bundle in the escalated
    bucket not resolved since, the open record of its last escalation (`metadata.json`
    of its quarantine bundle). Unreadable files prove nothing (the bundle's row stands)."""
    try:
        raw = read_json(folder / "decisions.json")
    except FileNotFoundError:
        raw = []
    except (IncidentsError, OSError):
        raw = []
    meta: dict[str, Any] = {}
    with contextlib.suppress(IncidentsError, OSError):
        meta = read_json_object(folder / "metadata.json")
    escalated_at = _iso_utc(meta.get("finished_at"))
    records: list[_EscalationRecord] = []
    decisions = [d for d in raw if isinstance(d, dict)] if isinstance(raw, list) else []
    for d in decisions:
        at, guidance = _iso_utc(d.get("at")), d.get("guidance")
        if at is None:
            continue
        signature = d.get("signature") if isinstance(d.get("signature"), str) else row.signature
        reason = d.get("escalation_reason")
        ts = escalated_at if escalated_at and escalated_at <= at else at
        records.append(
            (ts, row.incident_id, str(signature), reason if isinstance(reason, str) else "",
             at, guidance if isinstance(guidance, str) else None)
        )  # fmt: skip
    last_decision = max((r[4] or "" for r in records), default="")
    if bucket == "escalated" and escalated_at and escalated_at > last_decision:
        reason = meta.get("reason")
        signature = meta.get("error_signature") or row.signature
        records.append(
            (escalated_at, row.incident_id, str(signature),
             reason if isinstance(reason, str) else "", None, None)
        )  # fmt: skip
    return records


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(directory), key=lambda e: e.name)
    except FileNotFoundError:
        return []


def _scan(root: Root, previous: dict[str, _Scanned]) -> dict[str, _Scanned]:
    """Every bundle folder by location; unchanged files reuse `previous`'s reading."""
    found: dict[str, _Scanned] = {}
    for bucket in MIRROR_BUCKETS:
        for entry in _entries(root.bucket(bucket)):
            if entry.name.startswith("."):
                continue
            location = _location(bucket, entry.name)
            folder = Path(entry.path)
            if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                found[location] = _Scanned((), None, None, "not a folder (a file or symlink)")
                continue
            fingerprint = _fingerprint(folder)
            old = previous.get(location)
            if old is not None and old.fingerprint == fingerprint:
                found[location] = old
                continue
            try:
                validate_id(entry.name)
                row, state = _bundle(bucket, folder, root.state / "leases")
                records = _escalation_records(bucket, folder, row)
                found[location] = _Scanned(fingerprint, row, state, None, records)
            except (IncidentsError, OSError) as exc:
                reason = str(exc) if isinstance(exc, IncidentsError) else f"{exc.strerror}: {exc}"
                found[location] = _Scanned(fingerprint, None, None, reason)
    return found


def _scan_rejected(root: Root) -> list[RejectedRow]:
    rows: list[RejectedRow] = []
    for entry in _entries(root.rejected):
        if entry.name.startswith("."):
            continue
        folder = Path(entry.path)
        reason, rejected_at, incident_id = "", None, None
        if entry.is_dir(follow_symlinks=False):
            for name in ("reason.txt", "reason.rejected.txt"):
                try:
                    text = read_regular_file(folder / name, 64 * 1024).decode("utf-8", "replace")
                except (FileNotFoundError, UnsafeFile):
                    continue
                stamp, _, rest = text.strip().partition(" ")
                rejected_at, reason = (stamp, rest) if stamp[:1].isdigit() else (None, text.strip())
                break
            try:
                doc = read_json_object(folder / "incident.json")
                incident_id = _optional_text(doc, "incident_id")
            except (IncidentsError, OSError):
                pass
        rows.append(
            RejectedRow(
                entry.name,
                f"{REJECTED}/{entry.name}",
                reason or "no reason recorded",
                rejected_at,
                incident_id,
            )
        )
    return rows


_ATTEMPT_PREFIXES = (("error_report_attempt_", "error_report"), ("attempt_", "attempt"))


def _scan_step_attempts(
    root: Root, run_ids: dict[str, str], unreadable: list[tuple[str, str]]
) -> list[tuple[Any, ...]]:
    """Rows for `error_runs/<id>/{error_report_attempt_*,attempt_*}.json` (label: file stem).

    An error report's step is its `step_name` (default `error_report`) and its result its
    `summary`; an `attempt_XX.json` is step `attempt` with the whole document as result.
    """
    rows: list[tuple[Any, ...]] = []
    for run_dir in _entries(root.path / RUNS):
        if run_dir.name.startswith(".") or not run_dir.is_dir(follow_symlinks=False):
            continue
        ws_id = run_dir.name
        for entry in _entries(Path(run_dir.path)):
            stem, dot, ext = entry.name.rpartition(".")
            kind = next((s for p, s in _ATTEMPT_PREFIXES if stem.startswith(p)), None)
            if not dot or ext != "json" or kind is None:
                continue
            try:
                doc = read_json(entry.path)
            except (IncidentsError, OSError) as exc:
                unreadable.append((f"{RUNS}/{ws_id}/{entry.name}", str(exc)))
                continue
            if not isinstance(doc, dict):
                unreadable.append((f"{RUNS}/{ws_id}/{entry.name}", "not a JSON object"))
                continue
            if kind == "error_report":
                step = _optional_text(doc, "step_name") or kind
                result: Any = {"summary": doc.get("summary")}
            else:
                step, result = kind, doc
            started, finished = _optional_text(doc, "started_at"), _optional_text(
                doc, "finished_at"
            )
            rows.append(
                (run_ids.get(ws_id, ""), ws_id, step, stem, started, finished, _dumps(result))
            )
    return rows


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
        scanned = _scan(root, {})
        rejected = _scan_rejected(root)
        with write(conn):
            scanned = _scan(root, scanned)
            _refill(conn, scanned, rejected, result)
            _rebuild_escalations(conn, scanned)
            run_ids = {s.row.incident_id: s.row.run_id for s in scanned.values() if s.row}
            attempts = _scan_step_attempts(root, run_ids, result.unreadable)
            conn.executemany(
                "INSERT INTO step_attempts (run_id, ws_id, step_name, label, started_at, "
                "finished_at, result_json) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (ws_id, step_name, label) DO NOTHING",
                attempts,
            )
            result.step_attempts = len(attempts)
            result.events_kept = int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('reindexed_at', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (now_iso(),),
            )
    finally:
        conn.close()
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _refill(
    conn: sqlite3.Connection,
    scanned: dict[str, _Scanned],
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
    conn.executemany(_UPSERT_INCIDENT, [_params(r) for r in seen.values()])
    conn.executemany(_UPSERT_RUN, [(r.run_id, r.created_at, r.step) for r in seen.values()])
    workstreams = [
        (r.run_id, r.incident_id, r.state, _dumps({"error_pipeline": s.state}), r.updated_at)
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


def _rebuild_escalations(conn: sqlite3.Connection, scanned: dict[str, _Scanned]) -> None:
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
    state: dict[str, Any] | None = None,
) -> None:
    found = _locate(root, name)
    old = get_incident(conn, name)
    if found is None:
        if old is not None:
            conn.execute("DELETE FROM incidents WHERE incident_id = ?", (name,))
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
    conn: sqlite3.Connection, root: Root, name: str, *, state: dict[str, Any] | None = None
) -> CatchUp:
    """Bring one incident's row up to date with its folder (wherever it is now). `state`:
    the context the caller has just committed to the folder's state.json (not read back)."""
    result = CatchUp()
    with write(conn):
        _refresh(conn, root, name, result, state)
    return result


def catch_up(conn: sqlite3.Connection, root: Root) -> CatchUp:
    """Bring the mirror up to date with captures (their hints) and the inbox listing."""
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
        known = {
            r[0] for r in conn.execute("SELECT incident_id FROM incidents WHERE bucket = 'inbox'")
        }
        for name in sorted(names | (listed ^ known)):
            _refresh(conn, root, name, result)
    for path in claimed:
        path.unlink(missing_ok=True)
    return result
