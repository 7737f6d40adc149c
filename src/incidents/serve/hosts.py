"""The fleet in the API: which host's rows a list shows, and an incident another host holds.

On a root bound to a shared PostgreSQL mirror (`[mirror] url`, issue 19) the mirror holds
every host's rows. `GET /api/incidents` lists every host's by default (the dashboard is the
team's view: `status --all-hosts`); `?all_hosts=false` lists this host's root's only (plain
`status`), `?host=NAME` one host's. Every row names its `host`; on SQLite every row is this
host's and names it (`[mirror] host`, else INCIDENTS_HOST, else the hostname).

`GET /api/incidents/{id}` of an incident another host holds answers its mirror row (the
bundle, its plan and its review card are on that host): `elsewhere` says so.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request

from incidents.commands import status as status_cmd
from incidents.errors import UsageError
from incidents.layout import Root
from incidents.mirror import IncidentRow
from incidents.mirror.target import HOST_NAME, target_of

__all__ = ["elsewhere", "this_host", "which_hosts"]


def this_host(root: Root) -> str:
    """The name this host's rows carry in the mirror."""
    return target_of(root.db_path).host


def which_hosts(request: Request) -> tuple[str | None, bool]:
    """(`host`: one host's rows, or None; `all_hosts`: every host's, else this root's)."""
    host = request.query_params.get("host") or None
    if host is not None and not HOST_NAME.fullmatch(host):
        raise UsageError(f"host {host[:200]!r}: letters, digits, '.', '_' and '-' (a host name)")
    text = request.query_params.get("all_hosts", "true").lower()
    if text not in ("true", "false", "1", "0"):
        raise UsageError(f"all_hosts {text!r}: use true or false")
    return host, text in ("true", "1")


def elsewhere(row: IncidentRow, host: str, now: datetime) -> dict[str, Any]:
    """The detail of an incident host `host` holds: its row, and where its bundle is."""
    return {
        "incident_id": row.incident_id,
        "host": host,
        "elsewhere": f"the bundle is on host {host}: its files, plan and review card are read "
        "there; a decision made here is sent to it and applied on its next pass",
        "bucket": row.bucket,
        "state": row.state,
        "row": {**status_cmd.row_json(row, now), "host": host},
    }
