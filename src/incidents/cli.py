"""The `incidents` command line.

`main(argv) -> int` is the one entry point (console script, `scripts/*.py`, tests).
`capture` and `run` take a lean stdlib path (failing scripts call them); `status` is read
with argparse (`commands.status_cli`), `--help` and `--version` answered from files, all
before typer loads; `check` first tries to replay its last report (incidents.checks.replay,
stdlib only too); every other command is a typer command registered from
`incidents.commands.*`, only the called command's module imported.
"""

from __future__ import annotations

import os
import sys
import time

from incidents.errors import IncidentsError, disk_failure

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from collections.abc import Sequence

    import typer

LEAN_COMMANDS = ("capture", "run")
HELP_FILE = "cli_help.txt"  # `incidents --help`, generated from the app (incidents.cli_help)
# Each module defines `register(app)`; adding a command family is one line here.
COMMAND_MODULES = (
    "incidents.commands.lean",
    "incidents.commands.status",
    "incidents.commands.explain",
    "incidents.commands.archive",
    "incidents.commands.admin",
    "incidents.commands.check",
    "incidents.commands.plan",
    "incidents.commands.step",
    "incidents.commands.handoff",
    "incidents.commands.watch",
    "incidents.commands.review",
    "incidents.commands.verify_archive",
    "incidents.commands.group",
    "incidents.commands.tasks",
    "incidents.commands.skills",
    "incidents.commands.mcp",
    "incidents.commands.serve",
    "incidents.commands.notify",
)


# Commands whose module is known are started with only that module imported (the startup
# of `incidents check` on a warm cache is mostly imports); any other name loads them all.
COMMAND_HOMES = {
    "check": "incidents.commands.check",
    "fix": "incidents.commands.check",
    "status": "incidents.commands.status",
    "explain": "incidents.commands.explain",
    "step": "incidents.commands.step",
    "drive": "incidents.commands.step",
    "error-step": "incidents.commands.step",
    "verify-archive": "incidents.commands.verify_archive",
    "group": "incidents.commands.group",
    "tasks": "incidents.commands.tasks",
    "import-legacy": "incidents.commands.tasks",
    "skills": "incidents.commands.skills",
    "mcp": "incidents.commands.mcp",
    "serve": "incidents.commands.serve",
    "notify": "incidents.commands.notify",
    "archive": "incidents.commands.archive",
    "schemas": "incidents.commands.admin",
    "pause": "incidents.commands.admin",
    "resume": "incidents.commands.admin",
    "reindex": "incidents.commands.admin",
    "plan": "incidents.commands.plan",
    "next": "incidents.commands.handoff",
    "claim": "incidents.commands.handoff",
    "submit": "incidents.commands.handoff",
    "attempt": "incidents.commands.handoff",
    "resolve-escalation": "incidents.commands.handoff",
    "watch": "incidents.commands.watch",
    "doctor": "incidents.commands.watch",
    "review": "incidents.commands.review",
}


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app; `only` names the one command the caller will run (or None: all)."""
    import importlib

    import typer

    app = typer.Typer(
        name="incidents",
        help="Turn failures of automation steps into incident bundles and drive them to a close.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    home = COMMAND_HOMES.get(only or "")
    if home:  # a module with one command must stay a group: else `status` reads as an ID
        app.callback()(lambda: None)
    for name in (home,) if home else COMMAND_MODULES:
        importlib.import_module(name).register(app)
    return app


def _crash_log(exc: BaseException) -> str:
    import traceback

    given = os.environ.get("INCIDENTS_CRASH_DIR")
    base = given or os.path.join(os.path.expanduser("~"), ".cache", "incidents", "crash")
    try:
        from incidents.fsutil import ensure_dir, write_new_file

        ensure_dir(base)  # 0700, the missing parents too: a traceback may show secrets
        if not given and os.stat(base).st_mode & 0o077:
            os.chmod(base, 0o700)  # ours by name: made looser by hand, or by an old version
        path = os.path.join(base, f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log")
        write_new_file(path, "".join(traceback.format_exception(exc)).encode("utf-8"))
        return path
    except OSError:
        return "(could not write a crash log)"


def _run_app(args: list[str]) -> int:
    import typer

    from incidents import output

    # typer >= 0.20 vendors click: take its exception classes from typer's own hierarchy
    bases = {cls.__name__: cls for cls in typer.BadParameter.__mro__}
    click_exception: type[Exception] = bases["ClickException"]
    usage_error: type[Exception] = bases["UsageError"]
    try:
        first = args[0] if args and not args[0].startswith("-") else None
        result = build_app(first)(args, standalone_mode=False, prog_name="incidents")
    except typer.Exit as exc:
        return int(getattr(exc, "exit_code", 0) or 0)
    except typer.Abort:
        output.err("incidents: aborted")
        return 130
    except click_exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            ctx = getattr(exc, "ctx", None)
            output.out(ctx.get_help() if ctx is not None else "usage: incidents COMMAND --help")
            return 0
        output.err(f"incidents: {getattr(exc, 'format_message', exc.__str__)()}")
        return 2 if isinstance(exc, usage_error) else int(getattr(exc, "exit_code", 1))
    return int(result) if isinstance(result, int) else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args in ([], ["--help"]):  # no command module, no typer: a file read
            with open(os.path.join(os.path.dirname(__file__), HELP_FILE), encoding="utf-8") as fh:
                sys.stdout.write(fh.read())  # generated by incidents.cli_help
            return 0
        if args in (["--version"], ["-V"]):
            from incidents import __version__

            sys.stdout.write(f"incidents {__version__}\n")
            return 0
        if args and args[0] in LEAN_COMMANDS:  # stdlib only: a failing script waits for it
            if args[0] == "run":
                from incidents.capture_run import main as run_main

                return run_main(args)
            from incidents.capture import main as capture_main

            return capture_main(args)
        if args and args[0] == "status":  # read without typer: the list is run most
            from incidents.commands import status_cli

            return status_cli.main(args[1:])
        if args and args[0] == "check":
            from incidents.checks.replay import try_replay

            code = try_replay(args[1:])
            if code is not None:
                return code
        return _run_app(args)
    except IncidentsError as exc:
        from incidents import output  # only when something is said: not on capture's path

        output.err(f"incidents: {exc}")
        return 1 if disk_failure(exc) is not None else exc.exit_code
    except KeyboardInterrupt:
        from incidents import output

        output.err("incidents: interrupted")
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # a bug: say where the details are, not a traceback wall
        from incidents import output

        disk = disk_failure(exc)
        if disk is not None:  # a full or read-only disk is no bug: one line, no crash log
            output.err(f"incidents: {disk}")
            return 1
        path = _crash_log(exc)
        output.err(f"incidents: internal error: {exc.__class__.__name__}: {exc} (details: {path})")
        return 3


if __name__ == "__main__":
    sys.exit(main())
