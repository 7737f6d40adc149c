"""A person's decisions about groups: `incidents group merge` and `incidents group split`.

A decision is written into every bundle it moves (incident.json `group`: the new key and
the decisions so far, each with who, when, why, from and to), one atomic write per
bundle under the incident's lock, so `reindex` rebuilds the mirror's group columns and
capture's hints (`incidents.grouping`) from the folders. One decision at a time (a
`groups` lock), and the moved group's capture lock is held while its bundles are
rewritten, so no capture of it opens or folds an incident meanwhile. A merge a crash
interrupted is finished by giving it again: the incidents still in the old group move.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from incidents import clock, eventlog, grouping, mirror, store
from incidents.errors import UsageError
from incidents.layout import Root, validate_id
from incidents.locks import flocked
from incidents.redact import redact
from incidents.signature import signature_key

__all__ = ["check_reason", "group_record", "merge", "rebuild_hints", "resolve_side", "split"]

_HEX_KEY = re.compile(r"[0-9a-f]{24}")


def _who() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get("USER") or f"uid {os.getuid()}"


def check_reason(text: str | None, command: str) -> str:
    """The decision's reason, redacted; a missing or empty one is a UsageError."""
    reason = redact((text or "").strip())
    if not reason:
        raise UsageError(f"group {command}: --reason is required (why is this decided?)")
    if len(reason) > 2000:
        raise UsageError(f"group {command}: --reason is at most 2000 characters")
    return reason


def _open(root: Root) -> sqlite3.Connection:
    conn = mirror.connect(root.db_path)
    mirror.catch_up(conn, root)
    return conn


def _decision(kind: str, source: str, target: str, reason: str) -> dict[str, Any]:
    return {"kind": kind, "at": clock.iso_now(), "by": _who(), "reason": reason,
            "from": source, "to": target}  # fmt: skip


def resolve_side(conn: sqlite3.Connection, text: str, what: str) -> str:
    """The group key `text` names: an incident id (its group), a group key, a signature
    (the group its captures join), or the 24-hex `signature_key` of either."""
    text = text.strip()
    if not text:
        raise UsageError(f"group: {what} is empty")
    row = mirror.get_incident(conn, text)
    if row is not None:
        return row.group_key
    if conn.execute("SELECT 1 FROM incidents WHERE group_key = ? LIMIT 1", (text,)).fetchone():
        return text
    rows = conn.execute(
        "SELECT group_key, group_decisions FROM incidents WHERE signature = ? "
        "ORDER BY created_at DESC, incident_id DESC",
        (text,),
    ).fetchall()
    for group, decisions in rows:
        if not grouping.detached(json.loads(decisions)):
            return str(group)
    if rows:  # every incident of the signature was split from it: its captures' own group
        return text
    if _HEX_KEY.fullmatch(text):
        for group, signature in conn.execute(
            "SELECT DISTINCT group_key, signature FROM incidents"
        ).fetchall():
            if signature_key(group) == text:
                return str(group)
            if signature_key(signature) == text:
                return resolve_side(conn, signature, what)
    raise UsageError(f"group: {what} {text[:200]!r}: no incident, group or signature of that name")


def _rewrite(root: Root, incident_id: str, group: str, decision: dict[str, Any]) -> None:
    """One bundle joins `group` with `decision` recorded, in one atomic write."""
    with store.incident_lock(root, incident_id):
        _, folder = root.locate(incident_id)
        doc = store.read_incident(folder)
        decisions = [*grouping.decisions_of(doc), decision]
        store.save_incident(folder, {**doc, "group": {"key": group, "decisions": decisions}})
        eventlog.append_events(
            folder, incident_id, [("group_decision", decision)], eventlog.unique_key("g")
        )
    store.mark_dirty(root, incident_id)


def _members(conn: sqlite3.Connection, group: str) -> list[tuple[str, str, bool]]:
    """(incident id, signature, split from its signature) of every incident in `group`."""
    return [
        (str(i), str(s), grouping.detached(json.loads(d)))
        for i, s, d in conn.execute(
            "SELECT incident_id, signature, group_decisions FROM incidents WHERE group_key = ? "
            "ORDER BY created_at, incident_id",
            (group,),
        ).fetchall()
    ]


def _capture_lock(root: Root, group: str) -> Any:
    return flocked(store.lock_path(root, f"sig-{signature_key(group)}"))


def merge(root: Root, into: str, source_text: str, reason: str | None) -> dict[str, Any]:
    """From now on the group `source_text` names belongs to the group `into` names: every
    incident in it (open and closed) moves, and captures of its signatures join `into`'s
    group. Returns the decision with the incidents moved (`incidents`)."""
    reason = check_reason(reason, "merge")
    with flocked(store.lock_path(root, "groups")):
        conn = _open(root)
        try:
            target = resolve_side(conn, into, "SIG_A")
            source = resolve_side(conn, source_text, "SIG_B")
            if target == source:
                raise UsageError(
                    f"group merge: {source_text[:200]!r} is already in the group of "
                    f"{into[:200]!r} ({target[:200]!r}): nothing to merge"
                )
            decision = _decision("merge", source, target, reason)
            with _capture_lock(root, source):
                mirror.catch_up(conn, root)  # captures that finished before the lock
                members = _members(conn, source)
                for incident_id, _, _ in members:
                    _rewrite(root, incident_id, target, decision)
                signatures = sorted({s for _, s, split in members if not split})
                for signature in signatures:
                    grouping.write_alias(root, signature, target, decision)
            mirror.catch_up(conn, root)
            _refresh_hints(root, conn, target)
            _refresh_hints(root, conn, source)
            mirror.derive_errors(conn, sorted({target, source, *signatures}))
        finally:
            conn.close()
    return {**decision, "incidents": [m[0] for m in members], "signatures": signatures}


