"""`incidents review [--open]` and `incidents import-legacy PATH`."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from incidents import legacy, mirror, output, review
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root
from incidents.errors import IncidentsError, UsageError


def _review(
    root: str | None, config: str | None, open_it: bool, as_json: bool, stdout: bool = False
) -> int:
    session = open_root(root, config)
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


def _import(path: str, root: str | None, config: str | None, as_json: bool) -> int:
    session = open_root(root, config)
    conn = mirror.connect(session.root.db_path)
    try:
        result = legacy.import_file(conn, Path(path))
    finally:
        conn.close()
    doc = {
        "path": str(result.path),
        "run_id": result.run_id,
        "already_imported": result.already,
        "tasks": result.tasks,
        "attempts": result.attempts,
        "renamed_to": str(result.renamed_to) if result.renamed_to else None,
    }
    if as_json:
        output.out_json(doc)
        return 0
    if result.already and not result.run_id:
        output.out(
            f"{result.path}: already imported (renamed to {result.renamed_to}); nothing to do"
        )
        return 0
    head = "already imported; nothing imported twice" if result.already else "imported"
    output.out(
        f"{result.path}: {head}: {result.tasks} task(s), {result.attempts} attempt(s) "
        f"as run {result.run_id}"
    )
    if result.renamed_to:
        output.out(f"renamed to {result.renamed_to}")
    elif result.kept_because:
        output.out(f"left in place: {result.kept_because}")
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

    @app.command("import-legacy")
    def import_legacy(
        path: Annotated[
            str, typer.Argument(metavar="PATH", help="The legacy .executor-state.json.")
        ],
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Import a legacy executor state file (seed 002) into the SQLite mirror.

        Accepted shape: {"tasks": {TASK_ID: {"status", "started_at", "completed_at",
        "attempts": [{"timestamp", "success", "duration_seconds", "error", "error_code",
        "claude_output"}]}}, "consecutive_failures", "total_completed", "total_failed"};
        `tasks` may also be a list of objects with "task_id", attempts may also sit in a
        top-level "attempts" list with "task_id", the counters under "meta". Each task and
        attempt becomes a step_attempts row and an event; the file is then renamed to
        PATH.bak. Importing the same content twice imports nothing twice. A corrupt,
        unreadable or wrongly shaped file is refused (exit 2) and left untouched.
        """
        return _import(path, root, config, as_json)
