"""Who may ask what: the Host and Origin checks every request passes (an ASGI middleware),
and the door every action passes (`action_request`: the token, the size cap, the model).

- Bound to loopback, only a loopback Host (`127.0.0.1:PORT`, `localhost:PORT`,
  `[::1]:PORT`) is served: a page elsewhere that makes its own name resolve to 127.0.0.1
  (DNS rebinding) is refused.
- A request with an `Origin` other than the server's own (`http(s)://` + its Host) is
  refused (403), whatever its method: another site's page can neither act nor read.
- An action needs `Authorization: Bearer TOKEN` (401 otherwise), a body of at most
  `BODY_MAX` bytes (413), JSON (415/400), validated by the request model the CLI uses.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

from incidents.errors import IncidentsError, UsageError
from incidents.fsutil import parse_json_strict
from incidents.models.base import Document
from incidents.models.requests import parse
from incidents.serve.problems import Refused
from incidents.serve.tokens import TokenCheck

BODY_MAX = 64 * 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
M = TypeVar("M", bound=Document)


def loopback_hosts(port: int, bound: str = "") -> frozenset[str]:
    """The Host values served on loopback: its usual names and the address bound (another
    loopback address, 127.0.0.2 or ::1 written out, is served under its own name too)."""
    names = {*LOOPBACK_NAMES, bound.lower()} if bound else set(LOOPBACK_NAMES)
    return frozenset(f"{name}:{port}" for name in names)


class SameOrigin:
    """ASGI middleware: refuse a foreign Host (when `hosts` is given) or Origin with 403."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            why = self.refusal(scope)
            if why is not None:
                await _send_json(send, 403, {"error": why, "kind": "Forbidden", "exit_code": 2})
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> str | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if self.hosts is not None and host.lower() not in self.hosts:
            return f"host {host!r} is not served here (the server answers to its loopback names)"
        origin = headers.get("origin")
        # https: a server bound beyond loopback may sit behind a TLS proxy
        if origin is not None and origin.lower() not in (
            f"http://{host}".lower(),
            f"https://{host}".lower(),
        ):
            return f"origin {origin!r} is not this server's: cross-site requests are refused"
        return None


async def _send_json(send: Send, status: int, doc: dict[str, Any]) -> None:
    data = json.dumps(doc).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(data)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def check_token(tokens: TokenCheck, authorization: str | None) -> None:
    if not tokens.accepts(bearer(authorization)):
        why = "a bearer token is required" if not authorization else "the bearer token is wrong"
        raise Refused(
            401,
            f"{why} (Authorization: Bearer TOKEN; the token is in .state/serve.token under "
            "the root, `incidents serve --new-token` makes a new one)",
            {"WWW-Authenticate": 'Bearer realm="incidents"'},
        )


async def read_body(request: Any, limit: int = BODY_MAX) -> bytes:
    """The body, refused with 413 past `limit` bytes (declared or sent)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise Refused(413, f"the request body is over the cap of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"the request body is over the cap of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def action_request(request: Any, tokens: TokenCheck, model: type[M]) -> M:
    """An action's body as `model`, once the token, the size and the type are checked."""
    check_token(tokens, request.headers.get("authorization"))
    data = await read_body(request)
    if not data.strip():
        doc: Any = {}
    else:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise Refused(415, "send the request body as application/json")
        try:
            doc = parse_json_strict(data, "request body")
        except IncidentsError as exc:
            raise UsageError(str(exc)) from None
    if not isinstance(doc, dict):
        raise UsageError("request body: a JSON object is required")
    return parse(model, doc)
