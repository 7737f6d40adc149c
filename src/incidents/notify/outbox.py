"""The outbox: one file per alert under `.state/notify/outbox/`, written where the event
happens, delivered later (`incidents.notify.deliver`), so an alert outlives a receiver that
is down, a watcher that stops and a crash between the two.

Standard library only (capture enqueues a regression). Every write is atomic (fsutil).

Grouping: an event of a group alerts once until the group's state changes. A group's record
(`.state/notify/groups/<hash>.json`) lists the members its last alert stands for; a new
member alerts only when none of them is still in that state (an escalation: still in
`error_archive/escalated/`; a regression: still open or escalated; a pause: still the pause
that stands; a spend limit: the same limit, on the same day or incident). So three
escalations of one group make one alert, and once a person has decided them (requeued or
resolved) the next escalation of the group alerts again.
"""

from __future__ import annotations

import hashlib
import os
import time

from incidents import fsutil
from incidents.errors import IncidentsError
from incidents.locks import flocked

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from incidents.layout import Root

EVENTS = ("escalation", "pause", "regression", "spend_limit")
NOTIFY = "notify"
OUTBOX, FAILED, GROUPS = "outbox", "failed", "groups"
MAX_MEMBERS = 1000  # a group record's members kept (the newest)


def base(root: Root) -> Path:
    return root.state / NOTIFY


def folder(root: Root, part: str) -> Path:
    return base(root) / part


def _group_path(root: Root, event: str, group: str) -> Path:
    digest = hashlib.sha256(f"{event}\0{group}".encode()).hexdigest()[:32]
    return folder(root, GROUPS) / f"{digest}.json"


def _read(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    try:
        return fsutil.read_json_object(path)
    except FileNotFoundError:
        return None


def enqueue(
    root: Root,
    event: str,
    alert_id: str,
    group: str,
    member: str,
    still_open: Callable[[str], bool],
    facts: dict[str, Any],
    now: float | None = None,
) -> bool:
    """Put one alert in the outbox unless its group's last alert still stands (then the
    member is counted into it). Returns whether an alert was written."""
    if event not in EVENTS:
        raise ValueError(event)
    from incidents.redact import redact_json  # the outbox is a sink like any other file

    facts = redact_json(facts)
    when = time.time() if now is None else now
    fsutil.ensure_dir(folder(root, OUTBOX))
    fsutil.ensure_dir(folder(root, GROUPS))
    with flocked(base(root), folder=True):
        path = _group_path(root, event, group)
        record = _read(path) or {}
        members = [str(m) for m in record.get("members") or []]
        standing = [m for m in members if m != member and still_open(m)]
        if standing:
            record["members"] = [*members, member][-MAX_MEMBERS:]
            record["suppressed"] = int(record.get("suppressed") or 0) + 1
            fsutil.atomic_write_json(path, record)
            return False
        alert = {
            "id": alert_id,
            "event": event,
            "group": group,
            "member": member,
            "at": when,
            "facts": facts,
            "attempts": 0,
            "next_at": when,
            "done": [],
            "last_error": None,
            "group_record": path.name,
        }
        fsutil.atomic_write_json(folder(root, OUTBOX) / f"{alert_id}.json", alert)
        fsutil.atomic_write_json(
            path,
            {
                "event": event,
                "group": group,
                "alert": alert_id,
                "members": [member],
                "suppressed": 0,
                "at": when,
            },
        )
        return True


def group_record(root: Root, alert: dict[str, Any]) -> dict[str, Any]:
    """The record of an alert's group (how many later members it stands for)."""
    name = str(alert.get("group_record") or "")
    if not name or "/" in name or name.startswith("."):
        return {}
    return _read(folder(root, GROUPS) / name) or {}


def pending(root: Root) -> list[tuple[Path, dict[str, Any]]]:
    """The outbox's alerts, oldest first; a file that does not parse is set aside in
    `failed/` (kept for a person, never retried blindly)."""
    base = folder(root, OUTBOX)
    if not base.is_dir():
        return []
    found = []
    for name in sorted(os.listdir(base)):
        if name.startswith(".") or not name.endswith(".json"):
            continue
        try:
            doc = fsutil.read_json_object(base / name)
        except FileNotFoundError:
            continue  # delivered by another watcher meanwhile
        except (OSError, ValueError, IncidentsError):
            set_aside(root, base / name)
            continue
        if not _well_formed(doc):  # another version's, or edited by hand: not guessed at
            set_aside(root, base / name)
            continue
        found.append((base / name, doc))
    found.sort(key=lambda item: (float(item[1].get("at") or 0), item[0].name))
    return found


def _well_formed(doc: dict[str, Any]) -> bool:
    """The fields a pass computes with have the types `enqueue` writes."""
    numbers = all(
        isinstance(doc.get(k), int | float) and not isinstance(doc.get(k), bool)
        for k in ("at", "next_at", "attempts")
    )
    texts = all(isinstance(doc.get(k), str) for k in ("id", "event", "member"))
    done = doc.get("done")
    listed = isinstance(done, list) and all(isinstance(k, str) for k in done)
    return numbers and texts and listed and isinstance(doc.get("facts"), dict)


def set_aside(root: Root, path: Path) -> None:
    fsutil.ensure_dir(folder(root, FAILED))
    os.replace(path, folder(root, FAILED) / path.name)
