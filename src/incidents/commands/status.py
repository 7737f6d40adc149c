"""`incidents status [ID]`: open incidents from the SQLite mirror, or one in full from disk."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

from incidents import clock, mirror, output, pause
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root, read_root
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


def open_mirror(root: Root, reject_grace_s: float | None = None) -> Any:
    """The mirror, rebuilt from the folders when it does not exist, caught up with captures.

    An inbox bundle that does not parse or validate is reported with its path and reason;
    once it has been unchanged for `reject_grace_s` (a hand copy may still be arriving) it
    is moved to `error_rejected/<name>/` with a `reason.txt`. Nothing is deleted."""
    conn = mirror.connect(root.db_path)
    result = mirror.catch_up(conn, root)  # rebuilds first a database created empty
    for location, reason in result.unreadable:
        bucket, _, name = location.partition("/")
        folder = root.bucket(bucket) / name
        if (
            bucket == "inbox"
            and reject_grace_s is not None
            and _quiet_for(folder) >= reject_grace_s
        ):
            from incidents import store

            target = store.reject(root, folder, reason)
            output.err(f"incidents: {folder}: {reason}; moved to {target}")
        else:
            output.err(f"incidents: {folder}: {reason}")
    return conn


def _quiet_for(folder: Path) -> float:
    """Seconds since anything in `folder` last changed or arrived: the newest mtime or
    ctime of the folder and its entries, links not followed, as the watcher reads it
    (`watch/intake.py`). A copy that keeps the source's mtimes (`cp -a`, `tar x`, `mv`)
    has only its ctimes to say it has just arrived."""
    try:
        st = folder.lstat()
        newest = max(st.st_mtime, st.st_ctime)
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(folder) as it:
                for entry in it:
                    est = entry.stat(follow_symlinks=False)
                    newest = max(newest, est.st_mtime, est.st_ctime)
    except OSError:
        return 0.0
    return time.time() - newest


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


def group_lines(record: dict[str, Any]) -> list[str]:
    """`status ID`'s lines about its group (incidents.groups.group_record)."""
    lines = []
    if record["group"] != record["signature"] or record["decisions"]:
        lines.append(f"{'group:':16} {one_line(record['group'])}")
    for d in record["decisions"]:
        kind, at, by, why = (one_line(d.get(k)) for k in ("kind", "at", "by", "reason"))
        lines.append(
            f"{'':16} {kind} at {at} by {by}: {one_line(d.get('from'))!r} "
            f"-> {one_line(d.get('to'))!r}: {why}"
        )
    if record["regression_of"]:
        lines.append(
            f"{'regression:':16} #{record['regression_count']} of its group, of "
            f"{record['regression_of']} (resolved)"
        )
    return lines


OUTCOME_SHOWN = {
    "fixed": "fixed",
    "not_reproduced": "not reproduced (flaky)",
    "changed_before_check": "changed before check",
    "escalated": "escalated",
    "resolved_by_human": "resolved by a person",
}


def closed_outcome(bucket: str, outcome: str | None) -> str | None:
    """How a closed incident closed, as shown: the machine's outcome, except that an
    escalation a person then resolved (`resolve-escalation`; state.json keeps the
    machine's "escalated") is `resolved_by_human`, never "escalated" in `resolved`."""
    if bucket == "resolved" and outcome == "escalated":
        return "resolved_by_human"
    return outcome


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


def unwritable(root: Root) -> str | None:
    """Why nothing can be written in the root (a read-only mount, no permission), or None."""
    if os.access(root.state, os.W_OK):
        return None
    try:
        read_only = os.statvfs(root.state).f_flag & os.ST_RDONLY
    except OSError:
        read_only = 0
    return f"{root.path} is {'on a read-only filesystem' if read_only else 'not writable'}"


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
        "incidents": shown,
    }


def degraded_json(root: Root) -> dict[str, Any] | None:
    """This host last found the shared mirror unreachable (`incidents.fleet`), or None."""
    from incidents.fleet_state import degraded

    found = degraded(root)
    return None if found is None else {"since": clock.iso_at(found.since), "reason": found.reason}


