"""Maintenance: `incidents reindex`."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from incidents import fleet, mirror, output, pause
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, Session, open_root
from incidents.errors import UsageError, disk_failure_at
from incidents.layout import Root
from incidents.mirror.target import HOST_NAME, bind, target_of
from incidents.models.requests import PauseRequest, parse


def register(app: typer.Typer) -> None:
    register_schemas(app)
    register_pause(app)

    @app.command("reindex")
    def reindex(
        host: Annotated[
            str | None,
            typer.Option(
                "--host",
                help="On a shared PostgreSQL mirror: rebuild the rows of this host (default: "
                "this one's) from this root.",
            ),
        ] = None,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Rebuild the mirror from the folders (the folders are the truth)."""
        session = open_root(root, config)
        if host is not None:
            rebind_host(session, host)
        try:
            result = mirror.reindex(session.root)
        except mirror.MirrorError as exc:  # SQLite names no errno: statvfs tells full/ro
            raise disk_failure_at(exc, str(session.root.db_path)) or exc from exc
        if as_json:
            output.out_json(asdict(result))
            return 0
        counts = ", ".join(f"{n} {bucket}" for bucket, n in sorted(result.counts.items()))
        shown = target_of(session.root.db_path)
        where = f"host {shown.host} in {shown.shown}" if shown.url else str(session.root.db_path)
        output.out(f"reindexed {where}: {counts or 'no incidents'}")
        for location, reason in result.unreadable:
            output.err(f"unreadable: {location}: {reason}")
        if result.moved_aside:
            output.err(f"the corrupt database was moved aside to {result.moved_aside}")
        return 0


def rebind_host(session: Session, host: str) -> None:
    """`reindex --host`: this root's rows are written as `host`'s (a root moved to another
    machine, a renamed host, a shared inbox whose watchers share one host name)."""
    found = target_of(session.root.db_path)
    if found.url is None:
        raise UsageError(
            "--host: the mirror is this root's own SQLite file (one root, one host); --host "
            "names a host of a shared PostgreSQL mirror ([mirror] url)"
        )
    if not HOST_NAME.fullmatch(host):
        raise UsageError(f"--host {host!r}: use letters, digits, '.', '_' and '-'")
    bind(session.root.path, found.url, host, found.timeout_s)


def register_schemas(app: typer.Typer) -> None:
    @app.command("schemas")
    def schemas(
        write: Annotated[bool, typer.Option("--write", help="Regenerate the files.")] = False,
        directory: Annotated[
            str | None, typer.Option("--dir", help="Where the schema files are.")
        ] = None,
    ) -> int:
        """Check (or with --write, regenerate) schemas/ against the document models, and
        the package's config_table.json (capture's check of incidents.toml) against Config."""
        from incidents import config
        from incidents import schemas as sch

        where = Path(directory) if directory else sch.default_dir()
        if write:
            for path in [*sch.write_all(where), config.write_table()]:
                output.out(f"wrote {path}")
            return 0
        stale = sch.stale(where)
        if config.table_path().read_text(encoding="utf-8") != config.config_table():
            output.err(f"{config.table_path()}: differs from incidents.config.Config; run --write")
            return 1
        for name in stale:
            output.err(f"{where / (name + '.schema.json')}: differs from the model; run --write")
        if not stale:
            output.out(f"{len(sch.SCHEMAS)} schemas in {where} match the models")
        return 1 if stale else 0


def register_pause(app: typer.Typer) -> None:
    @app.command("pause")
    def pause_cmd(
        reason: Annotated[str, typer.Option("--reason", help="Why everything stops.")] = "",
        root: RootOpt = None,
        config: ConfigOpt = None,
    ) -> int:
        """Pause the whole system: step, watch, next and claim start no new work (capture still works)."""
        if not reason.strip():  # told before the root is opened (which creates it)
            raise UsageError("pause: --reason is required")
        request = parse(PauseRequest, {"reason": reason})
        info = pause_root(open_root(root, config).root, request)
        output.out(f"paused: {info.reason}")
        return 0

    @app.command("resume")
    def resume_cmd(root: RootOpt = None, config: ConfigOpt = None) -> int:
        """Clear the pause flag, so step and watch work again."""
        info = resume_root(open_root(root, config).root)
        if info is None:
            output.out("not paused")
            return 0
        output.out(f"resumed (was paused since {info.since_iso}: {info.reason})")
        return 0


def pause_root(root: Root, request: PauseRequest) -> pause.PauseInfo:
    """A person pauses everything (`incidents pause`, the HTTP API's pause): the flag,
    shared with every host of a fleet's mirror, then the `build_paused` event."""
    if not request.reason.strip():
        raise UsageError("pause: --reason is required")
    info = pause.pause(root, request.reason.strip(), by="human")
    fleet.share_pause(root, info)  # a shared mirror: every host pauses
    _pause_event(root, "build_paused", {"reason": info.reason, "by": info.by})
    return info


def resume_root(root: Root) -> pause.PauseInfo | None:
    """Clear the pause flag (`incidents resume`, the HTTP API's resume); what it said, or
    None when nothing was paused."""
    info = pause.resume(root)
    fleet.share_resume(root)  # a shared mirror: every host resumes
    if info is not None:
        _pause_event(root, "resumed", {"reason": info.reason})
    return info


def _pause_event(root: Root, event: str, payload: dict[str, str]) -> None:
    from incidents import eventlog

    path = mirror.root_events_path(root)
    eventlog.append_events(path.parent, None, [(event, payload)], eventlog.unique_key("r"))
    eventlog.sync(path)

    # the flag and the event file are the truth: an unreachable mirror reads the event at
    # its next catch-up (a pause or resume must work while a fleet's database is down)
    def later(exc: BaseException) -> None:
        output.err(f"incidents: warning: {event} is not in the mirror yet ({exc}); the next "
                   "status or watcher pass adds it")  # fmt: skip

    with mirror.best_effort(root, on_error=later) as conn:
        if conn is not None:
            mirror.ingest_root(conn, root)