def split(root: Root, incident_id: str, reason: str | None) -> dict[str, Any]:
    """The incident leaves its group and starts its own (`split:<id>`): its fixer budget
    and regressions count apart, and captures of its signature no longer fold into it
    (they stay with the group it left)."""
    reason = check_reason(reason, "split")
    validate_id(incident_id)
    with flocked(store.lock_path(root, "groups")):
        conn = _open(root)
        try:
            row = mirror.get_incident(conn, incident_id)
            if row is None:
                raise UsageError(f"group split: no incident {incident_id!r} under {root.path}")
            new = grouping.split_key(incident_id)
            if row.group_key == new:
                raise UsageError(f"group split: {incident_id} is already a group of its own")
            decision = _decision("split", row.group_key, new, reason)
            with _capture_lock(root, row.group_key):
                _rewrite(root, incident_id, new, decision)
            mirror.catch_up(conn, root)
            _refresh_hints(root, conn, row.group_key)
            _refresh_hints(root, conn, new)
            mirror.derive_errors(conn, sorted({row.signature, row.group_key}))
        finally:
            conn.close()
    return {**decision, "incidents": [incident_id], "signatures": []}


# --- capture's hints, from the mirror ------------------------------------------------------


def _closed_ts(updated_at: str) -> float:
    try:
        return datetime.fromisoformat(updated_at).timestamp()
    except ValueError:
        return 0.0


def _refresh_hints(root: Root, conn: sqlite3.Connection, group: str) -> None:
    """The group's open incident and latest resolved one, as the mirror sees them now."""
    current = grouping.read_open(root, group)
    open_ids = [
        str(r[0])
        for r in conn.execute(
            "SELECT incident_id FROM incidents WHERE group_key = ? AND bucket = 'inbox' "
            "ORDER BY created_at DESC, incident_id DESC",
            (group,),
        ).fetchall()
    ]
    if current not in open_ids:
        grouping.write_open(root, group, open_ids[0] if open_ids else None)
    latest = conn.execute(
        "SELECT incident_id, updated_at FROM incidents WHERE group_key = ? AND bucket = "
        "'resolved' ORDER BY updated_at DESC, incident_id DESC LIMIT 1",
        (group,),
    ).fetchone()
    grouping.write_resolved(root, group, _resolved_entry(*latest) if latest else None)


def _resolved_entry(incident_id: str, updated_at: str) -> dict[str, Any]:
    # a closed incident's updated_at is its close (group decisions leave it alone)
    return {"incident_id": incident_id, "closed_at": updated_at,
            "closed_ts": _closed_ts(updated_at)}  # fmt: skip


def rebuild_hints(root: Root, conn: sqlite3.Connection) -> tuple[int, int]:
    """`reindex`: where merged signatures' captures go and each group's latest resolved
    incident, from the mirror just rebuilt from the bundles. Returns (aliases, resolved)."""
    aliases: dict[str, tuple[str, dict[str, Any]]] = {}
    for signature, group, decisions in conn.execute(
        "SELECT signature, group_key, group_decisions FROM incidents "
        "WHERE group_key != signature ORDER BY created_at, incident_id"
    ).fetchall():
        taken = json.loads(decisions)
        if grouping.detached(taken):
            continue
        merges = [d for d in taken if d.get("kind") == "merge"]
        aliases[str(signature)] = (str(group), merges[-1] if merges else {})
    resolved: dict[str, dict[str, Any]] = {}
    for incident_id, group, updated_at in conn.execute(
        "SELECT incident_id, group_key, updated_at FROM incidents WHERE bucket = 'resolved' "
        "ORDER BY updated_at, incident_id"
    ).fetchall():
        resolved[str(group)] = _resolved_entry(str(incident_id), str(updated_at))
    _prune(root.state / grouping.ALIAS_DIR, {signature_key(s) for s in aliases})
    _prune(root.state / grouping.RESOLVED_DIR, {signature_key(g) for g in resolved})
    for signature, (group, decision) in aliases.items():
        grouping.write_alias(root, signature, group, decision)
    for group, entry in resolved.items():
        grouping.write_resolved(root, group, entry)
    return len(aliases), len(resolved)


def _prune(folder: Path, keep: set[str]) -> None:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        if name not in keep:
            (folder / name).unlink(missing_ok=True)


# --- for readers (status, explain) --------------------------------------------------------


def group_record(root: Root, incident_id: str) -> dict[str, Any]:
    """An incident's group decisions, from its bundle: `signature`, `group` (its key),
    `decisions` (merges and splits that moved it, oldest first: kind, at, by, reason,
    from, to), `regression_of` (the resolved incident it regresses, or None) and
    `regression_count`. Raises NotFound for an unknown id."""
    _, folder = root.locate(incident_id)
    doc = store.read_incident(folder)
    count = doc.get("regression_count", 0)
    return {
        "incident_id": incident_id,
        "signature": doc["error_signature"],
        "group": grouping.group_of(doc),
        "decisions": grouping.decisions_of(doc),
        "regression_of": doc.get("regression_of") or None,
        "regression_count": count if isinstance(count, int) else 0,
    }
