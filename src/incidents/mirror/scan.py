"""What the mirror reads from the folders: a bundle's row, its lease, its escalation
records and the rejected folders (events and step attempts: `mirror.ingest`).

The folders are the source of truth (invariant I5); everything here is read-only and
raises or reports what cannot be read, for `reindex` and the catch-up to decide.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents import artifacts, clock
from incidents.errors import IncidentsError, InvalidDocument, UnsafeFile
from incidents.fsutil import read_json_object, read_regular_file
from incidents.layout import BUCKETS, REJECTED, Root, shown_name, validate_id
from incidents.mirror.db import dumps
from incidents.mirror.queries import Context, IncidentRow
from incidents.mirror.schema import MIRROR_BUCKETS

__all__ = [
    "EscalationRecord",
    "RejectedRow",
    "rejected_row",
    "scan_one",
    "workstream_row",
    "Scanned",
    "agent_holding",
    "row_from_bundle",
    "scan_bundles",
    "scan_rejected",
]

STATUS_TXT_MAX = 64


def _text(doc: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = doc.get(key, default)
    if not isinstance(value, str) or not value:
        raise InvalidDocument(where, "missing or not a non-empty string", key)
    return value


def _optional_text(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) and value else None


def _location(bucket: str, name: str) -> str:
    return f"{BUCKETS[bucket]}/{name}"


def _read_state(folder: Path) -> Context | None:
    try:
        doc = read_json_object(folder / artifacts.STATE)
    except FileNotFoundError:
        return None
    doc.pop("seal", None)  # the seal (incidents.step.seal) is not part of the context
    return Context.of(doc)


def row_from_bundle(
    root: Root, bucket: str, folder: Path, *, state: Context | None = None
) -> IncidentRow:
    """The mirror row of a bundle folder: incident.json (authoritative), its state.json.

    `status.txt` is read only when incident.json has no status (the store repairs
    status.txt from incident.json). `last_seen` defaults to `created_at`. Unreadable or
    unsafe files raise (InvalidDocument, UnsafeFile, FileNotFoundError). `state`: the
    context its writer has just committed to state.json, instead of reading it back.
    """
    return _bundle(bucket, folder, root.state / "leases", state)[0]


def agent_holding(leases_dir: Path, incident_id: str) -> str | None:
    """The outside agent (a skill's `claim`) whose live lease holds an open incident.
    A worker's lease lasts one pickup and is not shown: the row would be stale at once."""
    try:
        doc = read_json_object(leases_dir / f"{incident_id}.json")
    except (IncidentsError, OSError):
        return None
    agent, expires = doc.get("agent"), doc.get("expires_at")
    live = isinstance(expires, int | float) and expires > time.time()
    return agent if isinstance(agent, str) and agent and live else None


def workstream_row(
    row: IncidentRow, context: Context | None
) -> tuple[str, str, str, str, str] | None:
    """The `workstreams` row of an incident (None: it has no state yet), the one shape both
    `reindex` and the live mirror write."""
    if context is None or not row.state:
        return None
    return (
        row.run_id,
        row.incident_id,
        row.state,
        dumps({"error_pipeline": context.doc}),
        row.updated_at,
    )


def scan_one(
    root: Root, bucket: str, folder: Path, state: Context | None = None
) -> tuple[IncidentRow, Context | None, list[EscalationRecord]]:
    """What `reindex` derives from one bundle: its row, its context (`state`: the one its
    writer has just committed, not read back) and the escalation records it proves."""
    row, context = _bundle(bucket, folder, root.state / "leases", state)
    return row, context, _escalation_records(bucket, folder, row)


def _bundle(
    bucket: str, folder: Path, leases_dir: Path, state: Context | None = None
) -> tuple[IncidentRow, Context | None]:
    if bucket not in MIRROR_BUCKETS:
        raise ValueError(f"bucket must be one of {MIRROR_BUCKETS}, not {bucket!r}")
    path = folder / artifacts.INCIDENT
    where = str(path)
    doc = read_json_object(path)
    incident_id = _text(doc, "incident_id", where)
    if incident_id != folder.name:
        raise InvalidDocument(
            where, f"does not match its folder name {folder.name!r}", "incident_id"
        )
    status = doc.get("status")
    if not isinstance(status, str) or not status:
        raw = read_regular_file(folder / artifacts.STATUS, STATUS_TXT_MAX)
        status = raw.decode("utf-8", "replace").strip()
        if not status:
            raise InvalidDocument(where, "missing, and status.txt is empty", "status")
    occurrences = doc.get("occurrences", 1)
    if not isinstance(occurrences, int) or isinstance(occurrences, bool) or occurrences < 1:
        raise InvalidDocument(where, "must be a positive integer", "occurrences")
    created_at = _text(doc, "created_at", where)
    if state is None:
        state = _read_state(folder)
    row = IncidentRow(
        incident_id=incident_id,
        status=status,
        state=state.current_state if state else None,
        step=_text(doc, "step", where),
        failure_class=_text(doc, "failure_class", where),
        error_code=_optional_text(doc, "error_code"),
        signature=_text(doc, "error_signature", where),
        run_id=_text(doc, "run_id", where),
        message=_text(doc, "message", where),
        occurrences=occurrences,
        created_at=created_at,
        updated_at=_text(doc, "updated_at", where, created_at),
        last_seen=_optional_text(doc, "last_seen") or created_at,
        bucket=bucket,
        location=_location(bucket, folder.name),
        not_before=state.not_before if state else None,
        waiting=state.waiting if state else False,
        lease_owner=agent_holding(leases_dir, incident_id) if bucket == "inbox" else None,
        **_group_fields(doc),
    )
    return row, state


def _group_fields(doc: dict[str, Any]) -> dict[str, Any]:
    """The row's group and regression columns (lenient: what does not parse is absent)."""
    from incidents.grouping import decisions_of, group_of
    from incidents.redact import redact_json

    decisions = redact_json(decisions_of(doc))  # a person's reasons; a hand-written bundle
    regression_of, count = doc.get("regression_of"), doc.get("regression_count", 0)
    ok_count = isinstance(count, int) and not isinstance(count, bool) and count >= 0
    return {
        "group_key": group_of(doc),
        "group_decisions": json.dumps(decisions, ensure_ascii=False, sort_keys=True),
        "regression_of": (
            regression_of if isinstance(regression_of, str) and regression_of else None
        ),
        "regression_count": count if ok_count else 0,
    }


_Fingerprint = tuple[tuple[int, int, int] | None, ...]


# (ts, incident_id, signature, reason, resolved_at, guidance): an escalation record
EscalationRecord = tuple[str, str, str, str, str | None, str | None]


@dataclass
class Scanned:
    fingerprint: _Fingerprint
    row: IncidentRow | None
    state: Context | None
    error: str | None
    escalations: list[EscalationRecord] = field(default_factory=list)


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _fingerprint(folder: Path) -> _Fingerprint:
    return tuple(_stat(folder / n) for n in _FINGERPRINTED)


_FINGERPRINTED = (
    artifacts.INCIDENT,
    artifacts.STATUS,
    artifacts.STATE,
    artifacts.DECISIONS,
    artifacts.METADATA,
)


def _escalation_records(bucket: str, folder: Path, row: IncidentRow) -> list[EscalationRecord]:
    """The escalation records a bundle proves: one resolved record per human decision in
    `decisions.json` (which moves with the bundle), and, for a bundle in the escalated
    bucket not resolved since, the open record of its last escalation (`metadata.json`
    of its quarantine bundle). Unreadable files prove nothing (the bundle's row stands)."""
    taken = []
    if os.path.lexists(folder / artifacts.DECISIONS):  # most have none: no models loaded
        from incidents.decisions import read_decisions

        with contextlib.suppress(IncidentsError, OSError):
            taken = read_decisions(folder)
    meta = {}
    with contextlib.suppress(IncidentsError, OSError):
        meta = read_json_object(folder / artifacts.METADATA)
    escalated_at = clock.normalized(meta.get("finished_at"))
    records: list[EscalationRecord] = []
    for d in taken:
        at = clock.normalized(d.at)
        if at is None:
            continue
        began = clock.normalized(d.escalated_at) or escalated_at  # older decisions: not kept
        ts = began if began and began <= at else at
        records.append(
            (ts, row.incident_id, d.signature or row.signature, d.escalation_reason or "",
             at, d.guidance)
        )  # fmt: skip
    last_decision = max((r[4] or "" for r in records), default="")
    if bucket == "escalated" and escalated_at and escalated_at > last_decision:
        reason = meta.get("reason")
        signature = meta.get("error_signature") or row.signature
        records.append(
            (escalated_at, row.incident_id, str(signature),
             reason if isinstance(reason, str) else "", None, None)
        )  # fmt: skip
    return records


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(directory), key=lambda e: e.name)
    except FileNotFoundError:
        return []


