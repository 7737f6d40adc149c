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

import re
import sqlite3
from typing import Any

from incidents import clock, eventlog, grouping, mirror, store
from incidents.errors import UsageError
from incidents.layout import Root, validate_id
from incidents.locks import flocked
from incidents.redact import redact
from incidents.signature import signature_key
from incidents.termtext import one_line

__all__ = ["check_reason", "group_record", "merge", "resolve_side", "split"]

_HEX_KEY = re.compile(r"[0-9a-f]{24}")


def check_reason(text: str | None, command: str) -> str:
    """The decision's reason, on one line (no control character: `termtext.one_line`) and
    redacted; a missing or empty one is a UsageError."""
    reason = redact(one_line(text or ""))
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
    return {"kind": kind, "at": clock.iso_precise(), "by": grouping.who(), "reason": reason,
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
    if mirror.group_members(conn, text):
        return text
    groups = mirror.groups_of_signature(conn, text)
    for group, split_from_it in groups:
        if not split_from_it:
            return group
    if groups:  # every incident of the signature was split from it: its captures' own group
        return text
    if _HEX_KEY.fullmatch(text):
        for group, signature in mirror.group_keys(conn):
            if signature_key(group) == text:
                return group
            if signature_key(signature) == text:
                return resolve_side(conn, signature, what)
    raise UsageError(f"group: {what} {text[:200]!r}: no incident, group or signature of that name")


def _rewrite(root: Root, incident_id: str, group: str | None, decision: dict[str, Any]) -> None:
    """One bundle joins `group` (None: stays in its own) with `decision` recorded, in one
    atomic write."""
    with store.incident_lock(root, incident_id):
        _, folder = root.locate(incident_id)
        doc = store.read_incident(folder)
        decisions = [*grouping.decisions_of(doc), decision]
        key = grouping.group_of(doc) if group is None else group
        store.save_incident(folder, {**doc, "group": {"key": key, "decisions": decisions}})
        eventlog.append_events(
            folder, incident_id, [("group_decision", decision)], eventlog.unique_key("g")
        )
    store.mark_dirty(root, incident_id)


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
                members = mirror.group_members(conn, source)
                for incident_id, _, _ in members:
                    _rewrite(root, incident_id, target, decision)
                if not members:  # a signature whose incidents were all split: noted in
                    # theirs (they stay apart) so that `reindex` rebuilds where it goes
                    for incident_id in mirror.signature_members(conn, source):
                        _rewrite(root, incident_id, None, decision)
                signatures = {s for _, s, split in members if not split}
                if not source.startswith(grouping.SPLIT_PREFIX):  # a signature's own group
                    signatures.add(source)
                for signature in sorted(signatures):
                    grouping.write_alias(root, signature, target, decision)
            mirror.catch_up(conn, root)
            mirror.refresh_hints(root, conn, target)
            mirror.refresh_hints(root, conn, source)
            mirror.derive_errors(conn, sorted({target, source, *signatures}))
        finally:
            conn.close()
    return {**decision, "incidents": [m[0] for m in members], "signatures": sorted(signatures)}


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
            mirror.refresh_hints(root, conn, row.group_key)
            mirror.refresh_hints(root, conn, new)
            mirror.derive_errors(conn, sorted({row.signature, row.group_key}))
        finally:
            conn.close()
    return {**decision, "incidents": [incident_id], "signatures": []}


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