def one_json(root: Root, incident_id: str) -> dict[str, Any]:
    """`status ID --json`: one incident in full, from its folder (MCP's `get_incident` too)."""
    from incidents import artifacts, fsutil, groups, store

    bucket, folder = root.locate(validate_id(incident_id))
    doc = store.read_incident(folder)
    state = outcome = None
    if (folder / artifacts.STATE).is_file():
        ctx_doc = fsutil.read_json_object(folder / artifacts.STATE)
        state, outcome = ctx_doc.get("current_state"), ctx_doc.get("outcome")
    runs_dir = root.runs_dir(incident_id)
    runs = sorted(os.listdir(runs_dir)) if runs_dir.is_dir() else []
    plan = root.plan_dir(incident_id) / artifacts.PLAN_JSON
    detail: dict[str, Any] = {
        "incident": doc,
        "bucket": bucket,
        "location": str(folder.relative_to(root.path)),
        "state": state,
        "files": sorted(os.listdir(folder)),
        "plan": str(plan.relative_to(root.path)) if plan.is_file() else None,
        "runs": runs,
        "outcome": closed_outcome(bucket, outcome) if isinstance(outcome, str) else None,
        "flaky_count": _flaky_count(root, doc["error_signature"]),
        "group": groups.group_record(root, incident_id),
    }
    return detail


def show_one(session: Session, incident_id: str, as_json: bool) -> int:
    from incidents import groups

    root = session.root
    detail = one_json(root, incident_id)
    doc: dict[str, Any] = detail["incident"]
    state, runs = detail["state"], detail["runs"]
    if as_json:
        output.out_json(detail)
        return 0
    for key in ("incident_id", "status", "step", "failure_class", "error_code", "message"):
        output.out(f"{key + ':':16} {one_line(doc.get(key))}")
    output.out(f"{'signature:':16} {one_line(doc['error_signature'])}")
    for line in group_lines(groups.group_record(root, incident_id)):
        output.out(line)
    output.out(f"{'occurrences:':16} {doc.get('occurrences', 1)} (last {doc.get('last_seen')})")
    output.out(f"{'created:':16} {doc['created_at']}  updated: {doc.get('updated_at')}")
    output.out(f"{'state:':16} {state or '-'}")
    output.out(f"{'location:':16} {detail['location']}")
    for key in ("python_files", "powershell_files", "verify"):
        if doc.get(key):
            output.out(f"{key + ':':16} {', '.join(doc[key])}")
    if doc.get("resolution"):
        output.out(f"{'resolution:':16} {one_line(doc['resolution'])}")
    outcome = detail["outcome"]
    if isinstance(outcome, str):
        output.out(f"{'outcome:':16} {OUTCOME_SHOWN.get(outcome, outcome)}")
    if detail["flaky_count"]:
        output.out(f"{'flaky:':16} {detail['flaky_count']} incident(s) of this signature "
                   "closed as not reproduced")  # fmt: skip
    output.out(f"{'plan:':16} {detail['plan'] or '-'}")
    output.out(f"{'runs:':16} {', '.join(runs) or '-'}")
    return 0


def _flaky_count(root: Root, signature: str) -> int | None:
    """Incidents of `signature` closed as not reproduced (the mirror's count, the mirror
    rebuilt from the folders when it is missing); None, and a warning, when the mirror
    cannot be opened (a full or read-only disk): the incident is shown all the same."""
    why = unwritable(root)
    if why is None:
        try:
            conn = open_mirror(root)
        except mirror.MirrorError as exc:
            why = str(exc)
        else:
            try:
                return mirror.flaky_counts(conn, [signature]).get(signature, 0)
            finally:
                conn.close()
    output.err(f"incidents: {why}: the count of flaky incidents of this signature is left out")
    return None


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


def register(app: typer.Typer) -> None:
    @app.command("status")
    def status(
        incident_id: Annotated[
            str | None, typer.Argument(metavar="[ID]", help="Show one incident in full.")
        ] = None,
        show_all: Annotated[bool, typer.Option("--all", help="Include archived ones.")] = False,
        status_filter: Annotated[
            str | None,
            typer.Option("--status", help="new, planned, running, resolved or escalated."),
        ] = None,
        step: Annotated[str | None, typer.Option("--step", help="Only this step.")] = None,
        since: Annotated[
            str | None, typer.Option("--since", help="Created since: 2h, 3d or an ISO time.")
        ] = None,
        all_hosts: Annotated[
            bool,
            typer.Option("--all-hosts", help="Every host sharing the mirror, with its name."),
        ] = False,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Show open incidents (from the mirror), or one incident in full."""
        # every argument is checked before the root is opened (which creates its layout)
        if incident_id is not None:
            validate_id(incident_id)
        now = datetime.now(UTC)
        since_iso = parse_since(since, now) if since else None
        check_status(status_filter)
        if incident_id is not None:
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
            output.out(f"resolved: {fixed} fixed, {flaky} not reproduced (flaky, no fix claimed)"
                       + (f", {human} by a person" if human else ""))  # fmt: skip
        return 0
