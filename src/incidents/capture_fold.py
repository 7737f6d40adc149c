"""A repeat of an open failure: capture adds an occurrence to its group's open incident
instead of opening another (dedupe). The caller holds the group's capture lock.

An escalated incident is still its group's incident: it waits for a person, and a repeat
of its failure is one more occurrence of it (its count, `last_seen`, its log tail, an
event), added where it lies in `error_archive/escalated/` without moving it, not a new
incident that would climb the ladder and escalate again. Every write is atomic, under the
incident's lock, which every move of a bundle takes too.

Standard library only, like capture.
"""

from __future__ import annotations

import os

from incidents import artifacts, eventlog, fsutil, grouping, store
from incidents.errors import IncidentsError
from incidents.layout import ESCALATED, INBOX, Root

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any

MAX_OCCURRENCE_LOG = 256 * 1024  # log_tail.txt of a deduped incident stays under this


def fold_into_open(
    root: Root, group: str, fresh: dict[str, Any], log_text: str
) -> tuple[str, dict[str, Any]] | None:
    """Add an occurrence to the open incident of `group`, if there is one: (its id, its
    document), or None."""
    incident_id = grouping.read_open(root, group)
    if incident_id is None or _where(root, incident_id) is None:
        return None  # (a hint naming no incident: not an id to lock)
    with store.incident_lock(root, incident_id):
        found = _where(root, incident_id)  # looked up under the lock: no move meanwhile
        if found is None:
            return None
        bucket, folder = found
        fsutil.remove_orphan_temps(folder)
        try:
            doc = store.read_incident(folder)
        except (IncidentsError, FileNotFoundError):
            return None
        if doc["status"] == "resolved" or (doc["status"] == "escalated") != (bucket == ESCALATED):
            return None
        if grouping.group_of(doc) != group:
            # an incident signed by older normalisation rules, in no group a person chose:
            # compared by its signature made again by today's rules (incidents.sigindex)
            from incidents.fingerprint import current_signature

            if doc.get("group") or current_signature(doc) != group:
                return None
        from incidents import bundle_files

        if bundle_files.listing_problems(folder):
            return None  # not ours to fold into: its pickup sets it aside; this one is new
        now = fresh["last_seen"]
        count = int(doc.get("occurrences", 1)) + 1
        doc = {**doc, "occurrences": count, "last_seen": now, "updated_at": now}
        if log_text:
            try:  # through the door: never a link, a FIFO, a hard link, an oversize file
                old = bundle_files.read(folder, artifacts.LOG_TAIL)
            except FileNotFoundError:
                old = b""
            except (IncidentsError, OSError):
                return None
            add = f"\n--- occurrence {count} at {now} ---\n{log_text}".encode()
            fsutil.atomic_write_bytes(
                os.path.join(folder, artifacts.LOG_TAIL), (old + add)[-MAX_OCCURRENCE_LOG:]
            )
        # keyed by the occurrence: written again by a capture killed before it saved
        data: dict[str, Any] = {"occurrences": count}
        if bucket == ESCALATED:
            data["escalated"] = True  # a repeat while it waits for a person
        occurrence = eventlog.event(f"o{count}", now, incident_id, "occurrence", data)
        eventlog.append(os.path.join(folder, eventlog.EVENTS), [occurrence], redact=False)
        store.save_incident(folder, doc)
    store.mark_dirty(root, incident_id)
    return incident_id, doc


def _where(root: Root, incident_id: str) -> tuple[str, str] | None:
    """(bucket, folder) of an incident a repeat may fold into: the inbox, or waiting for
    a person in the escalated bucket."""
    if "/" in incident_id or incident_id.startswith("."):
        return None
    for bucket in (INBOX, ESCALATED):
        folder = root.sub(bucket, incident_id)  # a str: no pathlib on the capture path
        if os.path.isdir(folder):
            return bucket, folder
    return None
