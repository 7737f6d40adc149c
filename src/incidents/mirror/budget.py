"""The per-signature tables: errors (capture counts), escalations and budgets (seed 003).

A signature's budget use is *derived*: the AI attempts recorded in the `state.json` of
every incident with that signature (the `workstreams` rows, rebuilt by `reindex`), started
after the signature's last reset (the latest `resolved_at` of its escalations). Counting
from committed contexts makes it exactly-once without a counter to keep in step, and
`reindex` rebuilds the workstreams from `state.json`; `errors.attempts_used` is a cache
of it for display, refreshed whenever a tick reads the budget (`refresh_budget`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from incidents.mirror.db import translating, write
from incidents.mirror.queries import last_event_ts

__all__ = [
    "Escalation",
    "add_escalation",
    "attempts_used",
    "budget_reset_at",
    "budget_used",
    "bump_error",
    "derive_errors",
    "note_incident",
    "escalations_in_window",
    "escalations_since",
    "last_reset",
    "open_escalation",
    "refresh_budget",
    "resolve_escalation",
    "signature_history",
]


@translating
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
            count = errors.count + 1,
            first_seen = min(errors.first_seen, excluded.first_seen),
            failure_class = CASE WHEN excluded.last_seen >= errors.last_seen
                                 THEN excluded.failure_class ELSE errors.failure_class END,
            error_code = CASE WHEN excluded.last_seen >= errors.last_seen
                              THEN excluded.error_code ELSE errors.error_code END,
            step = CASE WHEN excluded.last_seen >= errors.last_seen THEN excluded.step ELSE errors.step END,
            last_incident_id = CASE WHEN excluded.last_seen >= errors.last_seen
                                    THEN excluded.last_incident_id ELSE errors.last_incident_id END,
            last_seen = max(errors.last_seen, excluded.last_seen)
        """,
        (signature, failure_class, error_code, step, ts, ts, incident_id),
    )


_BUDGET_SQL = """
    SELECT count(*) FROM incidents AS i
    JOIN workstreams AS w ON w.ws_id = i.incident_id,
         json_each(w.metadata_json, '$.error_pipeline.ai_attempts') AS a
    WHERE i.group_key = ? AND i.incident_id != ?
      AND coalesce(json_extract(a.value, '$.started_at'),
                   json_extract(a.value, '$.finished_at'), '') > ?
"""


@translating
def budget_reset_at(conn: sqlite3.Connection, signature: str) -> str | None:
    """When a human last reset the budget of the group `signature` names (resolve-escalation
    of any incident in it), or None."""
    row = conn.execute(
        "SELECT max(resolved_at) FROM escalations WHERE signature = ? OR incident_id IN "
        "(SELECT incident_id FROM incidents WHERE group_key = ?)",
        (signature, signature),
    ).fetchone()
    return str(row[0]) if row and row[0] else None


@translating
def last_reset(conn: sqlite3.Connection, signature: str) -> tuple[str, str | None] | None:
    """The last human decision that reset the group `signature` names: (when, guidance)."""
    row = conn.execute(
        "SELECT resolved_at, guidance FROM escalations WHERE resolved_at IS NOT NULL AND "
        "(signature = ? OR incident_id IN (SELECT incident_id FROM incidents WHERE group_key = ?)) "
        "ORDER BY resolved_at DESC LIMIT 1",
        (signature, signature),
    ).fetchone()
    return (str(row[0]), None if row[1] is None else str(row[1])) if row else None


@translating
def budget_used(
    conn: sqlite3.Connection, signature: str, *, exclude: str = "", since: str | None = None
) -> int:
    """AI attempts made on the group `signature` names (its signature's until a person
    merges or splits: `incidents.grouping`) since its last reset, over every incident in it
    (`exclude`: an incident whose own attempts the caller counts from its context; `since`:
    the reset as the caller knows it, by default the mirror's `budget_reset_at`)."""
    if since is None:
        since = budget_reset_at(conn, signature) or ""
    row = conn.execute(_BUDGET_SQL, (signature, exclude, since)).fetchone()
    return int(row[0]) if row else 0


@translating
def refresh_budget(conn: sqlite3.Connection, signature: str) -> int:
    """Store `budget_used(signature)` in `errors.attempts_used` (a cache; returns it)."""
    used = budget_used(conn, signature)
    conn.execute("UPDATE errors SET attempts_used = ? WHERE signature = ?", (used, signature))
    return used


_DERIVE_ERRORS = """
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
        FROM incidents {where}
        WINDOW w AS (PARTITION BY signature)
    ) AS ranked WHERE rank = 1
    ON CONFLICT (signature) DO UPDATE SET
        failure_class = excluded.failure_class, error_code = excluded.error_code,
        step = excluded.step, count = excluded.count, first_seen = excluded.first_seen,
        last_seen = excluded.last_seen, last_incident_id = excluded.last_incident_id
"""


