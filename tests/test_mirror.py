"""The SQLite mirror: real database files in tmp_path, real bundle folders, never mocked."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from incidents import mirror
from incidents.errors import IncidentsError, InvalidDocument, UnsafeFile
from incidents.layout import Root
from incidents.mirror import IncidentRow


@pytest.fixture
def fresh_db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = mirror.connect(tmp_path / "state" / "mirror.sqlite3")
    yield conn
    conn.close()


@pytest.fixture
def root(tmp_path: Path) -> Root:
    return Root(tmp_path / "reports").ensure()


def incident_doc(incident_id: str, /, **overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "incident_id": incident_id,
        "status": "new",
        "created_at": "2026-02-17T03:00:00+00:00",
        "updated_at": "2026-02-17T03:00:00+00:00",
        "run_id": "run_20260217_115959_123456",
        "year": 2026,
        "month": 2,
        "ym": "2026-02",
        "step": "amazon_download",
        "failure_class": "transient",
        "message": "Network timeout during receipt download",
        "error_signature": "transient | amazon_download | Network timeout",
    }
    doc.update(overrides)
    return doc


def make_bundle(
    root: Root,
    bucket: str,
    incident_id: str,
    /,
    state: dict[str, Any] | None = None,
    **overrides: Any,
) -> Path:
    folder = root.bucket(bucket) / incident_id
    folder.mkdir(mode=0o700)
    doc = incident_doc(incident_id, **overrides)
    (folder / "incident.json").write_text(json.dumps(doc))
    (folder / "status.txt").write_text(f"{doc['status']}\n")
    (folder / "log_tail.txt").write_text("Traceback ...\n")
    if state is not None:
        (folder / "state.json").write_text(json.dumps(state))
    return folder


def a_row(incident_id: str = "inc_1", **overrides: Any) -> IncidentRow:
    values: dict[str, Any] = {
        "incident_id": incident_id,
        "status": "new",
        "state": None,
        "step": "download",
        "failure_class": "transient",
        "error_code": "TIMEOUT",
        "signature": "sig-a",
        "run_id": "run_1",
        "message": "timed out",
        "occurrences": 1,
        "created_at": "2026-02-17T03:00:00+00:00",
        "updated_at": "2026-02-17T03:00:00+00:00",
        "last_seen": "2026-02-17T03:00:00+00:00",
        "bucket": "inbox",
        "location": f"error_inbox/{incident_id}",
    }
    values.update(overrides)
    return IncidentRow(**values)


# --- connect and migrations -----------------------------------------------------------


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
    assert [s.strip() for s in mirror._statements(script)] == [
        "CREATE TABLE a (x TEXT DEFAULT ';');",
        "-- note\nCREATE INDEX i ON a (x);",
    ]


# --- transactions ------------------------------------------------------------------------


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


# --- incidents -------------------------------------------------------------------------


def test_upsert_replaces_and_records_the_run(fresh_db: sqlite3.Connection) -> None:
    mirror.upsert_incident(fresh_db, a_row("a", created_at="2026-02-17T05:00:00+00:00"))
    updated = a_row("a", status="running", occurrences=3, waiting=True, not_before=12.5)
    mirror.upsert_incident(fresh_db, updated)
    assert mirror.get_incident(fresh_db, "a") == updated
    mirror.upsert_incident(
        fresh_db, a_row("b", step="earlier", created_at="2026-02-17T01:00:00+00:00")
    )
    assert fresh_db.execute("SELECT run_id, created_at, source FROM runs").fetchall() == [
        ("run_1", "2026-02-17T01:00:00+00:00", "earlier")
    ]


def test_upsert_refuses_an_unknown_bucket(fresh_db: sqlite3.Connection) -> None:
    with pytest.raises(ValueError, match="bucket"):
        mirror.upsert_incident(fresh_db, a_row(bucket="rejected"))


def test_list_incidents_filters_and_orders_newest_first(fresh_db: sqlite3.Connection) -> None:
    with mirror.write(fresh_db):
        for i in range(6):
            mirror.upsert_incident(
                fresh_db,
                a_row(
                    f"i{i}",
                    created_at=f"2026-02-1{i}T00:00:00+00:00",
                    status="new" if i % 2 else "planned",
                    step="s1" if i < 3 else "s2",
                    bucket="inbox" if i < 5 else "resolved",
                ),
            )

    def ids(rows: list[IncidentRow]) -> list[str]:
        return [r.incident_id for r in rows]

    assert ids(mirror.list_incidents(fresh_db)) == ["i4", "i3", "i2", "i1", "i0"]
    assert ids(mirror.list_incidents(fresh_db, buckets=("inbox", "resolved"), limit=2)) == [
        "i5",
        "i4",
    ]
    assert ids(mirror.list_incidents(fresh_db, buckets=["resolved"])) == ["i5"]
    assert ids(mirror.list_incidents(fresh_db, status="new")) == ["i3", "i1"]
    assert ids(mirror.list_incidents(fresh_db, step="s1")) == ["i2", "i1", "i0"]
    assert ids(mirror.list_incidents(fresh_db, since="2026-02-13T00:00:00+00:00")) == ["i4", "i3"]
    assert mirror.list_incidents(fresh_db, buckets=()) == []


def test_count_by(fresh_db: sqlite3.Connection) -> None:
    with mirror.write(fresh_db):
        mirror.upsert_incident(fresh_db, a_row("a"))
        mirror.upsert_incident(fresh_db, a_row("b", status="planned"))
        mirror.upsert_incident(fresh_db, a_row("c", bucket="resolved", status="resolved"))
    assert mirror.count_by(fresh_db, "bucket") == {"inbox": 2, "resolved": 1}
    assert mirror.count_by(fresh_db, "status", buckets=["inbox"]) == {"new": 1, "planned": 1}
    assert mirror.count_by(fresh_db, "state") == {"": 3}
    with pytest.raises(ValueError, match="cannot count"):
        mirror.count_by(fresh_db, "message; DROP TABLE incidents")


# --- history ---------------------------------------------------------------------------


def test_events_round_trip_in_order(fresh_db: sqlite3.Connection) -> None:
    mirror.add_event(fresh_db, "a", "captured", {"n": 1})
    mirror.add_event(fresh_db, "a", "state_transition", {"from": "S_INIT", "to": "S0"})
    mirror.add_event(fresh_db, "b", "captured", {})
    events = mirror.events_for(fresh_db, "a")
    assert [(e.event_type, e.payload) for e in events] == [
        ("captured", {"n": 1}),
        ("state_transition", {"from": "S_INIT", "to": "S0"}),
    ]
    assert events[0].ts.endswith("+00:00") and events[0].id < events[1].id
    assert len(mirror.events_for(fresh_db, "a", event_type="captured")) == 1
    with pytest.raises(ValueError, match="unknown event type"):
        mirror.add_event(fresh_db, "a", "typo_event", {})
    with pytest.raises(ValueError):
        mirror.add_event(fresh_db, "a", "captured", {"x": float("nan")})


def test_step_attempt_is_recorded_once(fresh_db: sqlite3.Connection) -> None:
    assert mirror.record_step_attempt(
        fresh_db, "r", "ws", "baseline", "attempt_01", result={"ok": 1}
    )
    assert not mirror.record_step_attempt(fresh_db, "r", "ws", "baseline", "attempt_01", result={})
    assert mirror.record_step_attempt(fresh_db, "r", "ws", "baseline", "attempt_02")
    rows = fresh_db.execute("SELECT label, result_json FROM step_attempts ORDER BY id").fetchall()
    assert rows == [("attempt_01", '{"ok":1}'), ("attempt_02", "{}")]


def test_bump_error_counts_by_signature(fresh_db: sqlite3.Connection) -> None:
    mirror.bump_error(fresh_db, "sig", "code", "SYNTAX", "lint", "i1", "2026-02-17T03:00:00+00:00")
    mirror.bump_error(fresh_db, "sig", "code", "SYNTAX", "lint", "i2", "2026-02-17T04:00:00+00:00")
    mirror.bump_error(fresh_db, "sig", "code", "SYNTAX", "lint", "i0", "2026-02-17T01:00:00+00:00")
    mirror.bump_error(fresh_db, "other", "env", None, "dl", "i3", "2026-02-17T02:00:00+00:00")
    rows = fresh_db.execute(
        "SELECT signature, count, first_seen, last_seen, last_incident_id FROM errors "
        "ORDER BY signature"
    ).fetchall()
    assert rows == [
        ("other", 1, "2026-02-17T02:00:00+00:00", "2026-02-17T02:00:00+00:00", "i3"),
        ("sig", 3, "2026-02-17T01:00:00+00:00", "2026-02-17T04:00:00+00:00", "i2"),
    ]


def test_save_workstream_stores_context_and_mirrors_state(fresh_db: sqlite3.Connection) -> None:
    mirror.upsert_incident(fresh_db, a_row("a"))
    ctx = {"run_id": "run_1", "workstream_id": "a", "current_state": "S1_AIDER_FIX", "waiting": 1}
    mirror.save_workstream(fresh_db, "run_1", "a", "S1_AIDER_FIX", json.dumps(ctx))
    ws = mirror.get_workstream(fresh_db, "a")
    assert ws is not None and ws.current_state == "S1_AIDER_FIX"
    assert json.loads(ws.context_json) == ctx
    meta = fresh_db.execute("SELECT metadata_json FROM workstreams").fetchone()[0]
    assert json.loads(meta) == {"error_pipeline": ctx}
    row = mirror.get_incident(fresh_db, "a")
    assert row is not None and row.state == "S1_AIDER_FIX" and row.waiting
    assert mirror.get_workstream(fresh_db, "missing") is None


# --- bundles ---------------------------------------------------------------------------


def test_refresh_takes_the_state_its_writer_just_committed(
    root: Root, fresh_db: sqlite3.Connection
) -> None:
    """The step service hands over the context it committed instead of having state.json
    read back; incident.json is still read (a capture may have changed it)."""
    folder = make_bundle(root, "inbox", "inc_s", state={"current_state": "S_PLANNED"},
                         occurrences=3)  # fmt: skip
    committed = {"current_state": "S0_BASELINE_CHECK", "waiting_for_input": True}
    mirror.refresh(fresh_db, root, "inc_s", state=committed)
    row = mirror.get_incident(fresh_db, "inc_s")
    assert row is not None
    assert (row.state, row.waiting, row.occurrences) == ("S0_BASELINE_CHECK", True, 3)
    (folder / "state.json").unlink()
    mirror.refresh(fresh_db, root, "inc_s")  # without it: the folder is what counts
    row = mirror.get_incident(fresh_db, "inc_s")
    assert row is not None and (row.state, row.waiting) == (None, False)


def test_row_from_bundle_reads_incident_and_state(root: Root) -> None:
    folder = make_bundle(
        root,
        "escalated",
        "inc_a",
        state={"current_state": "S4_QUARANTINE", "not_before": "2026-02-17T03:00:10+00:00"},
        status="escalated",
        error_code="TIMEOUT",
        occurrences=4,
        last_seen="2026-02-17T09:00:00+00:00",
        updated_at="2026-02-17T10:00:00+00:00",
    )
    row = mirror.row_from_bundle(root, "escalated", folder)
    assert row == IncidentRow(
        incident_id="inc_a",
        status="escalated",
        state="S4_QUARANTINE",
        step="amazon_download",
        failure_class="transient",
        error_code="TIMEOUT",
        signature="transient | amazon_download | Network timeout",
        run_id="run_20260217_115959_123456",
        message="Network timeout during receipt download",
        occurrences=4,
        created_at="2026-02-17T03:00:00+00:00",
        updated_at="2026-02-17T10:00:00+00:00",
        last_seen="2026-02-17T09:00:00+00:00",
        bucket="escalated",
        location="error_archive/escalated/inc_a",
        not_before=1771297210.0,
        waiting=False,
        lease_owner=None,
    )


def test_row_from_bundle_defaults_without_state(root: Root) -> None:
    row = mirror.row_from_bundle(root, "inbox", make_bundle(root, "inbox", "inc_b"))
    assert (row.state, row.occurrences, row.error_code, row.not_before) == (None, 1, None, None)
    assert row.last_seen == row.created_at


def test_row_from_bundle_falls_back_to_status_txt(root: Root) -> None:
    folder = make_bundle(root, "inbox", "inc_c")
    doc = incident_doc("inc_c")
    del doc["status"]
    (folder / "incident.json").write_text(json.dumps(doc))
    (folder / "status.txt").write_text("planned\n")
    assert mirror.row_from_bundle(root, "inbox", folder).status == "planned"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"step": ""}, "step"),
        ({"occurrences": 0}, "occurrences"),
        ({"incident_id": "someone_else"}, "incident_id"),
    ],
)
def test_row_from_bundle_names_the_bad_field(
    root: Root, change: dict[str, Any], error: str
) -> None:
    folder = make_bundle(root, "inbox", "inc_d", **change)
    with pytest.raises(InvalidDocument) as info:
        mirror.row_from_bundle(root, "inbox", folder)
    assert info.value.field == error


def test_row_from_bundle_refuses_symlinks_and_bad_json(root: Root, tmp_path: Path) -> None:
    folder = make_bundle(root, "inbox", "inc_e")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(incident_doc("inc_e")))
    (folder / "incident.json").unlink()
    (folder / "incident.json").symlink_to(outside)
    with pytest.raises(UnsafeFile):
        mirror.row_from_bundle(root, "inbox", folder)
    (folder / "incident.json").unlink()
    (folder / "incident.json").write_text('{"incident_id": "inc_e", "incident_id": "x"}')
    with pytest.raises(InvalidDocument, match="duplicate"):
        mirror.row_from_bundle(root, "inbox", folder)


# --- reindex ---------------------------------------------------------------------------


def populate(root: Root) -> None:
    """A root with bundles in every bucket, written and mirrored the way the live path does."""
    specs: list[tuple[str, str, dict[str, Any] | None, dict[str, Any]]] = [
        ("inc_new", "inbox", None, {}),
        (
            "inc_fix",
            "inbox",
            {"current_state": "S1_AIDER_FIX", "run_id": "run_2", "not_before": 1771297210.5},
            {"status": "running", "run_id": "run_2", "created_at": "2026-02-18T00:00:00+00:00"},
        ),
        (
            "inc_wait",
            "inbox",
            {"current_state": "S2_CODEX_FIX", "waiting": True},
            {"status": "running", "occurrences": 3, "last_seen": "2026-02-19T00:00:00+00:00"},
        ),
        (
            "inc_ok",
            "resolved",
            {"current_state": "S_SUCCESS"},
            {"status": "resolved", "error_signature": "code | lint | E501", "step": "lint"},
        ),
        (
            "inc_q",
            "escalated",
            {"current_state": "S4_QUARANTINE"},
            {"status": "escalated", "error_code": "SYNTAX", "failure_class": "code"},
        ),
    ]
    conn = mirror.connect(root.db_path)
    try:
        for incident_id, bucket, state, overrides in specs:
            folder = make_bundle(root, bucket, incident_id, state=state, **overrides)
            row = mirror.row_from_bundle(root, bucket, folder)
            with mirror.write(conn):
                mirror.upsert_incident(conn, row)
                for _ in range(row.occurrences):
                    mirror.bump_error(
                        conn,
                        row.signature,
                        row.failure_class,
                        row.error_code,
                        row.step,
                        row.incident_id,
                        row.last_seen,
                    )
                if state is not None:
                    mirror.save_workstream(
                        conn, row.run_id, incident_id, state["current_state"], json.dumps(state)
                    )
                mirror.add_event(conn, incident_id, "captured", {"bucket": bucket})
    finally:
        conn.close()


def snapshot(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = mirror.connect(db)
    try:
        return {
            "incidents": [
                dataclasses.astuple(r)
                for r in mirror.list_incidents(conn, buckets=("inbox", "resolved", "escalated"))
            ],
            "workstreams": conn.execute(
                "SELECT run_id, ws_id, current_state, metadata_json FROM workstreams ORDER BY ws_id"
            ).fetchall(),
            "runs": conn.execute("SELECT * FROM runs ORDER BY run_id").fetchall(),
            "errors": conn.execute(
                "SELECT signature, failure_class, error_code, step, count, first_seen, last_seen,"
                " last_incident_id FROM errors ORDER BY signature"
            ).fetchall(),
        }
    finally:
        conn.close()


def delete_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def test_reindex_after_deleting_the_database_gives_the_same_rows(root: Root) -> None:
    populate(root)
    before = snapshot(root.db_path)
    assert len(before["incidents"]) == 5 and len(before["workstreams"]) == 4
    delete_db(root.db_path)
    result = mirror.reindex(root)
    assert result.counts == {"inbox": 3, "resolved": 1, "escalated": 1, "rejected": 0}
    assert result.unreadable == [] and result.moved_aside is None
    assert snapshot(root.db_path) == before


def test_reindex_keeps_history_and_budgets_of_a_readable_database(root: Root) -> None:
    populate(root)
    conn = mirror.connect(root.db_path)
    conn.execute("UPDATE errors SET attempts_used = 2, escalations = 1")
    conn.execute("UPDATE incidents SET status = 'stale', bucket = 'resolved'")
    conn.close()
    before_events = 5
    result = mirror.reindex(root)
    assert result.events_kept == before_events
    conn = mirror.connect(root.db_path)
    try:
        assert len(mirror.events_for(conn, "inc_new")) == 1
        assert set(conn.execute("SELECT attempts_used, escalations FROM errors")) == {(2, 1)}
        assert mirror.count_by(conn, "bucket") == {"escalated": 1, "inbox": 3, "resolved": 1}
        assert conn.execute("SELECT value FROM meta WHERE key = 'reindexed_at'").fetchone()
    finally:
        conn.close()


def test_reindex_follows_a_folder_that_moved(root: Root) -> None:
    populate(root)
    os.rename(root.inbox / "inc_new", root.bucket("resolved") / "inc_new")
    mirror.reindex(root)
    conn = mirror.connect(root.db_path)
    row = mirror.get_incident(conn, "inc_new")
    conn.close()
    assert row is not None
    assert (row.bucket, row.location) == ("resolved", "error_archive/resolved/inc_new")


def test_reindex_lists_unreadable_and_rejected_without_moving_them(root: Root) -> None:
    make_bundle(root, "inbox", "good")
    bad = root.inbox / "bad"
    bad.mkdir()
    (bad / "incident.json").write_text("{not json")
    (root.inbox / "stray_file").write_text("x")
    (root.inbox / ".hidden_temp").mkdir()
    rejected = root.rejected / "junk"
    rejected.mkdir()
    (rejected / "reason.txt").write_text(
        "2026-02-17T03:00:00+00:00 incident.json: not valid JSON\n"
    )
    (root.rejected / "noreason").mkdir()

    result = mirror.reindex(root)

    assert result.counts == {"inbox": 1, "resolved": 0, "escalated": 0, "rejected": 2}
    reasons = dict(result.unreadable)
    assert set(reasons) == {"error_inbox/bad", "error_inbox/stray_file"}
    assert "not valid JSON" in reasons["error_inbox/bad"]
    assert result.rejected == [
        ("error_rejected/junk", "incident.json: not valid JSON"),
        ("error_rejected/noreason", "no reason recorded"),
    ]
    assert bad.is_dir() and (root.inbox / "stray_file").is_file() and rejected.is_dir()
    conn = mirror.connect(root.db_path)
    try:
        rows = mirror.list_rejected(conn)
        assert [(r.name, r.rejected_at) for r in rows] == [
            ("junk", "2026-02-17T03:00:00+00:00"),
            ("noreason", None),
        ]
    finally:
        conn.close()


def test_reindex_rebuilds_step_attempts_from_run_files(root: Root) -> None:
    make_bundle(root, "inbox", "inc_r")
    runs = root.runs_dir("inc_r")
    runs.mkdir(parents=True)
    (runs / "attempt_01.json").write_text(
        json.dumps(
            {"incident_id": "inc_r", "iteration": 1, "started_at": "2026-02-17T03:20:00+00:00"}
        )
    )
    (runs / "error_report_attempt_1.json").write_text(
        json.dumps({"step_name": "error_pipeline_baseline", "summary": {"total_issues": 2}})
    )
    (runs / "run_result.json").write_text("{}")
    (runs / "attempt_02.json").write_text("[1, 2]")

    result = mirror.reindex(root)
    again = mirror.reindex(root)

    assert result.step_attempts == again.step_attempts == 2
    assert ("error_runs/inc_r/attempt_02.json", "not a JSON object") in result.unreadable
    conn = mirror.connect(root.db_path)
    try:
        rows = conn.execute(
            "SELECT run_id, ws_id, step_name, label, started_at, result_json FROM step_attempts "
            "ORDER BY label"
        ).fetchall()
        assert not mirror.record_step_attempt(conn, "x", "inc_r", "attempt", "attempt_01")
    finally:
        conn.close()
    assert rows == [
        (
            "run_20260217_115959_123456",
            "inc_r",
            "attempt",
            "attempt_01",
            "2026-02-17T03:20:00+00:00",
            '{"incident_id":"inc_r","iteration":1,"started_at":"2026-02-17T03:20:00+00:00"}',
        ),
        (
            "run_20260217_115959_123456",
            "inc_r",
            "error_pipeline_baseline",
            "error_report_attempt_1",
            None,
            '{"summary":{"total_issues":2}}',
        ),
    ]


def test_reindex_moves_a_corrupt_database_aside_and_rebuilds(root: Root) -> None:
    populate(root)
    before = snapshot(root.db_path)
    delete_db(root.db_path)
    root.db_path.write_bytes(b"garbage" * 1000)
    with pytest.raises(mirror.MirrorCorrupt):
        mirror.connect(root.db_path)

    result = mirror.reindex(root)

    assert result.moved_aside is not None
    aside = Path(result.moved_aside)
    assert aside.name.startswith("mirror.sqlite3.corrupt-")
    assert aside.read_bytes() == b"garbage" * 1000  # kept, never deleted
    assert snapshot(root.db_path) == before


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
    data[page * 3 : page * 6] = b"\xff" * (page * 3)  # clobber interior pages, keep the header
    db.write_bytes(bytes(data))
    with pytest.raises(mirror.MirrorCorrupt, match="incidents reindex"):
        conn = mirror.connect(db)
        try:
            mirror.list_incidents(conn, limit=None)
            mirror.count_by(conn, "status")
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
