"""`incidents status [ID]`: open incidents from the SQLite mirror, or one in full from disk.

No typer here: `incidents status` is read by `status_cli` (argparse) before typer loads,
and the list form imports only what it reads; `incidents.commands.status` is its typer
entry, and the name the rest of the package imports these functions by."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from incidents import clock, mirror, output, pause
from incidents.commands.roots import read_root
from incidents.commands.status_read import (
    OUTCOME_SHOWN,
    closed_outcome,
    open_mirror,
    unwritable,
)
from incidents.commands.status_why import claims, row_why
from incidents.errors import UsageError
from incidents.layout import Root, validate_id
from incidents.mirror.target import target_of
from incidents.termtext import one_line
from incidents.vocab import IncidentStatus

# The list form reads the mirror and a few small files: the step service, the fleet and
# the document models stay off its import path (a test holds it); `status ID` loads them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from incidents.commands.common import Session

_REL = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime) -> str:
    """`2h`, `3d`, `30m` ago, or an ISO date/time (UTC when it has no offset)."""
    m = _REL.match(text.strip())
    try:
        if m:  # an age past the calendar (99999999999d) is bad input, not a crash
            return clock.iso(now - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))}))
        when = datetime.fromisoformat(text.strip())
    except (ValueError, OverflowError) as exc:
        raise UsageError(f"--since {text!r}: use an ISO date/time or an age like 2h, 3d") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return clock.iso(when)


def check_status(value: str | None) -> None:
    if value is not None and value not in set(IncidentStatus):
        allowed = ", ".join(IncidentStatus)
        raise UsageError(f"--status {value!r}: use one of {allowed}")


def age(created_at: str, now: datetime) -> str:
    try:
        seconds = int((now - datetime.fromisoformat(created_at)).total_seconds())
    except ValueError:
        return "?"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def row_json(
    row: mirror.IncidentRow,
    now: datetime,
    paused: dict[str, Any] | None = None,
    held: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A row as JSON, every time ISO 8601 (`not_before` is epoch seconds in the mirror),
    with what it waits on (`why`; `paused`: `pause_json`'s answer, `held`: `claims`')."""
    nb, held = row.not_before, held or {}
    return {
        **asdict(row),
        "not_before": None if nb is None else clock.iso_at(nb),
        "group_decisions": json.loads(row.group_decisions),
        "age": age(row.created_at, now),
        "lease_expires_at": held.get(row.incident_id),
        "why": row_why(row, held, paused, now),
    }


def group_note(row: mirror.IncidentRow) -> str:
    """The list's NOTE: a regression, or the last group decision that moved it."""
    if row.regression_of:
        return f"regression #{row.regression_count} of {row.regression_of}"
    if row.group_decisions == "[]":  # nearly every row: no parse
        return ""
    decisions = json.loads(row.group_decisions)
    shown = {"merge": "merged", "split": "split"}
    return shown.get(decisions[-1].get("kind", "?"), "?") if decisions else ""


def list_rows(
    root: Root,
    reject_grace_s: float | None,
    show_all: bool,
    status: str | None,
    step: str | None,
    since: str | None,
    hosts: dict[str, str] | None = None,
) -> tuple[list[mirror.IncidentRow], dict[str, str]]:
    """The rows, and how the closed ones among them closed (incident id -> outcome).
    `hosts` (a dict to fill: incident id -> host): the rows of every host sharing the
    mirror (`--all-hosts`), not only this root's; they need the mirror."""
    buckets = ("inbox", "resolved", "escalated") if show_all else ("inbox",)
    why = unwritable(root)
    try:
        if why is not None:
            raise mirror.MirrorError(why)
        conn = open_mirror(root, reject_grace_s)
    except mirror.MirrorError as exc:  # the folders are the truth: read what we can
        if hosts is not None:
            raise mirror.MirrorError(f"--all-hosts needs the shared mirror: {exc}") from exc
        output.err(f"incidents: {exc}: listed from the folders; the mirror is not updated "
                   "and outcomes are not shown")  # fmt: skip
        return folder_rows(root, buckets, status, step, since), {}
    try:
        rows = mirror.list_incidents(
            conn, buckets=buckets, status=status, step=step, since=since,
            all_hosts=hosts is not None, hosts=hosts,
        )  # fmt: skip
        closed = [r.incident_id for r in rows if r.bucket != "inbox"]
        outcomes = mirror.outcomes(conn, closed) if closed else {}
        where = {r.incident_id: r.bucket for r in rows}
        outcomes = {i: closed_outcome(where[i], o) or o for i, o in outcomes.items()}
        if target_of(root.db_path).leases == "postgres":  # claims are lease rows
            from incidents.mirror.leasing import agents_holding

            agents = agents_holding(conn)
            return [replace(r, lease_owner=agents.get(r.incident_id)) for r in rows], outcomes
    finally:
        conn.close()
    # a claim may have expired since its row was written: the few claimed rows are
    # checked against their lease files (a read each), not the whole list
    leases_dir = root.state / "leases"
    mine = target_of(root.db_path).host
    return [
        (
            replace(r, lease_owner=mirror.agent_holding(leases_dir, r.incident_id))
            if r.lease_owner and (hosts is None or hosts.get(r.incident_id) == mine)
            else r
        )
        for r in rows
    ], outcomes