def scan_bundles(root: Root, previous: dict[str, Scanned]) -> dict[str, Scanned]:
    """Every bundle folder by location; unchanged files reuse `previous`'s reading."""
    found: dict[str, Scanned] = {}
    for bucket in MIRROR_BUCKETS:
        for entry in _entries(root.bucket(bucket)):
            if entry.name.startswith("."):
                continue
            location = _location(bucket, shown_name(entry.name))  # any name: stored as UTF-8
            folder = Path(entry.path)
            if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                found[location] = Scanned((), None, None, "not a folder (a file or symlink)")
                continue
            fingerprint = _fingerprint(folder)
            old = previous.get(location)
            if old is not None and old.fingerprint == fingerprint:
                found[location] = old
                continue
            try:
                validate_id(entry.name)
                row, state = _bundle(bucket, folder, root.state / "leases")
                records = _escalation_records(bucket, folder, row)
                found[location] = Scanned(fingerprint, row, state, None, records)
            except (IncidentsError, OSError) as exc:
                reason = str(exc) if isinstance(exc, IncidentsError) else f"{exc.strerror}: {exc}"
                found[location] = Scanned(fingerprint, None, None, reason)
    return found


@dataclass(frozen=True, slots=True)
class RejectedRow:
    """One row of `rejected`: a folder in `error_rejected/` and why it is there."""

    name: str
    location: str
    reason: str
    rejected_at: str | None
    incident_id: str | None


