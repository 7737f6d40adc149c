"""`incidents tasks [STATE_FILE]` and `incidents import-legacy PATH`: seed 002's executor
state, read and migrated (incidents.executor, incidents.executor_migrate)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import typer

from incidents import output
from incidents.commands.common import JsonOpt
from incidents.errors import UsageError

ERROR_CHARS = 100  # of an attempt's error shown per line in the text listing


def _read(path: Path) -> dict[str, Any]:
    from incidents import executor_db, executor_migrate

    if not os.path.lexists(path):
        legacy = executor_migrate.json_for(path)
        hint = (
            f"; a legacy {legacy.name} is beside it: run `incidents import-legacy {legacy}`"
            if os.path.lexists(legacy)
            else ""
        )
        raise UsageError(f"{path}: no such executor state file{hint}")
    if not path.is_file():
        raise UsageError(f"{path}: not a regular file")
    try:
        conn = executor_db.connect_readonly(path)
        try:
            if not executor_db.has_tables(conn):
                raise UsageError(f"{path}: not an executor state file (no `tasks` table)")
            return executor_db.snapshot(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise UsageError(f"{path}: not an executor state database ({exc})") from exc


def _attempt_line(number: int, a: dict[str, Any]) -> str:
    outcome = "ok" if a["success"] else "failed"
    code = a["error_code"] or "-"
    error = " ".join((a["error"] or "").split())
    if len(error) > ERROR_CHARS:
        error = error[: ERROR_CHARS - 1] + "…"
    return (
        f"    #{number} {a['timestamp']} {outcome} {a['duration_seconds']:.1f}s {code}"
        + (f" {error}" if error else "")
    ).rstrip()


def _tasks(state_file: str | None, as_json: bool) -> int:
    from incidents.executor import ExecutorConfig

    path = Path(os.path.abspath(state_file)) if state_file else ExecutorConfig().path
    doc = _read(path)
    if as_json:
        output.out_json({"state_file": str(path), **doc})
        return 0
    output.out(
        f"{path}: {len(doc['tasks'])} task(s); consecutive_failures={doc['consecutive_failures']} "
        f"total_completed={doc['total_completed']} total_failed={doc['total_failed']}"
    )
    for item in doc["imported"]:
        output.out(
            f"imported from {item.get('path', '?')} at {item.get('imported_at', '?')}: "
            f"{item.get('tasks', 0)} task(s), {item.get('attempts', 0)} attempt(s)"
        )
    rows = [
        [t["task_id"], t["status"], str(len(t["attempts"])), t["started_at"] or "-",
         t["completed_at"] or "-"]
        for t in doc["tasks"]
    ]  # fmt: skip
    if not rows:
        return 0
    table = output.table(["TASK", "STATUS", "ATTEMPTS", "STARTED", "COMPLETED"], rows)
    lines = table.splitlines()
    output.out(lines[0])
    for line, task in zip(lines[1:], doc["tasks"], strict=True):
        output.out(line)
        for number, attempt in enumerate(task["attempts"], 1):
            output.out(_attempt_line(number, attempt))
    return 0


def _import(path: str, state_file: str | None, as_json: bool) -> int:
    from incidents import executor_migrate

    target = Path(state_file) if state_file else None
    folder = (target or Path(os.path.abspath(path))).parent.absolute()
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder for the state file")
    result = executor_migrate.import_file(Path(path), target)
    doc = {
        "path": str(result.source),
        "state_file": str(result.state_file),
        "created": result.created,
        "already_imported": result.already,
        "tasks": result.tasks,
        "attempts": result.attempts,
        "renamed_to": str(result.renamed_to) if result.renamed_to else None,
        "left_in_place": result.kept_because or None,
    }
    if as_json:
        output.out_json(doc)
        return 0
    if result.already and result.renamed_to and not result.tasks:
        output.out(
            f"{result.source}: already imported (renamed to {result.renamed_to}); nothing to do"
        )
        return 0
    head = "already imported; nothing imported twice" if result.already else "imported"
    output.out(
        f"{result.source}: {head}: {result.tasks} task(s), {result.attempts} attempt(s) "
        f"into {result.state_file}"
    )
    if result.renamed_to:
        output.out(f"renamed to {result.renamed_to}")
    elif result.kept_because:
        output.out(f"left in place: {result.kept_because}")
    return 0


def register(app: typer.Typer) -> None:
    @app.command("tasks")
    def tasks_cmd(
        state_file: Annotated[
            str | None,
            typer.Argument(
                metavar="[STATE_FILE]",
                help="The executor state file (default: spec/.executor-state.db).",
            ),
        ] = None,
        as_json: JsonOpt = False,
    ) -> int:
        """List an executor state file's tasks and their attempts (seed 002), with its
        counters and the legacy files imported into it. Reads only: never creates,
        migrates or changes the file."""
        return _tasks(state_file, as_json)

    @app.command("import-legacy")
    def import_legacy(
        path: Annotated[
            str, typer.Argument(metavar="PATH", help="The legacy .executor-state.json.")
        ],
        state_file: Annotated[
            str | None,
            typer.Option(
                "--state-file",
                help="The SQLite state file to import into (default: PATH with .json -> .db).",
            ),
        ] = None,
        root: Annotated[str | None, typer.Option("--root", hidden=True)] = None,
        config: Annotated[str | None, typer.Option("--config", hidden=True)] = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Convert a legacy executor state file (seed 002's .executor-state.json) into the
        SQLite state file beside it (.executor-state.db), then rename it to PATH.bak.

        The migration ExecutorState runs when it opens; run it by hand to migrate ahead of
        time, to merge a JSON into an existing state file (only the attempts it does not
        hold yet), or to rebuild a lost state file from PATH.bak (kept as it is). Importing
        the same content twice imports nothing twice. A corrupt, unreadable or wrongly
        shaped file is refused (exit 2) and left untouched. `incidents tasks` shows the
        result. (--root and --config are accepted and ignored: the state is not in the root.)
        """
        del root, config
        return _import(path, state_file, as_json)
