"""What every typer command shares: the root and config options, and opening the root."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from incidents.commands.roots import config_warning, require_root, root_of_config
from incidents.errors import NotFound
from incidents.layout import Root, resolve_root

if TYPE_CHECKING:  # the config's models and the step service stay off `status`'s path
    from incidents.config import Config

RootOpt = Annotated[
    str | None,
    typer.Option(
        "--root", help="Reports root (default: INCIDENTS_ROOT, config `root`, ./reports)."
    ),
]
ConfigOpt = Annotated[
    str | None,
    typer.Option("--config", help="incidents.toml (default: INCIDENTS_CONFIG, ./incidents.toml)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@dataclass(frozen=True)
class Session:
    root: Root
    config: Config


def bind_mirror(root: Root, cfg: Config) -> None:
    """The root's mirror is where `[mirror]` (or INCIDENTS_MIRROR_URL) says, for this
    process (`incidents.mirror.target`); a bad URL is a one-line error here."""
    from incidents.mirror import target

    m = cfg.mirror
    target.bind(root.path, m.url, m.host, m.timeout_s, cfg.watch.leases)


def route_elsewhere(
    root: Root, incident_id: str, kind: str, args: Mapping[str, object], missing: NotFound
) -> dict[str, str]:
    """A decision about an incident this root does not hold, addressed to the fleet host
    that holds it (`incidents.fleet.route`), applied there on its next pass: what `--json`
    prints (the HTTP API answers it too). `missing` is raised again when no host holds it."""
    from incidents import fleet

    host = fleet.route(root, incident_id, kind, dict(args))
    if host is None:
        raise missing
    return {"incident_id": incident_id, "routed_to": host, "decision": kind}


def said_routed(done: Mapping[str, str]) -> str:
    """The line a command prints for `route_elsewhere`'s answer."""
    return (
        f"{done['incident_id']}: held by host {done['routed_to']}; {done['decision']} sent,"
        " applied on its next pass"
    )


def load_or_defaults(config: str | None) -> Config:
    """The config for a command that only reads: a problem in the file is a warning and
    the defaults stand in (the root it names is kept when that part is sound)."""
    from incidents.config import Config, load_config
    from incidents.errors import ConfigError

    try:
        return load_config(config)
    except ConfigError as exc:
        config_warning(exc)
        return Config(root=root_of_config(config))


def open_root(
    root: str | None, config: str | None, incident_id: str | None = None, create: bool = True
) -> Session:
    """Validate the config, create the root's layout, finish any interrupted close.

    With `incident_id` (a command about one existing incident), a root that does not exist
    yet is not created: it holds no incident, so this is NotFound. With `create=False` (a
    command that only reads), neither: a mistyped --root must not read as an all-clear, and
    a problem in the config is a warning, read with the defaults."""
    from incidents.config import load_config
    from incidents.step import close as closing

    cfg = load_config(config) if create else load_or_defaults(config)
    r = resolve_root(root, cfg.root)
    bind_mirror(r, cfg)
    if not create:
        require_root(r)
    if incident_id is not None and not os.path.lexists(r.path):
        raise NotFound(f"no incident {incident_id!r} under {r.path}")
    r.ensure()
    closing.complete_pending(r)
    return Session(r, cfg)