def folder_rows(
    root: Root, buckets: tuple[str, ...], status: str | None, step: str | None, since: str | None
) -> list[mirror.IncidentRow]:
    """`mirror.list_incidents`' answer read from the folders themselves, writing nothing."""
    from incidents.mirror.scan import scan_bundles

    rows = [
        r
        for s in scan_bundles(root, {}).values()
        if (r := s.row) is not None
        and r.bucket in buckets
        and status in (None, r.status)
        and step in (None, r.step)
        and (since is None or r.created_at >= since)
    ]
    return sorted(rows, key=lambda r: (r.created_at, r.incident_id), reverse=True)


def list_json(
    session: Session,
    show_all: bool,
    status: str | None,
    step: str | None,
    since: str | None,
    all_hosts: bool = False,
) -> dict[str, Any]:
    """`status --json`: the root, the pause and the rows (`since` an ISO time, or None;
    `all_hosts`: every host's rows, each with its `host`). The MCP server's
    `list_incidents` answers with it too."""
    grace = session.config.watch.reject_grace_s
    return listing_json(session.root, grace, show_all, status, step, since, all_hosts)


def listing_json(
    root: Root,
    reject_grace_s: float | None,
    show_all: bool,
    status: str | None,
    step: str | None,
    since: str | None,
    all_hosts: bool = False,
) -> dict[str, Any]:
    """`list_json` of a root (`reject_grace_s`: `[watch] reject_grace_s`). Each row says
    why it is where it is (`why`: waiting for an agent, claimed, a retry, the pause)."""
    check_status(status)
    if status in ("resolved", "escalated"):
        show_all = True
    now = datetime.now(UTC)
    hosts: dict[str, str] | None = {} if all_hosts else None
    rows, outcomes = list_rows(root, reject_grace_s, show_all, status, step, since, hosts)
    paused = pause_json(root)
    held = claims(root, rows)
    shown = [
        {**row_json(r, now, paused, held), "outcome": outcomes.get(r.incident_id)} for r in rows
    ]
    if hosts is not None:
        shown = [{**doc, "host": hosts.get(doc["incident_id"])} for doc in shown]
    return {
        "root": str(root.path),
        "paused": paused,
        "degraded": degraded_json(root),
        "spend": spend_today(root, now),
        "incidents": shown,
    }


def spend_today(root: Root, now: datetime) -> dict[str, Any]:
    """The AI fixers' spend today (UTC): in all, per group, per incident."""
    from incidents.fixers import spend

    return spend.day(root.state, now)


def degraded_json(root: Root) -> dict[str, Any] | None:
    """This host last found the shared mirror unreachable (`incidents.fleet`), or None."""
    from incidents.fleet_state import degraded

    found = degraded(root)
    return None if found is None else {"since": clock.iso_at(found.since), "reason": found.reason}


def one_json(root: Root, incident_id: str) -> dict[str, Any]:
    """`status ID --json`: one incident in full (`incidents.commands.status_one`)."""
    from incidents.commands.status_one import one_json as detail

    return detail(root, incident_id)


