"""`incidents watch` (the daemon) and `incidents doctor` (is this root healthy?)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from incidents import output
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root

WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers", min=1, max=64, help="Worker processes (default: [watch] workers, 1)."
    ),
]
OnceOpt = Annotated[bool, typer.Option("--once", help="One pass over what is in the inbox.")]
IdleOpt = Annotated[
    bool,
    typer.Option(
        "--until-idle", help="Drive everything to a close or to waiting for an agent, then exit."
    ),
]
PollOpt = Annotated[
    float | None,
    typer.Option(
        "--poll", min=0.05, help="Seconds between full rescans (default: [watch] poll_s)."
    ),
]
LogJsonOpt = Annotated[bool, typer.Option("--log-json", help="Log JSON lines on stderr.")]


def register(app: typer.Typer) -> None:
    @app.command("watch")
    def watch(
        root: RootOpt = None,
        config: ConfigOpt = None,
        workers: WorkersOpt = None,
        once: OnceOpt = False,
        until_idle: IdleOpt = False,
        poll: PollOpt = None,
        log_json: LogJsonOpt = False,
    ) -> int:
        """Watch the inbox and drive every incident up the ladder with a pool of workers."""
        from incidents.errors import UsageError
        from incidents.watch.daemon import Watcher
        from incidents.watch.log import Display, Log
        from incidents.watch.schedule import Mode

        if once and until_idle:
            raise UsageError("--once and --until-idle exclude each other")
        session = open_root(root, config)
        mode = Mode.ONCE if once else Mode.UNTIL_IDLE if until_idle else Mode.FOREVER
        log = Log(as_json=log_json)
        watcher = Watcher(session.root, session.config, workers=workers, poll_s=poll, log=log)
        if log_json or not sys.stderr.isatty():
            watcher.work(mode)
        else:
            with Display(str(session.root.path)) as display:
                log.display = display
                watcher.display = display
                watcher.work(mode)
        if watcher.failures:  # failed ticks are no clean run (cron must see them)
            output.err(f"incidents: watch: {watcher.failures} failed pickup(s); see the log")
            return 1
        return 0

    @app.command("doctor")
    def doctor(root: RootOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False) -> int:
        """Check the root's layout and permissions, the database, the tools, leases, pause."""
        from incidents.commands.common import bind_mirror
        from incidents.commands.roots import require_root, root_of_config
        from incidents.config import Config, load_config
        from incidents.doctor import diagnose
        from incidents.doctor_inbox import Finding
        from incidents.errors import ConfigError
        from incidents.layout import resolve_root

        problem: list[Finding] = []
        try:
            cfg = load_config(config)
        except ConfigError as exc:  # a finding like any other: the rest is still diagnosed
            problem = [Finding("config", "fail", str(exc), "correct the key it names")]
            cfg = Config(root=root_of_config(config))
        found = resolve_root(root, cfg.root)
        require_root(found)
        bind_mirror(found, cfg)
        findings = problem + diagnose(found, cfg)
        if as_json:
            output.out_json([f.to_json() for f in findings])
        else:
            for f in findings:
                output.out(f.line())
        bad = [f for f in findings if f.level == "fail"]
        if not as_json:
            warned = sum(f.level == "warn" for f in findings)
            output.out(f"\n{len(bad)} problem(s), {warned} warning(s)")
        return 1 if bad else 0
