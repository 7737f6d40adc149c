"""`incidents group merge SIG_A SIG_B --reason TEXT` and `incidents group split ID --reason TEXT`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from incidents import groups, output
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root
from incidents.termtext import one_line

ReasonOpt = Annotated[
    str | None,
    typer.Option("--reason", help="Why (required; kept in every bundle it moves, redacted)."),
]
_SIDE = (
    "an incident id (its group), a signature (as `status ID` shows it), a group key, or "
    "the 24-hex key of a signature or group"
)


def _show(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        output.out_json(result)
        return
    moved = result["incidents"]
    output.out(
        f"{result['kind']}: {len(moved)} incident(s) moved from {one_line(result['from'])!r} to "
        f"{one_line(result['to'])!r}"
    )
    for incident_id in moved:
        output.out(f"  {incident_id}")


def register(app: typer.Typer) -> None:
    group_app = typer.Typer(
        help="Merge two groups of incidents into one, or split an incident from its group.",
        no_args_is_help=True,
    )
    app.add_typer(group_app, name="group")

    @group_app.command("merge")
    def merge(
        sig_a: Annotated[
            str, typer.Argument(metavar="SIG_A", help=f"The group that stays: {_SIDE}.")
        ],
        sig_b: Annotated[
            str, typer.Argument(metavar="SIG_B", help=f"The group merged into it: {_SIDE}.")
        ],
        reason: ReasonOpt = None,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """From now on SIG_B's incidents belong to SIG_A's group: its incidents (open and
        closed) move, its captures fold into SIG_A's open incident, budgets are shared."""
        groups.check_reason(reason, "merge")
        session = open_root(root, config)
        _show(groups.merge(session.root, sig_a, sig_b, reason), as_json)
        return 0

    @group_app.command("split")
    def split(
        incident_id: Annotated[str, typer.Argument(metavar="ID", help="The incident to split.")],
        reason: ReasonOpt = None,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """The incident leaves its group and starts its own (`split:ID`): its budget and
        regressions count apart, and captures of its signature no longer fold into it."""
        groups.check_reason(reason, "split")
        session = open_root(root, config)
        _show(groups.split(session.root, incident_id, reason), as_json)
        return 0
