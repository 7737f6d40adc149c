"""Why an open incident is where it is, as `status` shows it (text and JSON): claimed by an
agent until a time, the system paused, waiting for an agent to claim it, a retry not due
yet. Read from the mirror's row, the pause flag and the claim's lease file alone."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from incidents import clock, fsutil, mirror
from incidents.errors import IncidentsError
from incidents.layout import Root


def claims(root: Root, rows: list[mirror.IncidentRow]) -> dict[str, str]:
    """Incident id -> when the live claim of an outside agent expires (ISO 8601), for the
    claimed rows (a read each). A lease kept in a shared PostgreSQL mirror has no file
    here: its claim is shown without an end."""
    leases = root.state / "leases"
    found: dict[str, str] = {}
    for r in rows:
        if not r.lease_owner:
            continue
        try:
            doc = fsutil.read_json_object(leases / f"{r.incident_id}.json")
        except (IncidentsError, OSError):
            continue
        expires = doc.get("expires_at")
        if isinstance(expires, int | float) and not isinstance(expires, bool):
            found[r.incident_id] = clock.iso_at(expires)
    return found


def row_why(
    row: mirror.IncidentRow,
    held: dict[str, str],
    paused: dict[str, Any] | None,
    now: datetime,
) -> str | None:
    """What an open incident waits on, or None (being worked, or nothing to say)."""
    if row.bucket != "inbox":
        return None
    if row.lease_owner:
        until = held.get(row.incident_id)
        return f"claimed by {row.lease_owner}" + (f" until {until}" if until else "")
    if paused is not None:
        return f"paused since {paused['since']}"
    if row.waiting:
        return "waiting for an agent (incidents next)"
    if row.not_before is not None and row.not_before > now.timestamp():
        return f"retry at {clock.iso_at(row.not_before)}"
    return None
