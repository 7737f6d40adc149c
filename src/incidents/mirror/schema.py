"""The mirror's schema: its tables (numbered migrations) and the event types it accepts.

Tables:

- derived from the folders, rebuilt by `reindex`: `incidents` (one row per bundle in the
  inbox or an archive bucket, with its group and regression from incident.json), `rejected` (one row per folder in `error_rejected/`),
  `workstreams` (from `state.json`), `runs`, `errors` (counts from the incidents),
  `escalations` (from `decisions.json` and the quarantine bundles' `metadata.json`),
  `events` and `step_attempts` (from each bundle's `events.jsonl` and `.state/events.jsonl`);
- bookkeeping of the mirror itself: `meta`, `event_files` (how far each events.jsonl was
  read); rows imported from a legacy task file (`runs` named `legacy_*`, their step
  attempts and events) are kept by `reindex`: their source was renamed to `.bak`.
"""

from __future__ import annotations

__all__ = ["EVENT_TYPES", "MIGRATIONS", "MIRROR_BUCKETS", "PG_EXTRA", "PG_INSTEAD"]

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
        "flaky",
        "recovered",  # a transient or env failure cleared: resolved with no fix claimed
        "lease_lost",
        "poisoned",
        "legacy_task",
        "legacy_attempt",
        "verdict_mismatch",  # the close found the clean report no longer holds (step/verdict.py)
        "review_fix",  # clean, but the fix needs a person's review (step/review.py)
        "stale_artifacts",  # a new bundle's runs folder held step artifacts: set aside
        "planted_artifacts",  # a fixer wrote step artifacts of later steps: set aside
        "events_capped",  # an events.jsonl reached its cap (incidents.eventlog)
        "group_decision",  # `incidents group merge|split` moved the incident (incidents.groups)
    }
)
MIRROR_BUCKETS = ("inbox", "resolved", "escalated")

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
    # issue 14: how an incident closed (state.json `outcome`: fixed, not_reproduced, ...),
    # counted per signature by `flaky_counts`; read from the stored context, so `reindex`
    # derives it from the folders like the rest of `workstreams`
    """
    CREATE INDEX workstreams_outcome
        ON workstreams (json_extract(metadata_json, '$.error_pipeline.outcome'));
    """,
    # issue 15: events and step attempts are read from the bundles' events.jsonl
    # (incidents.eventlog, mirror.ingest): a line's stable key makes a re-read insert
    # nothing; event_files is bookkeeping (how far each file was read)
    """
    ALTER TABLE events ADD COLUMN event_key TEXT;
    CREATE UNIQUE INDEX events_key ON events (coalesce(incident_id, ''), event_key);
    CREATE TABLE event_files (
        file_id TEXT PRIMARY KEY,
        offset  INTEGER NOT NULL,
        inode   INTEGER NOT NULL
    );
    """,
    # issue 16: groups and regressions, from incident.json (`group`, `regression_of`,
    # `regression_count`): the group key budgets count by (the signature until a person
    # merges or splits), the decisions that made it (a JSON array), and regressions
    """
    ALTER TABLE incidents ADD COLUMN group_key TEXT;
    ALTER TABLE incidents ADD COLUMN group_decisions TEXT NOT NULL DEFAULT '[]'
        CHECK (json_valid(group_decisions));
    ALTER TABLE incidents ADD COLUMN regression_of TEXT;
    ALTER TABLE incidents ADD COLUMN regression_count INTEGER NOT NULL DEFAULT 0;
    UPDATE incidents SET group_key = signature;
    CREATE INDEX incidents_group ON incidents (group_key);
    CREATE INDEX incidents_regression ON incidents (regression_of);
    """,
    # issue 19: a fleet shares one PostgreSQL mirror; every incident row says which host
    # and which root hold its bundle (on SQLite, one file per root, they are the same on
    # every row). On PostgreSQL every other table is keyed per host too (PG_EXTRA).
    """
    ALTER TABLE incidents ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE incidents ADD COLUMN root TEXT NOT NULL DEFAULT '';
    """,
    # issue 19: each host's last report (a catch-up: a watcher's pass, a status), and why
    # it last worked without the shared mirror; doctor names the hosts gone silent
    """
    CREATE TABLE hosts (
        host      TEXT NOT NULL,
        root      TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        degraded  TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (host, root)
    );
    """,
    # issue 19: what a fleet decides together. `fleet_pause`: the global pause (a row
    # stands until a resume on any host); `decisions`: a human decision made on one host
    # about a bundle another host holds, applied by that host on its next pass. History,
    # not derived from any root's folders: `reindex` keeps them.
    """
    CREATE TABLE fleet_pause (
        id         INTEGER PRIMARY KEY,
        reason     TEXT NOT NULL,
        since      REAL NOT NULL,
        by_whom    TEXT NOT NULL,
        host       TEXT NOT NULL,
        resumed_at TEXT
    );
    CREATE TABLE decisions (
        id          INTEGER PRIMARY KEY,
        host        TEXT NOT NULL,
        incident_id TEXT NOT NULL,
        kind        TEXT NOT NULL,
        args_json   TEXT NOT NULL CHECK (json_valid(args_json)),
        decided_at  TEXT NOT NULL,
        decided_by  TEXT NOT NULL,
        applied_at  TEXT,
        outcome     TEXT
    );
    CREATE INDEX decisions_pending ON decisions (host, applied_at);
    """,
    # issue 19: incident leases as rows (`[watch] leases = "postgres"`), for watchers of
    # several hosts over one inbox on a network filesystem, where file locks cannot be
    # trusted; the same fields and fencing as the lease files (incidents.leases)
    """
    CREATE TABLE leases (
        incident_id TEXT PRIMARY KEY,
        owner       TEXT NOT NULL,
        generation  INTEGER NOT NULL,
        expires_at  REAL NOT NULL,
        pid         INTEGER NOT NULL,
        host        TEXT NOT NULL,
        agent       TEXT
    );
    """,
    # issue 18 (review): an event's id is never given again. Without AUTOINCREMENT SQLite
    # numbers a row max(id) + 1, so the ids of the last events, deleted with an incident set
    # aside (`forget_incident`), went to the next events, and a stream client resuming after
    # one of them (`incidents serve`, Last-Event-ID) skipped those
    """
    CREATE TABLE events_seq (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        ts           TEXT NOT NULL,
        incident_id  TEXT,
        event_type   TEXT NOT NULL,
        payload_json TEXT NOT NULL CHECK (json_valid(payload_json)),
        event_key    TEXT
    );
    INSERT INTO events_seq (id, ts, incident_id, event_type, payload_json, event_key)
        SELECT id, ts, incident_id, event_type, payload_json, event_key FROM events ORDER BY id;
    DROP TABLE events;
    ALTER TABLE events_seq RENAME TO events;
    CREATE INDEX events_incident ON events (incident_id);
    CREATE INDEX events_type_ts ON events (event_type, ts);
    CREATE UNIQUE INDEX events_key ON events (coalesce(incident_id, ''), event_key);
    """,
)

