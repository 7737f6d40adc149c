"""Seed 002's migration: a legacy `.executor-state.json` becomes the SQLite state file.

`settle(db)` is what `ExecutorState` runs before it connects (the seed's three cases:
the `.db` exists -> open it; only the `.json` of the same name exists -> convert it and
rename it to `.json.bak`; neither -> create). `import_file(path)` is
`incidents import-legacy`: the same conversion for a file named explicitly, or, when the
state file exists already, a merge of the attempts it does not hold yet.

Crash safety: the conversion builds the whole database under a temporary name
(`<db>.migrating`, rollback journal, fsynced), then renames it to `<db>` in one step, and
only then renames the JSON to `.json.bak`. Killed at any instant:

- before the database's rename: no `<db>` (or an unfinished one, which holds no
  `schema_version`); the JSON is intact and the next open converts it again (the stale
  temporary file is removed first);
- between the two renames: `<db>` is complete and records the JSON's SHA-256
  (`imported:<sha>`); the next open sees the JSON's digest recorded and finishes the rename;
- after both: done.

No step deletes the JSON: the worst a kill can do is leave it beside a complete database.
Migrations of one folder are serialised by a lock on the folder (flock), so two processes
opening the same state at once convert it once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from incidents import clock, executor_db, legacy, locks
from incidents.errors import IncidentsError
from incidents.executor_db import StateFileError
from incidents.fsutil import fsync_dir

SUFFIX_TMP = ".migrating"


@dataclass
class Migration:
    """What one conversion or import did."""

    source: Path
    state_file: Path
    tasks: int = 0
    attempts: int = 0
    created: bool = False  # the state file was made from this file
    already: bool = False  # its content was imported before: nothing imported twice
    renamed_to: Path | None = None
    kept_because: str = ""


class MigrationFailed(IncidentsError):
    """The conversion could not be written (a read-only folder, a full disk): nothing
    changed, the JSON is where it was."""


def json_for(db: Path) -> Path:
    """`spec/.executor-state.db` -> `spec/.executor-state.json`."""
    return db.with_suffix(".json") if db.suffix == ".db" else db.with_name(db.name + ".json")


def db_for(source: Path) -> Path:
    """`x.json` and `x.json.bak` -> `x.db`; any other name gets `.db` added."""
    name = source.name[: -len(".bak")] if source.name.endswith(".bak") else source.name
    plain = source.with_name(name)
    return plain.with_suffix(".db") if plain.suffix == ".json" else plain.with_name(name + ".db")


def folder_lock(folder: Path, timeout_s: float = 60.0) -> locks.Flocked:
    """An exclusive flock on the folder itself: no lock file left beside the state."""
    return locks.flocked(folder, timeout_s, folder=True)


def is_finished(db: Path) -> bool:
    """`db` exists and its creation committed. False: no file, an empty one, or an
    unfinished state file of ours (executor tables only, all empty, no `schema_version`),
    which a conversion may replace. Anything else at that path (not SQLite, another
    program's database, a `tasks` table holding rows but never finished) is refused with
    StateFileError: a conversion must never replace it."""
    if not os.path.lexists(db):
        return False
    if os.path.islink(db) or not db.is_file():
        raise StateFileError(f"{db}: not a regular file; move it aside")
    if db.stat().st_size == 0:
        return False
    try:
        conn = executor_db.connect(db, wal=False)
        try:
            if executor_db.is_finished(conn):
                return True
            why = executor_db.not_ours(conn)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StateFileError(
            f"{db}: not an executor state database ({exc}); move it aside"
        ) from exc
    if why:
        raise StateFileError(f"{db}: {why}: not an executor state file; nothing changed")
    return False


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _recorded(db: Path, digest: str) -> bool:
    conn = executor_db.connect(db, wal=False)
    try:
        key = executor_db.IMPORTED + digest
        return (
            conn.execute("SELECT 1 FROM executor_meta WHERE key = ?", (key,)).fetchone() is not None
        )
    finally:
        conn.close()


def settle(db: Path) -> Migration | None:
    """Before `ExecutorState` connects to `db`: convert or finish converting its JSON."""
    source = json_for(db)
    if not os.path.lexists(source):
        return None
    with folder_lock(db.parent):
        if not os.path.lexists(source):  # another process finished while we waited
            return None
        if not is_finished(db):
            return _convert(source, db)
        try:
            digest = _digest(source)
        except OSError:
            return None  # not ours to judge: the database exists and is opened
        if not _recorded(db, digest):
            return None  # a JSON the database never held: left alone (import-legacy merges)
        result = Migration(source, db, already=True)
        _finish_rename(source, result)
        return result


def import_file(path: Path, db: Path | None = None) -> Migration:
    """`incidents import-legacy PATH [--state-file DB]`."""
    path = Path(os.path.abspath(path))
    db = Path(os.path.abspath(db)) if db is not None else db_for(path)
    backup = path.with_name(path.name + ".bak")
    with folder_lock(db.parent):
        if not path.name.endswith(".bak") and not os.path.lexists(path) and backup.is_file():
            # converted and renamed by an earlier run: nothing to import twice
            return Migration(path, db, already=True, renamed_to=backup)
        if not is_finished(db):
            return _convert(path, db)
        state, digest = legacy.read(path)
        result = Migration(path, db)
        conn = executor_db.connect(db)
        try:
            with executor_db.immediate(conn):
                if _has_marker(conn, digest):
                    result.already = True
                else:
                    result.tasks, result.attempts = _insert(conn, state, merge=True)
                    _add_marker(conn, path, digest, state, result)
        finally:
            conn.close()
        _finish_rename(path, result)
        return result


def _convert(source: Path, db: Path) -> Migration:
    """Build the whole database beside `db`, then rename it into place (see the docstring)."""
    state, digest = legacy.read(source)
    tmp = db.with_name(db.name + SUFFIX_TMP)
    result = Migration(source, db, created=True)
    try:
        _build(tmp, source, digest, state, result)
        for stale in _side_files(db):  # an unfinished db's leftovers must not meet the new one
            stale.unlink(missing_ok=True)
        os.replace(tmp, db)
        fsync_dir(db.parent)
    except (OSError, sqlite3.Error) as exc:
        for leftover in (tmp, *_side_files(tmp)):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
        what = getattr(exc, "strerror", None) or exc
        raise MigrationFailed(
            f"cannot create {db}: {what}; {source.name} was left untouched"
        ) from exc
    _finish_rename(source, result)
    return result


def _build(
    tmp: Path, source: Path, digest: str, state: legacy.LegacyState, result: Migration
) -> None:
    """The whole database under its temporary name, committed and on disk."""
    for stale in (tmp, *_side_files(tmp)):  # a killed conversion's
        stale.unlink(missing_ok=True)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    conn = executor_db.connect(tmp, wal=False)  # one file to rename: no -wal beside it
    try:
        with executor_db.immediate(conn):
            executor_db.create_schema(conn, _counters(state))
            result.tasks, result.attempts = _insert(conn, state, merge=False)
            _add_marker(conn, source, digest, state, result)
    finally:
        conn.close()
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _side_files(db: Path) -> tuple[Path, ...]:
    return tuple(db.with_name(db.name + s) for s in ("-journal", "-wal", "-shm"))


def _finish_rename(source: Path, result: Migration) -> None:
    backup = source.with_name(source.name + ".bak")
    if source.name.endswith(".bak"):
        result.kept_because = f"{source.name} is already the backup"
    elif os.path.lexists(backup):
        result.kept_because = f"{backup.name} already exists"
    else:
        try:
            os.rename(source, backup)
            fsync_dir(source.parent)
            result.renamed_to = backup
        except OSError as exc:  # converted all the same; a rerun imports nothing twice
            result.kept_because = f"it could not be renamed to {backup.name}: {exc.strerror}"


def _has_marker(conn: sqlite3.Connection, digest: str) -> bool:
    key = executor_db.IMPORTED + digest
    return conn.execute("SELECT 1 FROM executor_meta WHERE key = ?", (key,)).fetchone() is not None


def _add_marker(
    conn: sqlite3.Connection, source: Path, digest: str, state: legacy.LegacyState, r: Migration
) -> None:
    doc = {
        "path": str(source), "imported_at": clock.iso_precise(), "tasks": r.tasks,
        "attempts": r.attempts, "meta": state.meta,
    }  # fmt: skip
    conn.execute(
        "INSERT INTO executor_meta (key, value) VALUES (?, ?)",
        (executor_db.IMPORTED + digest, json.dumps(doc, sort_keys=True)),
    )


def _counters(state: legacy.LegacyState) -> dict[str, int]:
    """The file's counters; those it lacks are derived from its tasks and attempts."""
    statuses = [t.status for t in state.tasks]
    ordered = sorted(
        (a.timestamp or "", a.success) for t in state.tasks for a in t.attempts
    )  # ISO timestamps sort in time order
    trailing = 0
    for _, success in reversed(ordered):
        if success:
            break
        trailing += 1
    derived = {
        "consecutive_failures": trailing,
        "total_completed": statuses.count("completed"),
        "total_failed": statuses.count("failed"),
    }
    return {**derived, **state.meta}


def _insert(conn: sqlite3.Connection, state: legacy.LegacyState, merge: bool) -> tuple[int, int]:
    """The file's tasks and attempts; with `merge`, an attempt already held (same task,
    time, outcome, duration and error) is not added again, and a task the database has
    keeps its status (the database is the live state). Returns (tasks, attempts) added."""
    now = clock.iso_precise()
    tasks = attempts = 0
    for task in state.tasks:
        cur = conn.execute(
            "INSERT OR IGNORE INTO tasks (task_id, status, started_at, completed_at) "
            "VALUES (?, ?, ?, ?)",
            (task.task_id, task.status, task.started_at, task.completed_at),
        )
        tasks += cur.rowcount
        held: set[tuple[object, ...]] = set()
        if merge:
            held = set(
                conn.execute(
                    "SELECT timestamp, success, duration_seconds, error FROM attempts "
                    "WHERE task_id = ?",
                    (task.task_id,),
                )
            )
        for a in task.attempts:
            # NOT NULL in the seed: an attempt without a time gets its task's, else now
            when = a.timestamp or task.started_at or task.completed_at or now
            duration = a.duration_seconds if a.duration_seconds is not None else 0.0
            error = executor_db.clean_error(a.error)
            key = (when, int(a.success), duration, error)
            if key in held:
                continue
            held.add(key)
            conn.execute(
                "INSERT INTO attempts (task_id, timestamp, success, duration_seconds, error, "
                "error_code, claude_output) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (task.task_id, when, int(a.success), duration, error, a.error_code or None,
                 executor_db.clean_output(a.output)),
            )  # fmt: skip
            attempts += 1
    return tasks, attempts
