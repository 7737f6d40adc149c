"""The per-signature tables: error counts, escalations, budgets, signature history."""

from __future__ import annotations

import sqlite3

from incidents import mirror
from tests.mirror.rows import a_row


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


def test_signature_history_counts_other_incidents_by_bucket(fresh_db: sqlite3.Connection) -> None:
    with mirror.write(fresh_db):
        mirror.upsert_incident(fresh_db, a_row("me"))
        mirror.upsert_incident(fresh_db, a_row("b"))
        mirror.upsert_incident(fresh_db, a_row("c", bucket="resolved"))
        mirror.upsert_incident(fresh_db, a_row("d", bucket="escalated"))
        mirror.upsert_incident(fresh_db, a_row("e", bucket="escalated"))
        mirror.upsert_incident(fresh_db, a_row("f", signature="other", bucket="resolved"))
    history = mirror.signature_history(fresh_db, "sig-a", exclude="me")
    assert history == {"inbox": 1, "resolved": 1, "escalated": 2}
    assert mirror.signature_history(fresh_db, "unknown", exclude="me") == {}


def test_attempts_used_reads_the_cache_refresh_budget_stores(fresh_db: sqlite3.Connection) -> None:
    assert mirror.attempts_used(fresh_db, "sig-a") == 0
    mirror.bump_error(fresh_db, "sig-a", "code", None, "lint", "a", "2026-02-17T03:00:00+00:00")
    mirror.upsert_incident(fresh_db, a_row("a"))
    attempts = [{"started_at": "2026-02-17T03:01:00+00:00"}, {"finished_at": "2026-02-17T03:02"}]
    ctx = {"current_state": "S1_AIDER_FIX", "ai_attempts": attempts}
    mirror.save_workstream(fresh_db, "run_1", "a", mirror.Context.of(ctx))
    assert mirror.attempts_used(fresh_db, "sig-a") == 0  # a cache: not yet refreshed
    assert mirror.refresh_budget(fresh_db, "sig-a") == 2
    assert mirror.attempts_used(fresh_db, "sig-a") == 2


def test_escalations_in_window_start_at_the_last_resume(fresh_db: sqlite3.Connection) -> None:
    for i, ts in enumerate(["2026-02-17T01:00:00+00:00", "2026-02-17T03:00:00+00:00"]):
        assert mirror.add_escalation(fresh_db, f"i{i}", f"sig{i}", "why", ts)
    # a group escalated twice is one runaway: the threshold counts groups
    assert mirror.add_escalation(fresh_db, "i2", "sig1", "why", "2026-02-17T03:05:00+00:00")
    # a close resumed after a crash: recorded once, at its rebuilt quarantine bundle's time
    assert not mirror.add_escalation(fresh_db, "i0", "sig0", "again", "2026-02-17T01:00:30+00:00")
    assert fresh_db.execute("SELECT ts FROM escalations WHERE incident_id = 'i0'").fetchall() == [
        ("2026-02-17T01:00:30+00:00",)
    ]
    start = "2026-02-17T00:00:00+00:00"
    assert mirror.escalations_in_window(fresh_db, start) == 2
    mirror.add_event(fresh_db, None, "resumed", {}, ts="2026-02-17T02:00:00+00:00")
    assert mirror.escalations_in_window(fresh_db, start) == 1
    assert mirror.escalations_in_window(fresh_db, "2026-02-17T03:30:00+00:00") == 0


def test_the_threshold_counts_a_merged_group_once(fresh_db: sqlite3.Connection) -> None:
    """Two signatures a person merged are one group: their escalations count once; a
    third group's counts apart (the positive control)."""
    for incident_id, signature in (("m1", "sig-x"), ("m2", "sig-y"), ("o1", "sig-z")):
        group = "sig-z" if signature == "sig-z" else "sig-x"
        row = a_row(incident_id, signature=signature, group_key=group, bucket="escalated")
        mirror.upsert_incident(fresh_db, row)
        assert mirror.add_escalation(fresh_db, incident_id, signature, "why", "2026-02-17T05:00")
    assert mirror.escalations_since(fresh_db, "2026-02-17T00:00") == 2
