"""The executor's SQLite file (seed 002): its schema, its one `connect()`, its transactions.

The three tables are the seed's, statement for statement (`SCHEMA`; a test compares what
`sqlite_master` holds with the seed's text). `executor_meta` holds:

- `schema_version` ("1"), written last when the file is created: a file without it was
  never finished (a creator killed at birth) and is not "an existing database";
- `consecutive_failures`, `total_completed`, `total_failed`: the counters;
- `imported:<sha256>`: one per legacy JSON file imported into this database (its path,
  when, how many tasks and attempts, the counters it held), so that no file is imported
  twice and an interrupted migration can finish its rename (incidents.executor_migrate).

Every write is one `BEGIN IMMEDIATE` transaction, under a busy timeout: two processes
recording at once queue on SQLite's write lock instead of failing or interleaving.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from incidents.errors import IncidentsError
from incidents.redact import redact

BUSY_TIMEOUT_MS = 30_000
SCHEMA_VERSION = "1"
COUNTERS = ("consecutive_failures", "total_completed", "total_failed")
IMPORTED = "imported:"
OUTPUT_MAX_CHARS = 32_000  # of an attempt's claude_output kept (its tail)
ERROR_MAX_CHARS = 16_000  # of an attempt's error kept (its head)

# Seed 002, section 1, verbatim.
SCHEMA = (
    """CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY,
    status TEXT NOT NULL DEFAULT 'pending',
    started_at TEXT,
    completed_at TEXT
)""",
    """CREATE TABLE attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL REFERENCES tasks(task_id),
    timestamp TEXT NOT NULL,
    success INTEGER NOT NULL,
    duration_seconds REAL NOT NULL,
    error TEXT,
    error_code TEXT,
    claude_output TEXT
)""",
    """CREATE TABLE executor_meta (
    key TEXT PRIMARY KEY,
    value TEXT
)""",
)


class StateFileError(IncidentsError):
    """The state file is not one this tool can open (not SQLite, another schema)."""


def connect(path: Path, *, wal: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit: `immediate`). `wal`:
    switch the file to WAL (persistent in the file; a no-op once it is)."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if wal:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")  # a recorded attempt survives a power cut
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """For readers (`incidents tasks`): never creates or changes the file."""
    conn = sqlite3.connect(
        f"file:{quote(str(path))}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, taken at its start (no upgrade deadlock between writers)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def has_tables(conn: sqlite3.Connection) -> bool:
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {"tasks", "attempts", "executor_meta"} <= names


def is_finished(conn: sqlite3.Connection) -> bool:
    """The schema exists and its creation committed (`schema_version` is written last)."""
    if not has_tables(conn):
        return False
    row = conn.execute("SELECT value FROM executor_meta WHERE key = 'schema_version'").fetchone()
    return row is not None


OUR_TABLES = frozenset({"tasks", "attempts", "executor_meta", "sqlite_sequence"})


def not_ours(conn: sqlite3.Connection) -> str:
    """Why an unfinished file (no `schema_version`) is not a state file of ours that a
    creator left half-made: "" when it is (no objects, or executor tables only, empty)."""
    objects = [
        (r[0], r[1])
        for r in conn.execute("SELECT type, name FROM sqlite_master ORDER BY name")
        if not str(r[1]).startswith("sqlite_autoindex_")
    ]
    others = sorted(name for kind, name in objects if kind != "table" or name not in OUR_TABLES)
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        return f"a SQLite database of something else (holds {shown})"
    for _, name in objects:
        if name != "sqlite_sequence" and conn.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone():
            return f"a SQLite database without schema_version whose `{name}` table holds rows"
    return ""


def create_schema(conn: sqlite3.Connection, counters: dict[str, int] | None = None) -> None:
    """Inside the caller's transaction: the tables (when missing) and the meta rows."""
    if not has_tables(conn):
        for statement in SCHEMA:
            conn.execute(statement)
    for key in COUNTERS:
        value = (counters or {}).get(key, 0)
        conn.execute(
            "INSERT OR IGNORE INTO executor_meta (key, value) VALUES (?, ?)", (key, str(value))
        )
    conn.execute(
        "INSERT OR IGNORE INTO executor_meta (key, value) VALUES ('schema_version', ?)",
        (SCHEMA_VERSION,),
    )


def ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Create the schema in a new (or never finished) file; refuse another database."""
    if is_finished(conn):
        return
    with immediate(conn):
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if names and "tasks" not in names:
            raise StateFileError(
                f"{path}: a SQLite database of something else (no `tasks` table): "
                "not an executor state file"
            )
        create_schema(conn)


def get_int(conn: sqlite3.Connection, key: str) -> int:
    row = conn.execute("SELECT value FROM executor_meta WHERE key = ?", (key,)).fetchone()
    try:
        return int(row[0]) if row is not None else 0
    except (TypeError, ValueError):
        return 0


def set_int(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute(
        "INSERT INTO executor_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, str(value)),
    )


def clean_error(error: str | None) -> str | None:
    """What is stored of an attempt's error: redacted, its head kept."""
    if error is None:
        return None
    text = redact(error)
    return text if len(text) <= ERROR_MAX_CHARS else text[:ERROR_MAX_CHARS] + "…"


def clean_output(output: str | None) -> str | None:
    """What is stored of an agent's output (`claude_output`): redacted, its tail kept.
    The file sits in the project (often beside committed files) and outlives the run."""
    if output is None:
        return None
    text = output if len(output) <= 2 * OUTPUT_MAX_CHARS else output[-2 * OUTPUT_MAX_CHARS :]
    text = redact(text)  # before the cut: a secret split by it could no longer be matched
    return text if len(text) <= OUTPUT_MAX_CHARS else "…" + text[-OUTPUT_MAX_CHARS:]


def snapshot(conn: sqlite3.Connection) -> dict[str, Any]:
    """Everything the file holds, as one JSON-able document (`incidents tasks --json`)."""
    meta = dict(conn.execute("SELECT key, value FROM executor_meta ORDER BY key"))
    attempts: dict[str, list[dict[str, Any]]] = {}
    for row in conn.execute(
        "SELECT id, task_id, timestamp, success, duration_seconds, error, error_code, "
        "claude_output FROM attempts ORDER BY id"
    ):
        attempts.setdefault(row[1], []).append(
            {"id": row[0], "timestamp": row[2], "success": bool(row[3]),
             "duration_seconds": row[4], "error": row[5], "error_code": row[6],
             "claude_output": row[7]}
        )  # fmt: skip
    tasks = [
        {"task_id": r[0], "status": r[1], "started_at": r[2], "completed_at": r[3],
         "attempts": attempts.get(r[0], [])}
        for r in conn.execute(
            "SELECT task_id, status, started_at, completed_at FROM tasks ORDER BY task_id"
        )
    ]  # fmt: skip
    imported = [
        {"sha256": key[len(IMPORTED) :], **_marker(value)}
        for key, value in meta.items()
        if key.startswith(IMPORTED)
    ]
    counters = {}
    for key in COUNTERS:
        try:
            counters[key] = int(meta.get(key, 0))
        except ValueError:
            counters[key] = 0
    return {**counters, "tasks": tasks, "imported": imported}


def _marker(value: str) -> dict[str, Any]:
    try:
        doc = json.loads(value)
    except ValueError:
        doc = None
    return doc if isinstance(doc, dict) else {"value": value}