# What a migration adds on PostgreSQL after its common text (by index in MIGRATIONS): the
# tables a host rebuilds from its root (`reindex --host`) carry the host that wrote each
# row (the session's `incidents.host`, set by `mirror.pg` on every connection), and the
# per-root bookkeeping (meta, event_files, rejected) is keyed by host.
PG_EXTRA: dict[int, str] = {
    4: """
    CREATE INDEX incidents_host ON incidents (host, bucket, created_at);
    ALTER TABLE incidents ALTER COLUMN host SET DEFAULT current_setting('incidents.host');
    ALTER TABLE incidents ALTER COLUMN root SET DEFAULT current_setting('incidents.root');
    ALTER TABLE rejected ADD COLUMN host TEXT NOT NULL DEFAULT current_setting('incidents.host');
    ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT current_setting('incidents.host');
    ALTER TABLE workstreams ADD COLUMN host TEXT NOT NULL DEFAULT current_setting('incidents.host');
    ALTER TABLE step_attempts ADD COLUMN host TEXT NOT NULL DEFAULT current_setting('incidents.host');
    ALTER TABLE events ADD COLUMN host TEXT NOT NULL DEFAULT current_setting('incidents.host');
    ALTER TABLE escalations ADD COLUMN host TEXT NOT NULL DEFAULT current_setting('incidents.host');
    ALTER TABLE meta ADD COLUMN host TEXT NOT NULL DEFAULT current_setting('incidents.host');
    ALTER TABLE event_files ADD COLUMN host TEXT NOT NULL DEFAULT current_setting('incidents.host');
    ALTER TABLE meta DROP CONSTRAINT meta_pkey, ADD PRIMARY KEY (host, key);
    ALTER TABLE event_files DROP CONSTRAINT event_files_pkey, ADD PRIMARY KEY (host, file_id);
    ALTER TABLE rejected DROP CONSTRAINT rejected_pkey, ADD PRIMARY KEY (host, name);
    DROP INDEX events_key;
    CREATE UNIQUE INDEX events_key ON events (host, coalesce(incident_id, ''), event_key);
    CREATE INDEX events_host ON events (host);
    CREATE INDEX escalations_host ON escalations (host);
    CREATE INDEX workstreams_host ON workstreams (host);
    """,
}

# What PostgreSQL runs instead of a migration's common text (by index in MIGRATIONS). The
# events table's rebuild with AUTOINCREMENT is SQLite's: a PostgreSQL sequence never gives
# an id twice, and the rebuild would drop the `host` column PG_EXTRA added.
PG_INSTEAD: dict[int, str] = {8: ""}
