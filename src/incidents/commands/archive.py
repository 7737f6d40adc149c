"""`incidents archive ID --resolved|--escalated --reason TEXT`."""

from __future__ import annotations

from typing import Annotated

import typer

from incidents import fleet, output, store
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root, routed
from incidents.errors import NotFound, UsageError
from incidents.layout import validate_id
from incidents.step import close as closing
from incidents.termtext import one_line


def register(app: typer.Typer) -> None:
    @app.command("archive")
    def archive(
        incident_id: Annotated[str, typer.Argument(metavar="ID", help="The incident to close.")],
        resolved: Annotated[bool, typer.Option("--resolved", help="Close it as fixed.")] = False,
        escalated: Annotated[
            bool, typer.Option("--escalated", help="Close it as needing a human.")
        ] = False,
        reason: Annotated[str, typer.Option("--reason", help="Why it is closed.")] = "",
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Close an open incident: set its status, write run_result.json, move the folder."""
        validate_id(incident_id)
        if resolved == escalated:
            raise UsageError("archive: give exactly one of --resolved or --escalated")
        reason = one_line(reason)  # stored and shown as one line of text
        if not reason:
            raise UsageError("archive: --reason is required (why is it closed?)")
        session = open_root(root, config, incident_id)
        bucket = "resolved" if resolved else "escalated"
        try:
            target = closing.archive(session.root, incident_id, bucket, reason)
        except NotFound:  # a shared mirror: the host holding it applies it on its next pass
            args = {"bucket": bucket, "reason": reason}
            if not routed(session.root, incident_id, fleet.ARCHIVE, args, as_json):
                raise
            return 0
        store.mirror_bundle(session.root, bucket, target, "archived", {"bucket": bucket})
        rel = target.relative_to(session.root.path)
        if as_json:
            output.out_json({"incident_id": incident_id, "status": bucket, "archived_to": str(rel)})
        else:
            output.out(f"{incident_id}: {bucket} -> {rel}")
        return 0
