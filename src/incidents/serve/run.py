"""Running the server: the bind rule, the socket, uvicorn and its log.

It binds to loopback unless `--allow-remote` says otherwise, and then says in the log what
that means. The socket is bound before uvicorn starts, so `--port 0` works and the line
`serving on http://HOST:PORT/` names the real port.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
from types import FrameType
from typing import Any

from incidents import output
from incidents.errors import UsageError
from incidents.layout import Root
from incidents.serve.guard import loopback_hosts

log = logging.getLogger("incidents.serve")
GRACEFUL_S = 3


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int, allow_remote: bool) -> socket.socket:
    if not is_loopback(host) and not allow_remote:
        raise UsageError(
            f"--host {host}: not a loopback address; the API would be reachable from other "
            "machines (reads need no token): pass --allow-remote to mean it"
        )
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and
    # without it a keep-alive client waits out a delayed ACK (~40 ms) on every response
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _log_config() -> dict[str, Any]:
    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = {**LOGGING_CONFIG, "loggers": dict(LOGGING_CONFIG["loggers"])}
    config["loggers"]["incidents.serve"] = {
        "handlers": ["default"],
        "level": "INFO",
        "propagate": False,
    }
    return config


def serve(root: Root, host: str, port: int, *, allow_remote: bool, access_log: bool = True) -> None:
    """Serve until SIGINT/SIGTERM. The token is made (and shown, once) after the socket is
    bound, so a start that fails there leaves none made and unseen."""
    import uvicorn

    from incidents.serve import tokens
    from incidents.serve.app import build

    sock = bind(host, port, allow_remote)
    try:
        token, made = tokens.ensure(root)
    except BaseException:
        sock.close()
        raise
    new_token = token if made else None
    output.out(f"the API token is kept in {tokens.token_path(root)} (0600)")
    real_port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    remote = not is_loopback(host)
    app = build(root, hosts=None if remote else loopback_hosts(real_port, shown))

    config = uvicorn.Config(
        app, log_config=_log_config(), access_log=access_log,
        timeout_graceful_shutdown=GRACEFUL_S, lifespan="on", proxy_headers=False,
    )  # fmt: skip
    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            # uvicorn waits for open responses before the app's shutdown: an event stream
            # never ends by itself, so it is ended here, at the signal, not cancelled later
            hub = getattr(app.state, "hub", None)
            if hub is not None and hub.loop is not None:
                hub.loop.call_soon_threadsafe(hub.close_streams)

    server = Server(config)
    if remote:
        log.warning(
            "bound to %s beyond loopback because --allow-remote was given: anyone who can "
            "reach port %d can read every incident and the event stream; actions still need "
            "the bearer token (use TLS in front of it)",
            host, real_port,
        )  # fmt: skip
    if new_token is not None:
        output.out(f"a new API token was made (shown once): {new_token}")
        output.out(f"  open http://{shown}:{real_port}/#key={new_token} to act from the dashboard")
    output.out(f"serving {root.path} on http://{shown}:{real_port}/ (Ctrl-C stops)")
    sys.stdout.flush()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
