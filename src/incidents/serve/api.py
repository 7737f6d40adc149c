"""The API's reads: lists and counts from the mirror (on the server's reader thread), one
incident in full from its folder (`status ID --json`, plus its plan, verdict, review card
and events), a run's escalations, the server's health."""

from __future__ import annotations

import dataclasses
import functools
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from incidents import artifacts, fsutil, mirror
from incidents.commands import status as status_cmd
from incidents.errors import IncidentsError, NotFound, UsageError
from incidents.layout import Root, validate_id
from incidents.mirror import feed
from incidents.redact import redact, redact_json
from incidents.serve import hosts as fleet_view
from incidents.serve.events import to_json
from incidents.serve.hub import Hub
from incidents.serve.reader import Reader

PAGE_DEFAULT, PAGE_MAX = 50, 500
ALL_BUCKETS = ("inbox", "resolved", "escalated")


def _reply(doc: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(redact_json(doc), status_code=status)


# A row's texts are redacted again on the way out (a hand-written bundle's signature or step
# never met capture), through a cache: the same texts come back in every page, and
# redacting 50 rows afresh cost 6 ms of a 9 ms answer on 20,000 incidents.
_redact_text = functools.lru_cache(maxsize=1 << 16)(redact)


def _row_out(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        k: _redact_text(v) if isinstance(v, str) else (redact_json(v) if v else v)
        for k, v in doc.items()
    }


def _int(request: Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        raise UsageError(f"{name} {text!r}: use a whole number from {low} to {high}")
    return int(text)


def _flag(request: Request, name: str) -> bool:
    text = request.query_params.get(name, "false").lower()
    if text not in ("true", "false", "1", "0"):
        raise UsageError(f"{name} {text!r}: use true or false")
    return text in ("true", "1")


async def list_incidents(request: Request) -> JSONResponse:
    """`status --json`'s rows, filtered as `status` filters them, a page at a time."""
    root: Root = request.app.state.root
    reader: Reader = request.app.state.reader
    now = datetime.now(UTC)
    status = request.query_params.get("status") or None
    status_cmd.check_status(status)
    step = request.query_params.get("step") or None
    since_text = request.query_params.get("since")
    since = status_cmd.parse_since(since_text, now) if since_text else None
    limit = _int(request, "limit", PAGE_DEFAULT, 1, PAGE_MAX)
    offset = _int(request, "offset", 0, 0, 10**9)
    show_all = _flag(request, "all") or status in ("resolved", "escalated")
    buckets = ALL_BUCKETS if show_all else ("inbox",)
    on_hosts = fleet_view.which_hosts(request)
    rows, total, outcomes, held = await reader.run(
        _page, buckets, status, step, since, limit, offset, on_hosts
    )
    leases, mine = root.state / "leases", fleet_view.this_host(root)
    hub: Hub = request.app.state.hub
    paused = status_cmd.pause_json(root)
    return JSONResponse(
        {
            "root": str(root.path),
            "host": mine,
            "paused": redact_json(paused) if paused else None,
            "spend": status_cmd.spend_today(root, now),  # the AI fixers', today (UTC)
            "total": total,
            "limit": limit,
            "offset": offset,
            "last_event_id": hub.position,
            "incidents": [
                _row_out(
                    {
                        **status_cmd.row_json(
                            _lease(leases, r) if held[r.incident_id] == mine else r, now, paused
                        ),
                        "outcome": outcomes.get(r.incident_id),
                        "host": held[r.incident_id],
                    }
                )
                for r in rows
            ],
        }
    )


def _lease(leases: Path, row: mirror.IncidentRow) -> mirror.IncidentRow:
    """A claim may have expired since its row was written (as `status` checks it)."""
    if not row.lease_owner:
        return row
    return dataclasses.replace(row, lease_owner=mirror.agent_holding(leases, row.incident_id))


def _page(
    conn: Any, buckets: tuple[str, ...], status: str | None, step: str | None,
    since: str | None, limit: int, offset: int, on_hosts: tuple[str | None, bool],
) -> tuple[list[mirror.IncidentRow], int, dict[str, str], dict[str, str]]:  # fmt: skip
    held: dict[str, str] = {}
    rows, total = feed.page_incidents(
        conn, buckets=buckets, status=status, step=step, since=since, limit=limit, offset=offset,
        host=on_hosts[0], all_hosts=on_hosts[1], hosts=held,
    )  # fmt: skip
    closed = [r for r in rows if r.bucket != "inbox"]
    found = mirror.outcomes(conn, [r.incident_id for r in closed]) if closed else {}
    where = {r.incident_id: r.bucket for r in closed}
    outcomes = {i: status_cmd.closed_outcome(where[i], o) or o for i, o in found.items()}
    return rows, total, outcomes, held


async def get_incident(request: Request) -> JSONResponse:
    """One incident in full: `status ID --json`, its plan and verdict documents, the review
    page's card (timeline, checks, AI notes, diffs) and its events from the mirror."""
    root: Root = request.app.state.root
    incident_id = validate_id(request.path_params["incident_id"])
    reader: Reader = request.app.state.reader
    try:
        detail = await run_in_threadpool(_detail, root, incident_id)
    except NotFound:  # a shared mirror: another host may hold it
        held = await reader.run(feed.held_row, incident_id)
        if held is None or held[1] == fleet_view.this_host(root):
            raise
        detail = fleet_view.elsewhere(*held, datetime.now(UTC))
    hub: Hub = request.app.state.hub
    found = await reader.run(feed.incident_events, incident_id, 500)
    detail["events"] = [to_json(e, hub.mark) for e in found]
    return _reply(detail)


def _detail(root: Root, incident_id: str) -> dict[str, Any]:
    from incidents.review.gather import read_card
    from incidents.review.render import decision_command

    detail = {**status_cmd.one_json(root, incident_id), "host": fleet_view.this_host(root)}
    detail["plan_doc"] = _document(root.plan_dir(incident_id) / artifacts.PLAN_JSON)
    detail["verdict"] = _document(root.runs_dir(incident_id) / artifacts.RUN_RESULT)
    bucket, folder = root.locate(incident_id)
    card = dataclasses.asdict(read_card(folder, bucket))
    evidence = card.pop("evidence")  # one place in the answer: the page and alerts say it
    if evidence and evidence["suggestion"]["argv"]:
        argv = evidence["suggestion"]["argv"]
        evidence["suggestion"]["command"] = decision_command(argv, str(root.path))
    detail["review"], detail["evidence"] = card, evidence
    return detail


def _document(path: Path) -> Any:
    if not os.path.lexists(path):
        return None
    try:
        return fsutil.read_json(path)
    except IncidentsError as exc:
        return {"unreadable": str(exc)}


async def run_escalations(request: Request) -> JSONResponse:
    """`GET /api/jobs/{run_id}/escalations` (seed 003): the escalations of a run's incidents."""
    run_id = request.path_params["run_id"]
    if not run_id or len(run_id) > 200:
        raise UsageError(f"run id {run_id[:200]!r}: 1 to 200 characters")
    reader: Reader = request.app.state.reader
    found = await reader.run(feed.run_escalations, run_id)
    if found is None:
        raise NotFound(f"no run {run_id!r} in the mirror")
    return _reply(
        {
            "run_id": run_id,
            "escalations": [
                {**dataclasses.asdict(e), "open": e.resolved_at is None} for e in found
            ],
        }
    )


async def health(request: Request) -> JSONResponse:
    root: Root = request.app.state.root
    hub: Hub = request.app.state.hub
    reader: Reader = request.app.state.reader
    counts = await reader.run(feed.incident_counts)
    h = hub.health
    return _reply(
        {
            "ok": h.catch_up_error is None,
            "root": str(root.path),
            "paused": status_cmd.pause_json(root),
            "counts": counts,
            "last_event_id": hub.position,
            "stream_clients": len(hub.subscribers),
            "mirror": {
                "caught_up_at": _iso(h.caught_up_at),
                "polled_at": _iso(h.polled_at),
                "error": h.catch_up_error,
            },
        }
    )


def _iso(ts: float | None) -> str | None:
    from incidents.clock import iso_precise

    return iso_precise(ts) if ts is not None else None
