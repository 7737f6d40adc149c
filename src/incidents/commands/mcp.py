"""`incidents mcp`: serve the MCP tools over stdio (incidents.mcp_server)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from incidents.commands.common import ConfigOpt, RootOpt
from incidents.errors import UsageError


def mcp(
    root: RootOpt = None,
    config: ConfigOpt = None,
    workdir: Annotated[
        str | None,
        typer.Option(
            "--workdir", help="The folder lint tools may read (default: the current folder)."
        ),
    ] = None,
    fixer: Annotated[
        str | None,
        typer.Option(
            "--fixer",
            metavar="ID",
            help="A fixer's server: only the read-only checks, for this incident only.",
        ),
    ] = None,
) -> int:
    """Serve the Model Context Protocol over stdio (for Claude Code and other MCP clients)."""
    from incidents.config import load_config
    from incidents.layout import validate_id

    load_config(config)  # a broken config is told now, not at the first tool call
    if fixer is not None:
        validate_id(fixer)
    folder = os.path.abspath(os.path.expanduser(workdir or "."))
    if not os.path.isdir(folder):
        raise UsageError(f"--workdir {workdir}: not a folder")
    from incidents.mcp_server.server import serve
    from incidents.mcp_server.tools import Service

    serve(Service(root, config, folder, fixer))
    return 0


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
