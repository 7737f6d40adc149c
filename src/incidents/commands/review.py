"""`incidents review [--open]`."""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer

from incidents import output, review
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root
from incidents.errors import IncidentsError, UsageError


def _review(
    root: str | None, config: str | None, open_it: bool, as_json: bool, stdout: bool = False
) -> int:
    session = open_root(root, config, create=False)
    if stdout:  # reads the folders only: works on a read-only root
        if open_it:
            raise UsageError("--stdout and --open exclude each other")
        html, _, _ = review.build(session.root)
        output.out(html.rstrip("\n"))
        return 0
    result = review.write(session.root)
    doc = {
        "path": str(result.path),
        "escalated": len(result.escalated),
        "resolved": len(result.resolved),
        # resolved is not "fixed": a failure that passed with no change was not reproduced
        "fixed": sum(1 for c in result.resolved if c.outcome in ("fixed", "")),
        "not_reproduced": sum(1 for c in result.resolved if c.outcome == "not_reproduced"),
        "flaky_by_signature": {
            c.signature: c.flaky_count for c in result.resolved + result.escalated if c.flaky_count
        },
        "seconds": result.seconds,
    }
    if as_json:
        output.out_json(doc)
    else:
        output.out(
            f"{result.path}: {doc['escalated']} escalated, {doc['resolved']} resolved "
            f"({doc['fixed']} fixed, {doc['not_reproduced']} not reproduced: flaky) "
            f"({result.seconds}s)"
        )
    if open_it and not webbrowser.open(result.path.as_uri()):
        raise IncidentsError(f"no browser could be started; open {result.path.as_uri()} yourself")
    return 0


def register(app: typer.Typer) -> None:
    @app.command("review")
    def review_cmd(
        open_it: Annotated[
            bool, typer.Option("--open", help="Open the page in the default browser.")
        ] = False,
        stdout: Annotated[
            bool,
            typer.Option(
                "--stdout", help="Print the page instead of writing it (a read-only root)."
            ),
        ] = False,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Write reports/error_review/index.html: one self-contained page of the escalated
        archive (newest first, filters by step, failure class and reason; resolved incidents
        in a second tab). No server, no network: open the file in any browser."""
        return _review(root, config, open_it, as_json, stdout)
