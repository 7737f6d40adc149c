"""What every typer command shares: the root and config options, and opening the root."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from incidents import store
from incidents.config import load_config
from incidents.layout import Root, resolve_root
from incidents.settings import Config

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


def open_root(root: str | None, config: str | None) -> Session:
    """Validate the config, create the root's layout, finish any interrupted close."""
    cfg = load_config(config)
    r = resolve_root(root, cfg.root).ensure()
    store.complete_pending(r)
    return Session(r, cfg)
