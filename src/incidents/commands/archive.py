"""`incidents archive ID... | --group G --resolved|--escalated --reason TEXT`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from incidents import fleet, store
from incidents.commands.common import (
    ConfigOpt,
    JsonOpt,
    RootOpt,
    open_root,
    route_elsewhere,
    said_routed,
)
from incidents.commands.several import check_ids, decide_each, members
from incidents.errors import NotFound, UsageError
from incidents.layout import Root
from incidents.models.requests import ArchiveRequest, parse
from incidents.step import close as closing
from incidents.termtext import one_line


def close_by_hand(root: Root, incident_id: str, request: ArchiveRequest) -> dict[str, Any]:
    """Close an open incident by hand into `request.bucket`, as `archive` does (the HTTP
    API's archive too): what `archive --json` prints. An incident another host of a fleet's
    shared mirror holds is closed there, on that host's next pass."""
    bucket, reason = request.bucket, one_line(
        request.reason
    )  # stored and shown as one line of text
    if not reason:
        raise UsageError("archive: --reason is required (why is it closed?)")
    try:
        target = closing.archive(root, incident_id, bucket, reason)
    except NotFound as missing:  # a shared mirror: the host holding it applies it
        args = {"bucket": bucket, "reason": reason}
        return route_elsewhere(root, incident_id, fleet.ARCHIVE, args, missing)
    store.mirror_bundle(root, bucket, target, "archived", {"bucket": bucket})
    rel = target.relative_to(root.path)
    return {"incident_id": incident_id, "status": bucket, "archived_to": str(rel)}


def register(app: typer.Typer) -> None:
    @app.command("archive")
    def archive(
        incident_ids: Annotated[
            list[str] | None, typer.Argument(metavar="[ID ...]", help="The incidents to close.")
        ] = None,
        group: Annotated[
            str | None,
            typer.Option("--group", help="Every open incident of this group (id, signature)."),
        ] = None,
        resolved: Annotated[bool, typer.Option("--resolved", help="Close it as fixed.")] = False,
        escalated: Annotated[
            bool, typer.Option("--escalated", help="Close it as needing a human.")
        ] = False,
        reason: Annotated[str, typer.Option("--reason", help="Why it is closed.")] = "",
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Close open incidents: set each one's status, write run_result.json, move the folder."""
        ids = check_ids(incident_ids, group, "archive")
        if resolved == escalated:
            raise UsageError("archive: give exactly one of --resolved or --escalated")
        if not one_line(reason):  # told before the root is opened (which creates it)
            raise UsageError("archive: --reason is required (why is it closed?)")
        session = open_root(root, config, ids[0] if ids else None, create=bool(ids))
        bucket = "resolved" if resolved else "escalated"
        request = parse(ArchiveRequest, {"bucket": bucket, "reason": reason})
        if group is not None:
            ids = list(dict.fromkeys([*ids, *members(session.root, group, "inbox")]))

        def line(done: dict[str, Any]) -> str:
            if "routed_to" in done:
                return said_routed(done)
            return f"{done['incident_id']}: {bucket} -> {done['archived_to']}"

        def decide(incident_id: str) -> dict[str, Any]:
            return close_by_hand(session.root, incident_id, request)

        return decide_each(ids, decide, line, as_json, one=group is None and len(ids) == 1)
