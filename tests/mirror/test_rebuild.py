"""Rebuilding the mirror from the folders: refresh, reindex."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from incidents import eventlog, mirror
from incidents.layout import Root
from tests.mirror.rows import delete_db, make_bundle


def test_refresh_takes_the_state_its_writer_just_committed(
    root: Root, fresh_db: sqlite3.Connection
) -> None:
    """The step service hands over the context it committed instead of having state.json
    read back; incident.json is still read (a capture may have changed it)."""
    folder = make_bundle(root, "inbox", "inc_s", state={"current_state": "S_PLANNED"},
                         occurrences=3)  # fmt: skip
    committed = {"current_state": "S0_BASELINE_CHECK", "waiting_for_input": True}
    mirror.refresh(fresh_db, root, "inc_s", state=mirror.Context.of(committed))
    row = mirror.get_incident(fresh_db, "inc_s")
    assert row is not None
    assert (row.state, row.waiting, row.occurrences) == ("S0_BASELINE_CHECK", True, 3)
    (folder / "state.json").unlink()
    mirror.refresh(fresh_db, root, "inc_s")  # without it: the folder is what counts
    row = mirror.get_incident(fresh_db, "inc_s")
    assert row is not None and (row.state, row.waiting) == (None, False)


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
                    mirror.save_workstream(conn, row.run_id, incident_id, mirror.Context.of(state))
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


def test_reindex_after_deleting_the_database_gives_the_same_rows(root: Root) -> None:
    populate(root)
    before = snapshot(root.db_path)
    assert len(before["incidents"]) == 5 and len(before["workstreams"]) == 4
    delete_db(root.db_path)
    result = mirror.reindex(root)
    assert result.counts == {"inbox": 3, "resolved": 1, "escalated": 1, "rejected": 0}
    assert result.unreadable == [] and result.moved_aside is None
    assert snapshot(root.db_path) == before


def test_reindex_exports_an_older_versions_history_before_it_rebuilds(root: Root) -> None:
    """An older version kept events and step attempts only in the mirror (populate writes
    them the way it did): the first reindex appends them to each incident's events.jsonl
    (or the root's, for an incident whose folder is gone) before it clears the tables,
    so they survive it, and a later deletion of the database too."""
    populate(root)
    conn = mirror.connect(root.db_path)
    with mirror.write(conn):
        mirror.record_step_attempt(
            conn, "run_2", "inc_fix", "error_pipeline", "r1", result={"n": 1}
        )
        mirror.add_event(conn, "inc_gone", "archived", {"bucket": "resolved"})
        mirror.add_event(conn, None, "build_paused", {"reason": "x"})
    before = _journal_tables(conn)
    conn.close()
    assert len(before["events"]) == 7 and len(before["step_attempts"]) == 1

    result = mirror.reindex(root)

    assert result.events_kept == 7 and result.step_attempts == 1
    assert (root.inbox / "inc_new" / "events.jsonl").is_file()
    assert (root.state / "events.jsonl").is_file()  # inc_gone's and the pause's
    conn = mirror.connect(root.db_path)
    assert _journal_tables(conn) == before
    conn.close()
    mirror.reindex(root)  # exported once: nothing doubled
    delete_db(root.db_path)
    mirror.reindex(root)
    conn = mirror.connect(root.db_path)
    try:
        assert _journal_tables(conn) == before
    finally:
        conn.close()


def _journal_tables(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "events": sorted(conn.execute(
            "SELECT ts, incident_id, event_type, payload_json FROM events"
        ).fetchall(), key=repr),
        "step_attempts": sorted(conn.execute(
            "SELECT run_id, ws_id, step_name, label, started_at, finished_at, result_json "
            "FROM step_attempts"
        ).fetchall(), key=repr),
    }  # fmt: skip


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
        rows = conn.execute("SELECT name, rejected_at FROM rejected ORDER BY name").fetchall()
        assert rows == [
            ("junk", "2026-02-17T03:00:00+00:00"),
            ("noreason", None),
        ]
    finally:
        conn.close()


@pytest.mark.parametrize("backend", ["sqlite"])  # a corrupt file: SQLite's own failure
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


def test_sync_writes_an_incidents_progress_in_one_go(root: Root) -> None:
    make_bundle(root, "inbox", "inc_y")
    state = {"run_id": "run_1", "current_state": "S1_AIDER_FIX", "waiting": True}
    folder = root.inbox / "inc_y"
    eventlog.append(folder / eventlog.EVENTS, [
        eventlog.event("captured", "2026-02-17T03:00:00+00:00", "inc_y", "captured", {}),
        eventlog.step_attempt("s1.r", "2026-02-17T03:00:01+00:00", "inc_y", "run_1",
                              "error_pipeline", "error_report_attempt_1", {"total_issues": 1}),
        eventlog.event("s1.0", "2026-02-17T03:00:01+00:00", "inc_y", "state_transition",
                       {"to": "S1_AIDER_FIX"}),
    ])  # fmt: skip
    conn = mirror.connect(root.db_path)
    try:
        mirror.sync(conn, root, "inc_y", mirror.Context.of(state))
        row = mirror.get_incident(conn, "inc_y")
        assert row is not None and (row.state, row.waiting) == ("S1_AIDER_FIX", True)
        assert conn.execute("SELECT ws_id, current_state FROM workstreams").fetchall() == [
            ("inc_y", "S1_AIDER_FIX")
        ]
        assert conn.execute(
            "SELECT step_name, label, result_json FROM step_attempts"
        ).fetchall() == [("error_pipeline", "error_report_attempt_1", '{"total_issues":1}')]
        events = conn.execute("SELECT event_type FROM events ORDER BY id").fetchall()
        assert events == [("captured",), ("state_transition",)]
        mirror.sync(conn, root, "inc_y", None)  # reads the folder
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (2,)  # once each
        row = mirror.get_incident(conn, "inc_y")
        assert row is not None and row.state is None
    finally:
        conn.close()


def test_catch_up_keeps_its_hints_until_its_own_commit(root: Root) -> None:
    """A hint deleted inside a caller's transaction would be lost with that transaction:
    catch_up refuses to run in one, and the watcher's door runs it on its own."""
    root.ensure()
    mirror.reindex(root)  # a derived (empty) mirror: the door has nothing to rebuild
    make_bundle(root, "inbox", "inc_h")
    hint = root.state / "dirty" / "inc_h"
    hint.touch()
    with (
        pytest.raises(mirror.MirrorError, match="outside a transaction"),
        mirror.transaction(root) as conn,
    ):
        mirror.catch_up(conn, root)
    assert hint.exists()  # nothing consumed
    errors: list[BaseException] = []
    result = mirror.catch_up_root(root, errors.append)
    assert errors == [] and result is not None and result.updated == ["inc_h"]
    assert not hint.exists()
    conn = mirror.connect(root.db_path)
    try:
        assert mirror.get_incident(conn, "inc_h") is not None
    finally:
        conn.close()
