"""`incidents status`'s command line, read without typer: the list of open incidents is
what people and scripts run most, and typer (with the pydantic it coerces options through)
costs more than the whole list. The options are the typer command's
(`incidents.commands.status`; a test keeps the two the same)."""

from __future__ import annotations

from incidents.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace
    from typing import NoReturn

DESCRIPTION = "Show open incidents (from the mirror), or one incident in full."


def build_parser() -> argparse.ArgumentParser:
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(f"status: {message}")

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


# The flags a plain line is made of: read without argparse (its import is a tenth of the
# list's start), anything else goes through it.
_FLAGS = {"--all": "show_all", "--json": "as_json", "--all-hosts": "all_hosts"}


def parse(argv: list[str]) -> argparse.Namespace | SimpleNamespace:
    if set(argv) <= set(_FLAGS):
        from types import SimpleNamespace

        flags = {dest: name in argv for name, dest in _FLAGS.items()}
        none = dict.fromkeys(("incident_id", "status", "step", "since", "root", "config"))
        return SimpleNamespace(**none, **flags)
    return build_parser().parse_args(argv)


def main(argv: list[str]) -> int:
    """`argv`: what follows `status`."""
    try:
        a = parse(argv)
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
