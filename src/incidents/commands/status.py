"""`incidents status [ID]` as a typer command (`incidents.cli` reads a status line with
`status_cli` first, without typer); the functions the package shares live in
`status_list` and are importable from here by their old names."""

from __future__ import annotations

from typing import Annotated

import typer

from incidents.commands import status_list
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt
from incidents.commands.status_list import (
    check_status,
    list_json,
    one_json,
    parse_since,
    pause_json,
    row_json,
    spend_today,
)
from incidents.commands.status_read import closed_outcome, open_mirror

__all__ = [
    "check_status",
    "closed_outcome",
    "list_json",
    "one_json",
    "open_mirror",
    "parse_since",
    "pause_json",
    "register",
    "row_json",
    "spend_today",
]


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
        return status_list.run_status(
            incident_id, show_all, status_filter, step, since, all_hosts, root, config, as_json
        )