_NOTE_ROW = """
    INSERT INTO errors (signature, failure_class, error_code, step, count, first_seen,
                        last_seen, last_incident_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (signature) DO UPDATE SET
        count = errors.count + excluded.count,
        first_seen = CASE WHEN errors.first_seen = '' THEN excluded.first_seen
                          ELSE min(errors.first_seen, excluded.first_seen) END,
        failure_class = CASE WHEN (excluded.last_seen, excluded.last_incident_id)
                                  >= (errors.last_seen, coalesce(errors.last_incident_id, ''))
                             THEN excluded.failure_class ELSE errors.failure_class END,
        error_code = CASE WHEN (excluded.last_seen, excluded.last_incident_id)
                               >= (errors.last_seen, coalesce(errors.last_incident_id, ''))
                          THEN excluded.error_code ELSE errors.error_code END,
        step = CASE WHEN (excluded.last_seen, excluded.last_incident_id)
                         >= (errors.last_seen, coalesce(errors.last_incident_id, ''))
                    THEN excluded.step ELSE errors.step END,
        last_incident_id = CASE WHEN (excluded.last_seen, excluded.last_incident_id)
                                     >= (errors.last_seen, coalesce(errors.last_incident_id, ''))
                                THEN excluded.last_incident_id ELSE errors.last_incident_id END,
        last_seen = max(errors.last_seen, excluded.last_seen)
"""


@translating
def note_incident(conn: sqlite3.Connection, row: Any, old: Any | None) -> None:
    """Keep the signature's `errors` row as `derive_errors` would make it after `row`
    (an `IncidentRow`) replaced `old`, without reading the signature's other incidents:
    captures only add occurrences and move `last_seen` forward. Anything else (an
    incident removed, a changed signature or failure class) is derived again in full."""
    fields = ("occurrences", "last_seen", "created_at", "failure_class", "error_code", "step")
    if old is not None and all(getattr(old, f) == getattr(row, f) for f in fields):
        return  # a change of state, status or bucket: nothing `errors` shows
    grows = old is None or (
        old.signature == row.signature
        and (old.failure_class, old.error_code, old.step, old.created_at)
        == (row.failure_class, row.error_code, row.step, row.created_at)
        and row.occurrences >= old.occurrences
        and row.last_seen >= old.last_seen
    )
    if not grows:
        derive_errors(conn, [row.signature, *([old.signature] if old else [])])
        return
    added = row.occurrences - (old.occurrences if old else 0)
    conn.execute(
        _NOTE_ROW,
        (row.signature, row.failure_class, row.error_code, row.step, added, row.created_at,
         row.last_seen, row.incident_id),
    )  # fmt: skip


@translating
def derive_errors(
    conn: sqlite3.Connection, signatures: Sequence[str] | None = None, *, budget: bool = True
) -> None:
    """The `errors` rows of `signatures` (None: all) as the other tables make them: capture
    counts from the incidents' occurrences, escalations from their records, the budget
    cache from the workstreams. Live writers and `reindex` both call this, so the table
    never depends on the order things happened in (invariant I5)."""
    with write(conn):
        if signatures is None:
            wanted = [str(r[0]) for r in conn.execute(
                "SELECT signature FROM incidents UNION SELECT signature FROM escalations "
                "UNION SELECT signature FROM errors"
            )]  # fmt: skip
            conn.execute(
                "UPDATE errors SET count = 0, first_seen = '', last_seen = '', "
                "last_incident_id = NULL"
            )
            conn.execute(_DERIVE_ERRORS.format(where=""))
        else:
            wanted = sorted(set(signatures))
            for signature in wanted:
                conn.execute(
                    "UPDATE errors SET count = 0, first_seen = '', last_seen = '', "
                    "last_incident_id = NULL WHERE signature = ?",
                    (signature,),
                )
                conn.execute(_DERIVE_ERRORS.format(where="WHERE signature = ?"), (signature,))
        for signature in wanted:
            conn.execute(
                "UPDATE errors SET escalations = (SELECT count(*) FROM escalations AS e "
                "WHERE e.signature = errors.signature) WHERE signature = ?",
                (signature,),
            )
            if budget:
                refresh_budget(conn, signature)
        conn.execute("DELETE FROM errors WHERE count = 0 AND escalations = 0")


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


