"""`incidents status`'s command line, read without typer: the list of open incidents is
what people and scripts run most, and typer (with the pydantic it coerces options through)
costs more than the whole list. The options are the typer command's
(`incidents.commands.status`; a test keeps the two the same)."""

from __future__ import annotations

import argparse
from typing import NoReturn

from incidents.errors import UsageError

DESCRIPTION = "Show open incidents (from the mirror), or one incident in full."


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"status: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="incidents status", description=DESCRIPTION)
    p.add_argument("incident_id", nargs="?", metavar="ID", help="Show one incident in full.")
    p.add_argument("--all", dest="show_all", action="store_true", help="Include archived ones.")
    p.add_argument("--status", help="new, planned, running, resolved or escalated.")
    p.add_argument("--step", help="Only this step.")
    p.add_argument("--since", help="Created since: 2h, 3d or an ISO time.")
    p.add_argument(
        "--all-hosts", action="store_true", help="Every host sharing the mirror, with its name."
    )
    p.add_argument(
        "--root", help="Reports root (default: INCIDENTS_ROOT, config `root`, ./reports)."
    )
    p.add_argument("--config", help="incidents.toml (default: INCIDENTS_CONFIG, ./incidents.toml).")
    p.add_argument(
        "--json", dest="as_json", action="store_true", help="Print JSON instead of text."
    )
    return p


def main(argv: list[str]) -> int:
    """`argv`: what follows `status`."""
    try:
        a = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    from incidents.commands.status_list import run_status

    return run_status(
        a.incident_id,
        a.show_all,
        a.status,
        a.step,
        a.since,
        a.all_hosts,
        a.root,
        a.config,
        a.as_json,
    )
