"""Connecting, migrating, transactions, corruption and concurrent writers."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from incidents import mirror
from incidents.errors import IncidentsError
from incidents.layout import Root
from incidents.mirror.db import _statements
from tests.mirror.rows import a_row, delete_db


def test_connect_sets_pragmas_permissions_and_schema(tmp_path: Path) -> None:
    db = tmp_path / "new" / "deeper" / "mirror.sqlite3"
    conn = mirror.connect(db, busy_timeout_ms=1234)
    try:
        assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(db.stat().st_mode) == 0o600
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(mirror.MIGRATIONS)
        assert conn.isolation_level is None
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {
            "incidents",
            "rejected",
            "runs",
            "workstreams",
            "step_attempts",
            "errors",
            "events",
            "escalations",
            "meta",
        } <= tables
        conn.execute("INSERT INTO meta VALUES ('k', 'v')")
    finally:
        conn.close()
    wal = Path(f"{db}-wal")
    if wal.exists():
        assert stat.S_IMODE(wal.stat().st_mode) == 0o600


def test_connect_again_does_not_reapply_migrations(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    mirror.connect(db).close()
    conn = mirror.connect(db)
    mirror.upsert_incident(conn, a_row())
    conn.close()
    conn = mirror.connect(db)
    assert mirror.get_incident(conn, "inc_1") == a_row()
    conn.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    conn = mirror.connect(db)
    conn.execute(f"PRAGMA user_version = {len(mirror.MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(mirror.MirrorError, match="newer"):
        mirror.connect(db)


def test_corrupt_file_raises_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    db.write_bytes(b"this is not a database, just garbage bytes" * 100)
    with pytest.raises(mirror.MirrorCorrupt, match="incidents reindex") as info:
        mirror.connect(db)
    assert isinstance(info.value, IncidentsError)


def test_symlinked_database_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.sqlite3"
    target.write_bytes(b"")
    (tmp_path / "m.sqlite3").symlink_to(target)
    with pytest.raises(mirror.MirrorError, match="symbolic link"):
        mirror.connect(tmp_path / "m.sqlite3")


def test_a_second_connect_keeps_the_first_connections_locks(tmp_path: Path) -> None:
    """A watcher worker keeps one connection open and each tick connects again. Opening and
    closing the file outside SQLite would drop the first connection's POSIX locks; another
    process closing its connection would then think it was the last user and delete the
    WAL under the live connection (the soak test saw "database disk image is malformed")."""
    db = tmp_path / "m.sqlite3"
    kept = mirror.connect(db)
    try:
        with mirror.write(kept):
            kept.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')")
        mirror.connect(db).close()
        other = (
            f"import sqlite3; c = sqlite3.connect({str(db)!r}); "
            "c.execute('SELECT count(*) FROM meta').fetchone(); c.close()"
        )
        subprocess.run([sys.executable, "-c", other], check=True)
        assert Path(f"{db}-wal").exists(), "another process took the WAL from a live connection"
    finally:
        kept.close()


def test_shared_keeps_one_connection_per_process_and_thread(tmp_path: Path) -> None:
    import threading

    db = tmp_path / "m.sqlite3"
    with mirror.shared(db) as first, mirror.write(first):
        first.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')")
    with mirror.shared(db) as second:
        assert second is first  # a watcher's worker does not connect on every tick
        assert second.execute("SELECT value FROM meta WHERE key = 'k'").fetchone() == ("v",)
    other: list[object] = []

    def in_a_thread() -> None:
        with mirror.shared(db) as conn:
            other.append(conn)
            assert conn.execute("SELECT value FROM meta WHERE key = 'k'").fetchone() == ("v",)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert other and other[0] is not first  # sqlite3 connections stay in their thread


def test_shared_reconnects_when_the_database_was_replaced_or_removed(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    with mirror.shared(db) as first:
        first.execute("SELECT 1").fetchone()
    delete_db(db)  # the mirror is derivable: a user may delete it at any time
    with mirror.shared(db) as second, mirror.write(second):
        assert second is not first
        second.execute("INSERT INTO meta (key, value) VALUES ('after', 'x')")
    check = mirror.connect(db)
    try:  # written to the file that is there now, not to the deleted one
        assert check.execute("SELECT value FROM meta WHERE key = 'after'").fetchone() == ("x",)
    finally:
        check.close()
    for suffix in ("", "-wal", "-shm"):  # moved aside, as reindex does with a corrupt one
        if Path(f"{db}{suffix}").exists():
            os.rename(f"{db}{suffix}", tmp_path / f"aside.sqlite3{suffix}")
    with mirror.shared(db) as third:
        assert third is not second
        assert third.execute("SELECT count(*) FROM meta WHERE key = 'after'").fetchone() == (0,)


def test_shared_drops_a_connection_whose_caller_failed(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    with pytest.raises(RuntimeError), mirror.shared(db) as first:
        raise RuntimeError("in an unknown state now")
    with mirror.shared(db) as second:
        assert second is not first
        assert second.execute("SELECT 1").fetchone() == (1,)


def test_statements_split_keeps_each_statement_whole() -> None:
    script = "CREATE TABLE a (x TEXT DEFAULT ';');\n-- note\nCREATE INDEX i ON a (x);\n"
    assert [s.strip() for s in _statements(script)] == [
        "CREATE TABLE a (x TEXT DEFAULT ';');",
        "-- note\nCREATE INDEX i ON a (x);",
    ]


def test_write_commits_and_rolls_back(fresh_db: sqlite3.Connection) -> None:
    with mirror.write(fresh_db):
        mirror.upsert_incident(fresh_db, a_row("a"))
    with pytest.raises(RuntimeError), mirror.write(fresh_db):
        mirror.upsert_incident(fresh_db, a_row("b"))
        raise RuntimeError("boom")
    assert not fresh_db.in_transaction
    assert [r.incident_id for r in mirror.list_incidents(fresh_db)] == ["a"]
    assert mirror.get_incident(fresh_db, "b") is None


def test_nested_write_is_a_savepoint(fresh_db: sqlite3.Connection) -> None:
    with mirror.write(fresh_db):
        mirror.upsert_incident(fresh_db, a_row("a"))
        with pytest.raises(ValueError), mirror.write(fresh_db):
            mirror.upsert_incident(fresh_db, a_row("b"))
            raise ValueError("inner")
        assert fresh_db.in_transaction
    assert mirror.get_incident(fresh_db, "a") is not None
    assert mirror.get_incident(fresh_db, "b") is None


def test_corruption_found_in_use_becomes_mirror_corrupt(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    conn = mirror.connect(db)
    with mirror.write(conn):
        for i in range(2000):
            mirror.upsert_incident(conn, a_row(f"i{i}", message="x" * 200))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db.read_bytes())
    page = 4096
    # clobber pages in the middle of the file, where the incidents' rows are (the first
    # pages are the roots of indexes a query plan may not touch), keep the header
    middle = len(data) // page // 2 * page
    data[middle : middle + page * 8] = b"\xff" * (page * 8)
    db.write_bytes(bytes(data))
    with pytest.raises(mirror.MirrorCorrupt, match="incidents reindex"):
        conn = mirror.connect(db)
        try:
            mirror.list_incidents(conn, limit=None)
            mirror.incident_buckets(conn)
        finally:
            conn.close()


# --- concurrency -----------------------------------------------------------------------


def _worker(db: str, worker: int, n: int, barrier: Any, errors: Any) -> None:
    try:
        barrier.wait()
        conn = mirror.connect(Path(db))  # both migrate a fresh file at the same moment
        for i in range(n):
            with mirror.write(conn):
                mirror.upsert_incident(conn, a_row(f"w{worker}_{i}", run_id=f"run_{worker}"))
                mirror.add_event(conn, f"w{worker}_{i}", "captured", {"i": i})
                mirror.bump_error(conn, "shared", "code", None, "s", f"w{worker}_{i}", f"t{i:04d}")
            mirror.record_step_attempt(conn, "r", "ws", "shared_step", f"label_{i}")
        conn.close()
    except BaseException as exc:  # reported to the parent, whatever it is
        errors.put(f"{worker}: {type(exc).__name__}: {exc}")


def run_workers(db: Path, workers: int, n: int) -> list[str]:
    ctx = multiprocessing.get_context("fork")
    barrier, errors = ctx.Barrier(workers), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(str(db), w, n, barrier, errors)) for w in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    problems = [f"exit code {p.exitcode}" for p in procs if p.exitcode != 0]
    while not errors.empty():
        problems.append(errors.get())
    return problems


@pytest.mark.parametrize("workers", [2, 4])
def test_processes_migrate_and_write_at_once_without_lock_errors(
    tmp_path: Path, workers: int
) -> None:
    # Round 0 writes a lot at once; the others race only on creating a fresh file, which
    # failed ~1 time in 3 with "database is locked" before the WAL switch was retried.
    for round_ in range(8):
        db = tmp_path / f"round{round_}" / "mirror.sqlite3"
        n = 150 if round_ == 0 else 3
        assert run_workers(db, workers, n) == []
        conn = mirror.connect(db)
        try:
            assert conn.execute("SELECT count(*) FROM incidents").fetchone()[0] == workers * n
            assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == workers * n
            assert conn.execute("SELECT count FROM errors").fetchone()[0] == workers * n
            assert conn.execute("SELECT count(*) FROM step_attempts").fetchone()[0] == n  # I2
            assert conn.execute("PRAGMA user_version").fetchone()[0] == len(mirror.MIGRATIONS)
        finally:
            conn.close()


# --- the doors: transaction and best_effort -----------------------------------------------


def test_transaction_commits_and_closes(root: Root) -> None:
    with mirror.transaction(root) as conn:
        assert conn.in_transaction
        mirror.add_event(conn, None, "resumed", {})
    with pytest.raises(mirror.DATABASE_ERRORS):  # closed after the block
        conn.execute("SELECT 1")
    with pytest.raises(RuntimeError), mirror.transaction(root) as conn:
        mirror.add_event(conn, None, "resumed", {})
        raise RuntimeError("boom")
    check = mirror.connect(root.db_path)
    try:
        assert check.execute("SELECT count(*) FROM events").fetchone() == (1,)
    finally:
        check.close()


def test_best_effort_writes_in_one_transaction(
    root: Root, capsys: pytest.CaptureFixture[str]
) -> None:
    door = mirror.best_effort(root)
    with door as conn:
        assert conn is not None and conn.in_transaction
        mirror.upsert_incident(conn, a_row("a"))
    assert door.written
    door = mirror.best_effort(root)
    with door as conn:
        assert conn is not None
        mirror.upsert_incident(conn, a_row("b"))
        raise RuntimeError("a failure after a write")
    assert not door.written
    assert "warning: mirror not updated (a failure after a write); run `incidents reindex`" in (
        capsys.readouterr().err
    )
    check = mirror.connect(root.db_path)
    try:  # the failed block was rolled back
        assert [r.incident_id for r in mirror.list_incidents(check)] == ["a"]
    finally:
        check.close()


@pytest.mark.parametrize("backend", ["sqlite"])  # a garbage file: SQLite's own failure
def test_best_effort_yields_none_when_the_mirror_cannot_be_opened(
    root: Root, capsys: pytest.CaptureFixture[str]
) -> None:
    root.db_path.parent.mkdir(parents=True, exist_ok=True)
    root.db_path.write_bytes(b"garbage" * 1000)
    seen: list[BaseException] = []
    door = mirror.best_effort(root, on_error=seen.append)
    with door as conn:
        assert conn is None
    assert not door.written
    assert len(seen) == 1 and isinstance(seen[0], mirror.MirrorCorrupt)
    with mirror.best_effort(root, what="budget not read") as conn:
        assert conn is None
    assert "incidents: warning: budget not read (the mirror database" in capsys.readouterr().err


def test_best_effort_lets_other_errors_through_when_told(root: Root) -> None:
    with pytest.raises(OSError), mirror.best_effort(root, errors=mirror.DATABASE_ERRORS) as conn:
        assert conn is not None
        mirror.upsert_incident(conn, a_row("a"))
        raise OSError("not a database error")
    with mirror.best_effort(root, errors=mirror.DATABASE_ERRORS) as conn:
        assert conn is not None
        assert mirror.get_incident(conn, "a") is None  # rolled back
        conn.execute("SELECT * FROM no_such_table")


def test_best_effort_kept_reuses_and_drops_the_shared_connection(root: Root) -> None:
    with mirror.best_effort(root, kept=True) as first:
        assert first is not None
    with mirror.best_effort(root, kept=True) as second:
        assert second is first
        raise sqlite3.OperationalError("in an unknown state now")
    with mirror.best_effort(root, kept=True) as third:
        assert third is not None and third is not first