@translating
def open_escalation(conn: sqlite3.Connection, incident_id: str) -> Escalation | None:
    """The incident's escalation record not yet resolved by a human (at most one)."""
    row = conn.execute(
        f"{_SELECT_ESCALATION} WHERE incident_id = ? AND resolved_at IS NULL ORDER BY id DESC",
        (incident_id,),
    ).fetchone()
    return Escalation(*row) if row else None


@translating
def add_escalation(
    conn: sqlite3.Connection, incident_id: str, signature: str, reason: str, ts: str
) -> bool:
    """Record an escalation once: False when the incident already has an open one (a
    close resumed after a crash). Counts it on the signature's `errors` row."""
    with write(conn):
        found = open_escalation(conn, incident_id)
        if found is not None:
            # a close resumed after a crash rebuilt the quarantine bundle: the record's
            # time is its metadata.json's, as `reindex` reads it
            conn.execute("UPDATE escalations SET ts = ? WHERE id = ?", (ts, found.id))
            return False
        conn.execute(
            "INSERT INTO escalations (ts, incident_id, signature, reason) VALUES (?, ?, ?, ?)",
            (ts, incident_id, signature, reason),
        )
        derive_errors(conn, [signature])
    return True


@translating
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
        derive_errors(conn, [signature])
        return max(1, cur.rowcount)


@translating
def escalations_since(conn: sqlite3.Connection, ts: str) -> int:
    """The groups escalated at or after `ts` (the global threshold's window): a failure
    that escalates again, or whose incident escalated twice, is one runaway, not many. An
    escalation's group is its incident's (a merge joins signatures), else its signature."""
    return int(
        conn.execute(
            "SELECT count(DISTINCT COALESCE(i.group_key, e.signature)) FROM escalations e "
            "LEFT JOIN incidents i ON i.incident_id = e.incident_id WHERE e.ts >= ?",
            (ts,),
        ).fetchone()[0]
    )


@translating
def escalations_in_window(conn: sqlite3.Connection, start: str) -> int:
    """Escalations recorded since `start`, or since the last `resumed` event when that is
    later (a human who resumed has seen the escalations before it)."""
    resumed = last_event_ts(conn, "resumed")
    return escalations_since(conn, max(start, resumed) if resumed else start)


@translating
def signature_history(conn: sqlite3.Connection, signature: str, *, exclude: str) -> dict[str, int]:
    """How many incidents of the group `signature` names (other than `exclude`) each
    bucket holds."""
    rows = conn.execute(
        "SELECT bucket, count(*) FROM incidents WHERE group_key = ? "
        "AND incident_id != ? GROUP BY bucket",
        (signature, exclude),
    ).fetchall()
    return {str(bucket): int(n) for bucket, n in rows}


@translating
def attempts_used(conn: sqlite3.Connection, signature: str) -> int:
    """The budget use last stored for `signature` by `refresh_budget` (0 when unknown)."""
    row = conn.execute(
        "SELECT attempts_used FROM errors WHERE signature = ?", (signature,)
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


_OUTCOME = "json_extract(w.metadata_json, '$.error_pipeline.outcome')"


@translating
def flaky_counts(
    conn: sqlite3.Connection, signatures: Sequence[str] | None = None
) -> dict[str, int]:
    """Per signature, how many incidents closed as not reproduced (flaky): a failure that
    passed with no change to any target. Only signatures with at least one."""
    sql = (
        f"SELECT i.signature, count(*) FROM workstreams w JOIN incidents i "
        f"ON i.incident_id = w.ws_id WHERE {_OUTCOME} = 'not_reproduced'"
    )
    params: list[str] = []
    if signatures is not None:
        wanted = list(dict.fromkeys(signatures))
        if not wanted:
            return {}
        sql += f" AND i.signature IN ({', '.join('?' * len(wanted))})"
        params = wanted
    rows = conn.execute(sql + " GROUP BY i.signature", params).fetchall()
    return {str(sig): int(n) for sig, n in rows}


@translating
def outcomes(conn: sqlite3.Connection, incident_ids: Sequence[str]) -> dict[str, str]:
    """incident id -> how it closed (fixed, not_reproduced, changed_before_check, escalated),
    for the closed ones among `incident_ids` whose context says."""
    out: dict[str, str] = {}
    ids = list(dict.fromkeys(incident_ids))
    for start in range(0, len(ids), 500):  # SQLite's bound-parameter limit
        chunk = ids[start : start + 500]
        rows = conn.execute(
            f"SELECT w.ws_id, {_OUTCOME} FROM workstreams w "
            f"WHERE w.ws_id IN ({', '.join('?' * len(chunk))}) AND {_OUTCOME} IS NOT NULL",
            chunk,
        ).fetchall()
        out.update({str(i): str(o) for i, o in rows})
    return out
