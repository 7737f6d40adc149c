"""A host of a fleet sharing one PostgreSQL mirror: its pass, and what it shares.

Each host keeps its own root, the truth for its bundles; the shared mirror carries what
the fleet decides together (`mirror.fleetwide`). A watcher calls `fleet_pass` on every rescan:

- the global pause: a pause flag made here (a threshold, `incidents pause`) is published;
  a pause published by another host is copied into this root's flag (`by` "fleet:<host>"),
  and cleared again once a resume anywhere lifted it;
- decisions made on another host about a bundle this root holds (`resolve-escalation`,
  `archive`: `route`) are applied here, by the same code as the commands;
- the mirror unreachable: the host works its own inbox with what it knows locally, and
  says so (`.state/degraded.json`, the watcher's log, `status`, `doctor`); when the
  server is back, the catch-up derives every row the folders changed meanwhile (the
  `.state/dirty/` hints that failed writes left, and the inbox listing).

Nothing here runs for a root whose mirror is its SQLite file.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from incidents import artifacts, fsutil, leases, mirror, output, pause, store
from incidents.errors import IncidentsError
from incidents.fleet_state import DEGRADED, Degraded, degraded
from incidents.handoff.human import resolve_escalation
from incidents.layout import Root
from incidents.mirror import fleetwide as shared
from incidents.mirror.target import target_of
from incidents.step import close as closing

__all__ = [
    "ARCHIVE",
    "RESOLVE",
    "Degraded",
    "FleetPass",
    "degraded",
    "fleet_pass",
    "is_fleet",
    "route",
    "share_pause",
    "share_resume",
]

FLEET_BY = "fleet:"


def is_fleet(root: Root) -> bool:
    return target_of(root.db_path).url is not None


def _mark_degraded(root: Root, reason: str) -> bool:
    """Note the outage (True: it began now)."""
    if degraded(root) is not None:
        return False
    fsutil.atomic_write_json(root.state / DEGRADED, {"since": time.time(), "reason": reason})
    return True


@dataclass
class FleetPass:
    """What a pass did: `degraded` the reason the mirror was unreachable (None: it was
    reachable), `recovered` whether it came back in this pass, the pause it copied or
    cleared, the decisions it applied (id, incident, outcome)."""

    degraded: str | None = None
    began: bool = False
    recovered: bool = False
    paused: str | None = None
    resumed: bool = False
    applied: list[tuple[int, str, str]] = field(default_factory=list)
    counted: list[tuple[str, str, str]] = field(default_factory=list)  # (new, host, open)


def fleet_pass(root: Root, share_groups: bool = True) -> FleetPass:
    """The host's pass over the shared mirror (see the module doc). Never raises for the
    mirror: an unreachable one is this pass's `degraded`. `share_groups` (`[mirror]
    share_groups`): a new incident whose group is open on another host is counted there."""
    result = FleetPass()
    if not is_fleet(root):
        return result
    try:
        conn = mirror.connect(root.db_path)
    except mirror.MirrorError as exc:
        result.degraded = str(exc)
        result.began = _mark_degraded(root, str(exc))
        return result
    try:
        mirror.catch_up(conn, root)  # new captures, and all it missed while it was away
        if degraded(root) is not None:
            (root.state / DEGRADED).unlink(missing_ok=True)
            result.recovered = True
        _resume_pending(root, conn)
        _sync_pause(root, conn, result)
        _apply_decisions(root, conn, result)
        if share_groups:
            _count_elsewhere(root, conn, result)
    except mirror.DATABASE_ERRORS as exc:
        result.degraded = str(exc)
        result.began = _mark_degraded(root, str(exc))
    finally:
        conn.close()
    return result


def _sync_pause(root: Root, conn: Any, result: FleetPass) -> None:
    local = pause.current(root)
    standing = shared.active_pause(conn)
    if local is not None:
        published = shared.pause_since(conn, local.since)
        if published is None:
            shared.publish_pause(conn, local.reason, local.since, local.by)
        elif published.resumed_at is not None and standing is None:
            pause.resume(root)  # lifted by a resume on another host
            result.resumed = True
    elif standing is not None:
        by = f"{FLEET_BY}{standing.host}"
        pause.pause(root, standing.reason, by=by, now=standing.since)
        result.paused = standing.reason


def share_pause(root: Root, info: pause.PauseInfo) -> None:
    """`incidents pause` or a threshold here pauses the fleet now (best effort: the next
    pass publishes it otherwise)."""
    if not is_fleet(root):
        return

    def later(exc: BaseException) -> None:
        output.err(f"incidents: warning: the fleet is not paused yet ({exc}); this host's "
                   "next watcher pass publishes the pause")  # fmt: skip

    with mirror.best_effort(root, on_error=later) as conn:
        if conn is not None:
            shared.publish_pause(conn, info.reason, info.since, info.by)


RESUME_PENDING = "fleet_resume.json"  # a resume made here the mirror has not heard of yet


def share_resume(root: Root) -> None:
    """`incidents resume` here lifts the fleet's pause (each host clears its flag on its
    next pass). With the mirror unreachable, the resume waits in `.state/` for this host's
    next pass: otherwise that pass would copy the standing pause back into the flag."""
    if not is_fleet(root):
        return
    hint = root.state / RESUME_PENDING
    fsutil.atomic_write_json(hint, {"at": time.time()})

    def later(exc: BaseException) -> None:
        output.err(f"incidents: warning: the fleet's pause is not lifted yet ({exc}); this "
                   "host's next watcher pass lifts it")  # fmt: skip

    effort = mirror.best_effort(root, on_error=later)
    with effort as conn:
        if conn is not None:
            shared.resume_all(conn)
    if effort.written:
        hint.unlink(missing_ok=True)


def _resume_pending(root: Root, conn: Any) -> None:
    """A resume made here while the mirror was unreachable: the pauses published before it
    are lifted now (a pause published since stands)."""
    hint = root.state / RESUME_PENDING
    try:
        at = float(fsutil.read_json_object(hint)["at"])
    except FileNotFoundError:
        return
    except (IncidentsError, KeyError, ValueError, TypeError):
        at = time.time()
    shared.resume_all(conn, before=at)
    hint.unlink(missing_ok=True)


# --- decisions routed to the host holding the bundle --------------------------------------

RESOLVE = "resolve-escalation"
ARCHIVE = "archive"
OCCURRENCE = "occurrence"  # a new incident of a group open elsewhere, counted there
# an occurrence the other host could not count (its incident closed meanwhile): the
# incident closed here as counted goes back to this inbox, to be worked after all
RETURNED = "occurrence-returned"


def _apply(root: Root, conn: Any, kind: str, incident_id: str, args: dict[str, Any]) -> str:
    """Apply a routed decision with the command's own code; what it did."""
    if kind == RESOLVE:
        done = resolve_escalation(
            root, incident_id, str(args["guidance"]), requeue=bool(args.get("requeue")),
            accept_fix=bool(args.get("accept_fix")), by=str(args.get("by", "human")),
        )  # fmt: skip
        return f"{done.decision} -> {done.location}"
    if kind == ARCHIVE:
        bucket = str(args["bucket"])
        folder = closing.archive(root, incident_id, bucket, str(args["reason"]))
        store.mirror_bundle(root, bucket, folder, "archived", {"bucket": bucket})
        return f"{bucket} -> {folder.relative_to(root.path)}"
    if kind == OCCURRENCE:
        group, into = str(args["group"]), incident_id
        counted = _count_here(root, group, into, str(args["from"]), str(args["last_seen"]))
        if counted.startswith("refused") and args.get("host") and args.get("incident"):
            shared.queue_decision(conn, str(args["host"]), str(args["incident"]), RETURNED,
                                  {"why": counted, "by": target_of(root.db_path).host})  # fmt: skip
            return f"{counted}; sent back to host {args['host']}"
        return counted
    if kind == RETURNED:
        return _reopen_counted(root, incident_id, str(args.get("by", "?")))
    return f"refused: unknown decision {kind!r}"


def _reopen_counted(root: Root, incident_id: str, other_host: str) -> str:
    """This host's incident closed as an occurrence of another host's, which could not
    count it: back to the inbox, new (it was never started)."""
    folder = root.bucket("resolved") / incident_id
    with store.incident_lock(root, incident_id):
        if not folder.is_dir():
            return "refused: it is no longer in the resolved bucket"
        target = closing.reopen(root, folder)
    why = f"host {other_host} could not count it (its incident had closed): worked here"
    store.mirror_bundle(root, "inbox", target, "requeued", {"reason": why})
    return f"reopened -> {target.relative_to(root.path)}"


def _count_here(root: Root, group: str, into: str, source: str, last_seen: str) -> str:
    """Another host's capture of `group`, counted on the group's open incident here (as
    capture's dedupe counts a repeat), under the group's capture lock. `into`: the open
    incident the other host saw (the group's, when capture kept no hint of it)."""
    from incidents import grouping
    from incidents.capture_fold import fold_into_open
    from incidents.locks import flocked
    from incidents.signature import signature_key

    with flocked(store.lock_path(root, f"sig-{signature_key(group)}")):
        if grouping.read_open(root, group) is None and (root.inbox / into).is_dir():
            grouping.write_open(root, group, into)
        note = f"(an occurrence captured on {source})\n"
        found = fold_into_open(root, group, {"last_seen": last_seen}, note)
    if found is None:
        return "refused: the group has no open incident here any more"
    # its row follows at the next catch-up (capture's dirty hint)
    return f"counted on {found[0]} (occurrences {found[1].get('occurrences')})"


def _count_elsewhere(root: Root, conn: Any, result: FleetPass) -> None:
    """This host's new incidents whose group is open on another host: each is sent there
    as an occurrence and closed here (never started: its lease taken first)."""
    me = target_of(root.db_path).host
    done: set[str] = set()
    for incident_id, group, other_host, other_id in shared.counted_elsewhere(conn):
        if incident_id in done:
            continue
        done.add(incident_id)
        lease = leases.acquire(root, incident_id, leases.new_owner("fleet"), 60.0)
        if lease is None:
            continue  # a worker has it: it is worked here after all
        closed = False
        try:
            folder = root.inbox / incident_id
            if (folder / artifacts.STATE).exists() or not folder.is_dir():
                continue  # started meanwhile
            doc = store.read_incident(folder)
            args = {"group": group, "from": f"host {me} ({incident_id})",
                    "last_seen": str(doc.get("last_seen") or doc["created_at"]),
                    "host": me, "incident": incident_id}  # fmt: skip
            shared.queue_decision(conn, other_host, other_id, OCCURRENCE, args)
            why = f"counted as an occurrence of {other_id} on host {other_host} (fleet grouping)"
            target = closing.archive(root, incident_id, "resolved", why)
            store.mirror_bundle(root, "resolved", target, "archived", {"bucket": "resolved"})
            closed = True
            result.counted.append((incident_id, other_host, other_id))
        finally:
            leases.release(root, lease, closed=closed)


def route(root: Root, incident_id: str, kind: str, args: dict[str, Any]) -> str | None:
    """For a command about an incident this root does not hold: when another host of the
    fleet holds it, address the decision to that host and return its name; None when no
    host does (the command reports it not found)."""
    if not is_fleet(root):
        return None
    conn = mirror.connect(root.db_path)
    try:
        found = shared.holder(conn, incident_id)
        if found is None or found[0] == target_of(root.db_path).host:
            return None
        shared.queue_decision(conn, found[0], incident_id, kind, args)
        return found[0]
    finally:
        conn.close()


def _apply_decisions(root: Root, conn: Any, result: FleetPass) -> None:
    for decision in shared.pending(conn):
        # claimed first: two watchers of one shared root (one host name) read the same
        # pending decisions, and each applied them (an occurrence was counted twice)
        with (
            contextlib.suppress(*mirror.DATABASE_ERRORS),
            shared.claimed(conn, decision.id) as mine,
        ):
            if not mine:
                continue
            try:
                outcome = _apply(root, conn, decision.kind, decision.incident_id, decision.args)
            except (IncidentsError, KeyError) as exc:  # the bundle moved on: said, not retried
                outcome = f"refused: {exc}"
            shared.mark_applied(conn, decision.id, outcome)
            result.applied.append((decision.id, decision.incident_id, outcome))
