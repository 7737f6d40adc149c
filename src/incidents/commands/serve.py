"""`incidents serve`: the HTTP API, the event stream and the live dashboard
(incidents.serve; starlette and uvicorn are imported by this command only)."""

from __future__ import annotations

from typing import Annotated

import typer

from incidents import output
from incidents.commands.common import ConfigOpt, RootOpt, open_root


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (0: any free one).")] = 8765,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote", help="Allow a --host beyond loopback (reads need no token)."
        ),
    ] = False,
    new_token: Annotated[
        bool,
        typer.Option("--new-token", help="Make a new API token, print it once, and exit."),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No access log.")] = False,
    root: RootOpt = None,
    config: ConfigOpt = None,
) -> int:
    """Serve the HTTP API, the Server-Sent Events stream and the live dashboard (loopback only
    unless --allow-remote); actions need the bearer token kept in .state/serve.token."""
    from incidents.serve import run, tokens

    if not 0 <= port <= 65535:
        from incidents.errors import UsageError

        raise UsageError(f"--port {port}: use 0 to 65535")
    session = open_root(root, config)
    if new_token:
        token = tokens.rotate(session.root)
        output.out(f"a new API token (shown once; the old one no longer works): {token}")
        output.out(f"kept in {tokens.token_path(session.root)} (0600)")
        return 0
    # the token is made (and shown) once the socket is bound: a first start refused (a host
    # beyond loopback, a port in use) would make it and show it to no one
    run.serve(session.root, host, port, allow_remote=allow_remote, access_log=not quiet)
    return 0


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