def scan_rejected(root: Root) -> list[RejectedRow]:
    """A row for every entry of `error_rejected/` (reindex, and catch_up for new ones)."""
    return [
        rejected_row(root, entry.name)
        for entry in _entries(root.rejected)
        if not entry.name.startswith(".")
    ]


def rejected_row(root: Root, name: str) -> RejectedRow:
    """What `error_rejected/<name>` says of itself: its reason.txt and incident id."""
    folder = root.rejected / name
    reason, rejected_at, incident_id = "", None, None
    if folder.is_dir() and not folder.is_symlink():
        for file_name in (artifacts.REASON, "reason.rejected.txt"):
            try:
                text = read_regular_file(folder / file_name, 64 * 1024).decode("utf-8", "replace")
            except (FileNotFoundError, UnsafeFile):
                continue
            stamp, _, rest = text.strip().partition(" ")
            rejected_at, reason = (stamp, rest) if stamp[:1].isdigit() else (None, text.strip())
            break
        try:
            doc = read_json_object(folder / artifacts.INCIDENT)
            incident_id = _optional_text(doc, "incident_id")
        except (IncidentsError, OSError):
            pass
    shown = shown_name(name)  # a name dropped here by hand may be anything
    return RejectedRow(
        shown, f"{REJECTED}/{shown}", reason or "no reason recorded", rejected_at, incident_id
    )