def pause_json(root: Root) -> dict[str, Any] | None:
    """The global pause flag (seed 003's threshold or `incidents pause`), or None."""
    info = pause.current(root)
    if info is None:
        return None
    return {"reason": info.reason, "since": info.since_iso, "by": info.by}


def pause_line(info: dict[str, Any]) -> str:
    """The list's first line when everything is paused (`pause_json`'s answer)."""
    return (
        f"PAUSED since {info['since']} by {one_line(info['by'])}: {one_line(info['reason'])} "
        "(step, watch, next and claim start no new work; `incidents resume` clears it)"
    )


def run_status(
    incident_id: str | None,
    show_all: bool,
    status_filter: str | None,
    step: str | None,
    since: str | None,
    all_hosts: bool,
    root: str | None,
    config: str | None,
    as_json: bool,
) -> int:
    """`incidents status`, whichever parser read its line (`status_cli`, or typer's)."""
    # every argument is checked before the root is opened (which creates its layout)
    if incident_id is not None:
        validate_id(incident_id)
    now = datetime.now(UTC)
    since_iso = parse_since(since, now) if since else None
    check_status(status_filter)
    if incident_id is not None:
        from incidents.commands.common import open_root
        from incidents.commands.status_one import show_one

        return show_one(open_root(root, config, incident_id, False), incident_id, as_json)
    found, settings = read_root(root, config)
    grace = settings.get("watch.reject_grace_s")
    if as_json:
        shown = listing_json(found, grace, show_all, status_filter, step, since_iso, all_hosts)
        output.out_json(shown)
        return 0
    if status_filter in ("resolved", "escalated"):
        show_all = True
    hosts: dict[str, str] | None = {} if all_hosts else None
    rows, outcomes = list_rows(found, grace, show_all, status_filter, step, since_iso, hosts)
    paused = pause_json(found)
    if paused:
        output.out(pause_line(paused))
    degraded = degraded_json(found)
    if degraded:
        output.out(f"DEGRADED since {degraded['since']}: this host works without the shared "
                   f"mirror ({one_line(degraded['reason'])}); the watcher catches up when it "
                   "is back")  # fmt: skip
    if not rows:
        output.out("no open incidents" if not show_all else "no incidents")
        return 0
    held = claims(found, rows)
    whys = [row_why(r, held, paused, now) for r in rows]
    headers = ["ID", *(["HOST"] if hosts is not None else []), "STATUS"]
    headers += ["WHY"] if any(whys) else []
    headers += ["STEP", "CLASS", "AGE", "SEEN"]
    if show_all:
        headers += ["WHERE", "OUTCOME"]
    notes = [group_note(r) for r in rows]
    noted = any(notes)  # once: asked per row, it made a 10,000-row list quadratic
    if noted:  # regressions, merges and splits
        headers.append("NOTE")
    table: list[list[str]] = []
    for r, why in zip(rows, whys, strict=True):
        cells = [r.incident_id, *([hosts.get(r.incident_id, "?")] if hosts is not None else [])]
        cells += [r.status, *([why or "-"] if "WHY" in headers else [])]
        cells += [r.step, r.failure_class, age(r.created_at, now)]
        cells.append(str(r.occurrences))
        if show_all:
            outcome = outcomes.get(r.incident_id)
            cells += [r.bucket, OUTCOME_SHOWN.get(outcome, outcome) if outcome else "-"]
        if noted:
            cells.append(notes[len(table)] or "-")
        table.append(cells)
    output.out(output.table(headers, table))
    if show_all and outcomes:
        fixed = sum(1 for o in outcomes.values() if o == "fixed")
        flaky = sum(1 for o in outcomes.values() if o == "not_reproduced")
        human = sum(1 for o in outcomes.values() if o == "resolved_by_human")
        back = sum(1 for o in outcomes.values() if o == "recovered")
        output.out(f"resolved: {fixed} fixed, {flaky} not reproduced (flaky, no fix claimed)"
                   + (f", {back} recovered" if back else "")
                   + (f", {human} by a person" if human else ""))  # fmt: skip
    return 0
