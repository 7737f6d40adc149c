"""Incident rows, events, step attempts and workstreams."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from incidents import mirror
from incidents.mirror import IncidentRow
from tests.mirror.rows import a_row


def events_of(conn: sqlite3.Connection, incident_id: str) -> list[tuple[int, str, str, Any]]:
    """An incident's events, oldest first: (id, ts, event_type, payload)."""
    rows = conn.execute(
        "SELECT id, ts, event_type, payload_json FROM events WHERE incident_id = ? ORDER BY id",
        (incident_id,),
    )
    return [(i, ts, et, json.loads(p)) for i, ts, et, p in rows]


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


def test_events_round_trip_in_order(fresh_db: sqlite3.Connection) -> None:
    mirror.add_event(fresh_db, "a", "captured", {"n": 1})
    mirror.add_event(fresh_db, "a", "state_transition", {"from": "S_INIT", "to": "S0"})
    mirror.add_event(fresh_db, "b", "captured", {})
    events = events_of(fresh_db, "a")
    assert [(event_type, payload) for _, _, event_type, payload in events] == [
        ("captured", {"n": 1}),
        ("state_transition", {"from": "S_INIT", "to": "S0"}),
    ]
    assert events[0][1].endswith("+00:00") and events[0][0] < events[1][0]
    assert len([e for e in events if e[2] == "captured"]) == 1
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


def test_save_workstream_stores_context_and_mirrors_state(fresh_db: sqlite3.Connection) -> None:
    mirror.upsert_incident(fresh_db, a_row("a"))
    ctx = {"run_id": "run_1", "workstream_id": "a", "current_state": "S1_AIDER_FIX", "waiting": 1}
    mirror.save_workstream(fresh_db, "run_1", "a", mirror.Context.of(ctx))
    ws = fresh_db.execute("SELECT current_state, metadata_json FROM workstreams").fetchall()
    assert len(ws) == 1 and ws[0][0] == "S1_AIDER_FIX"
    assert json.loads(ws[0][1]) == {"error_pipeline": ctx}
    row = mirror.get_incident(fresh_db, "a")
    assert row is not None and row.state == "S1_AIDER_FIX" and row.waiting
