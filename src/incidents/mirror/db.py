"""The one door to the mirror database: connecting, migrating, transactions, errors.

`connect()` opens the file with WAL, `synchronous=NORMAL`, a busy timeout and the numbered
migrations applied in a `BEGIN IMMEDIATE` transaction; `shared()` keeps one such
connection per process and thread. Functions of this package take a connection and open
no transaction of their own beyond one statement, except where they write several rows
(then they nest inside the caller's `write()` as a savepoint). Wrap a batch in `write()`.

The doors callers use to write (`transaction`, `best_effort`) are in `mirror.door`: they
rebuild a database that carries no mark of a rebuild (`DERIVED`) before anything uses it.

Timestamps are ISO 8601 text in UTC (`2026-02-17T03:00:00+00:00`) and compare as text.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from incidents.fsutil import ensure_dir
from incidents.mirror.dialect import POSTGRES, dialect_of
from incidents.mirror.failures import DatabaseFailure, MirrorError
from incidents.mirror.schema import MIGRATIONS
from incidents.mirror.target import target_of

__all__ = [
    "DATABASE_ERRORS",
    "Connection",
    "DatabaseFailure",
    "MirrorCorrupt",
    "MirrorError",
    "DERIVED",
    "DERIVED_INODE",
    "file_identity",
    "check_integrity",
    "connect",
    "rebuild_pending",
    "shared",
    "translating",
    "warn",
    "write",
]

P = ParamSpec("P")
T = TypeVar("T")

Connection = sqlite3.Connection  # what the functions of this package take

# what a failing statement raises (a `best_effort` that must let other errors through);
# the PostgreSQL backend translates its driver's errors to DatabaseFailure
DATABASE_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, DatabaseFailure)


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


def translating(func: Callable[P, T]) -> Callable[P, T]:
    """Corruption found while using a connection becomes a `MirrorCorrupt`."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return func(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if not isinstance(exc, sqlite3.IntegrityError) and _is_corruption(exc):
                conn = args[0] if args and isinstance(args[0], sqlite3.Connection) else None
                raise MirrorCorrupt(_db_name(conn) if conn else "?", str(exc)) from exc
            raise

    return wrapper


# --- connecting and migrating -----------------------------------------------------------


def _create_private(db_path: Path) -> bool:
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
        return True
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
    return False


class _Sqlite(sqlite3.Connection):
    """A SQLite connection that knows the host and root its rows are written for."""

    host = ""
    root = ""


def connect(db_path: Path, *, busy_timeout_ms: int = 5000) -> sqlite3.Connection:
    """Open (creating if needed) the mirror with WAL, busy timeout and migrations applied.

    `isolation_level=None`: no implicit transactions; use `write()` for a batch.

    A root bound to a PostgreSQL URL (`mirror.target`) gets a connection from its pool
    instead (`mirror.pg`), which speaks the same statements: typed as the SQLite one here
    because it answers the same calls (execute, executemany, in_transaction, close).
    """
    target = target_of(db_path)
    if target.url is not None:
        from incidents.mirror import pg

        return cast(sqlite3.Connection, pg.connect(target, timeout_s=busy_timeout_ms / 1000))
    db_path = Path(db_path)
    try:
        ensure_dir(db_path.parent)
    except OSError as exc:
        raise MirrorError(f"cannot create {db_path.parent}: {exc.strerror or exc}") from exc
    _create_private(db_path)
    conn = sqlite3.connect(
        db_path,
        timeout=busy_timeout_ms / 1000,
        isolation_level=None,
        check_same_thread=True,
        factory=_Sqlite,
    )
    conn.host, conn.root = target.host, target.root
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


# written by `reindex` in the transaction that fills the tables, and only there: a database
# without it (new, a zero-byte file, one whose creator was killed, one put in place of the
# old under a running process) has not been derived from the folders and answers nothing
DERIVED = "reindexed_at"


# the inode of the file the mark was written in: a database file put in place of another
# (moved or copied to a new file: a backup restored, a copy from another machine) carries
# a mark that is not its own, and is rebuilt too
DERIVED_INODE = "reindexed_inode"


def file_identity(conn: sqlite3.Connection) -> str | None:
    """The inode of the main database file `conn` has open, as text (None: in memory, or
    a PostgreSQL database: not a file)."""
    if dialect_of(conn) == POSTGRES:
        return None
    for _seq, name, path in conn.execute("PRAGMA database_list").fetchall():
        if name == "main" and path:
            try:
                return str(os.stat(path).st_ino)
            except OSError:
                return None
    return None


def rebuild_pending(conn: sqlite3.Connection) -> bool:
    """Whether the database was never rebuilt from the folders in this file: no `DERIVED`
    mark, or one written in another file (`DERIVED_INODE`)."""
    marks = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN (?, ?)", (DERIVED, DERIVED_INODE)
        ).fetchall()
    )
    if DERIVED not in marks:
        return True
    inode = marks.get(DERIVED_INODE)
    return inode is not None and inode != file_identity(conn)


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

    if target_of(db_path).url is not None:  # a pool keeps the connections open already
        conn = connect(db_path)
        try:
            yield conn
        finally:
            conn.close()
        return
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
    conn.execute("BEGIN IMMEDIATE")  # PostgreSQL: BEGIN and the host's writer lock (pg)
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def check_integrity(conn: sqlite3.Connection, *, full: bool = False) -> list[str]:
    """`PRAGMA quick_check` (`full`: `integrity_check`) problems, empty when healthy: for
    `doctor` and `reindex`."""
    if dialect_of(conn) == POSTGRES:  # the server keeps its own files whole
        return []
    pragma = "integrity_check" if full else "quick_check"
    rows = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}").fetchall()]
    return [] if rows == ["ok"] else rows


def dumps(doc: Any) -> str:
    """The JSON text the mirror stores: canonical (sorted keys, compact), no NaN."""
    return json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


# --- the door for callers ---------------------------------------------------------------


def warn(exc: BaseException, what: str = "mirror not updated") -> None:
    """The one warning for a mirror that could not be used (it is rebuilt later)."""
    sys.stderr.write(f"incidents: warning: {what} ({exc}); run `incidents reindex`\n")
