"""The mirror: fast queries and history over the reports root (stdlib only at import).

The folders are the source of truth; this database is derived from them (invariant I5):
`reindex` rebuilds every derivable table from the folders, so the file can be deleted at
any time. This package is the only code that speaks SQL. Its modules:

- `schema`: the tables (numbered migrations) and the event types;
- `db`: connecting, migrating, `write` transactions, errors, and the doors callers use:
  `transaction(root)` and `best_effort(root)` (the only way to write on the side);
- `queries`: incident rows, events, step attempts, workstreams, meta;
- `fleet`: listing incidents (this host's or every host's), each host's last report;
- `dialect`, `pg`, `target`, `settings`: the backend seam (SQLite, or a PostgreSQL
  shared by a fleet: `[mirror] url`);
- `budget`: errors, escalations, budgets, signature history;
- `groups`: who is in a group, and capture's group hints kept in step with it;
- `scan`: what is read from the bundle folders (rows, leases, rejected, run files);
- `rebuild`: `reindex` and the catch-up (`catch_up`, `refresh`, `sync`).

Import the names below from `incidents.mirror`; the modules are its implementation.
"""

from incidents.mirror.budget import (
    Escalation,
    add_escalation,
    attempts_used,
    budget_reset_at,
    budget_used,
    bump_error,
    derive_errors,
    escalations_in_window,
    escalations_since,
    flaky_counts,
    last_reset,
    open_escalation,
    outcomes,
    refresh_budget,
    resolve_escalation,
    signature_history,
)
from incidents.mirror.db import (
    DATABASE_ERRORS,
    Connection,
    MirrorCorrupt,
    MirrorError,
    check_integrity,
    connect,
    rebuild_pending,
    shared,
    warn,
    write,
)
from incidents.mirror.door import best_effort, ensure_derived, transaction
from incidents.mirror.failures import MirrorUnavailable
from incidents.mirror.fleet import HostReport, hosts, list_incidents, note_host
from incidents.mirror.fleetwide import active_pause, publish_pause, resume_all
from incidents.mirror.groups import (
    group_keys,
    group_members,
    groups_of_signature,
    rebuild_hints,
    refresh_hints,
    signature_members,
)
from incidents.mirror.ingest import ingest_incident, ingest_root, root_events_path
from incidents.mirror.live import CatchUp, catch_up, catch_up_root, refresh, sync
from incidents.mirror.queries import (
    Context,
    Event,
    IncidentRow,
    SignatureGroup,
    add_event,
    add_meta,
    add_run,
    get_incident,
    get_meta,
    incident_buckets,
    last_event_ts,
    record_step_attempt,
    save_workstream,
    signature_group,
    upsert_incident,
)
from incidents.mirror.rebuild import ReindexResult, export_history, reindex
from incidents.mirror.scan import agent_holding, row_from_bundle
from incidents.mirror.schema import EVENT_TYPES, MIGRATIONS, MIRROR_BUCKETS

__all__ = [
    "DATABASE_ERRORS",
    "EVENT_TYPES",
    "MIGRATIONS",
    "MIRROR_BUCKETS",
    "CatchUp",
    "Connection",
    "Context",
    "Event",
    "Escalation",
    "HostReport",
    "active_pause",
    "publish_pause",
    "resume_all",
    "hosts",
    "note_host",
    "IncidentRow",
    "MirrorCorrupt",
    "MirrorError",
    "MirrorUnavailable",
    "ReindexResult",
    "SignatureGroup",
    "add_escalation",
    "add_event",
    "add_meta",
    "add_run",
    "agent_holding",
    "attempts_used",
    "best_effort",
    "budget_reset_at",
    "budget_used",
    "last_reset",
    "bump_error",
    "derive_errors",
    "ingest_incident",
    "ingest_root",
    "root_events_path",
    "catch_up",
    "catch_up_root",
    "check_integrity",
    "connect",
    "escalations_in_window",
    "escalations_since",
    "get_incident",
    "get_meta",
    "group_keys",
    "group_members",
    "groups_of_signature",
    "incident_buckets",
    "last_event_ts",
    "list_incidents",
    "open_escalation",
    "record_step_attempt",
    "refresh",
    "rebuild_hints",
    "signature_members",
    "refresh_budget",
    "refresh_hints",
    "reindex",
    "export_history",
    "resolve_escalation",
    "row_from_bundle",
    "save_workstream",
    "shared",
    "ensure_derived",
    "rebuild_pending",
    "signature_group",
    "signature_history",
    "flaky_counts",
    "outcomes",
    "sync",
    "transaction",
    "upsert_incident",
    "warn",
    "write",
]
