"""The Starlette application: the endpoint table, the dashboard, the guards, the errors
mapped in one place (`problems`), and the hub started and stopped with the server."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from importlib.metadata import PackageNotFoundError, version

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from incidents.errors import IncidentsError
from incidents.layout import Root
from incidents.serve import openapi, page, problems
from incidents.serve.guard import SameOrigin
from incidents.serve.hub import Hub
from incidents.serve.reader import Reader
from incidents.serve.routes import ENDPOINTS
from incidents.serve.tokens import TokenCheck

log = logging.getLogger("incidents.serve")


def _version() -> str:
    try:
        return version("incidents")
    except PackageNotFoundError:
        return "0"


async def _incidents_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, IncidentsError)
    status, doc = problems.body(exc)
    return JSONResponse(doc, status_code=status)


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, problems.Refused)
    doc = {"error": exc.message, "kind": "Refused", "exit_code": 2}
    return JSONResponse(doc, status_code=exc.status, headers=exc.headers)


async def _http(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, a method not allowed) as JSON errors too."""
    assert isinstance(exc, HTTPException)
    kind, code = ("NotFound", 1) if exc.status_code == 404 else ("MethodNotAllowed", 2)
    if exc.status_code not in (404, 405):
        kind = "HTTPError"
    doc = {"error": f"{request.method} {request.url.path}: {exc.detail}", "kind": kind,
           "exit_code": code}  # fmt: skip
    return JSONResponse(doc, status_code=exc.status_code, headers=exc.headers)


async def _bug(request: Request, exc: Exception) -> Response:
    log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    doc = {
        "error": f"internal error: {type(exc).__name__}",
        "kind": "InternalError",
        "exit_code": 3,
    }
    return JSONResponse(doc, status_code=500)


def build(
    root: Root,
    *,
    hosts: frozenset[str] | None,
    poll_s: float = 0.05,
    catch_up_s: float = 0.5,
) -> Starlette:
    """The application for `root`; `hosts`: the Host values served (None: any, for a
    server bound beyond loopback with --allow-remote)."""
    doc = openapi.document(ENDPOINTS, _version())

    async def openapi_json(request: Request) -> JSONResponse:
        return JSONResponse(doc)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.root = root
        app.state.tokens = TokenCheck(root)
        app.state.reader = Reader(root, "read")
        app.state.hub = Hub(root, poll_s=poll_s, catch_up_s=catch_up_s)
        await app.state.hub.start()
        try:
            yield
        finally:
            await app.state.hub.stop()
            app.state.reader.close()

    routes = [Route(e.route, e.handler, methods=[e.method]) for e in ENDPOINTS]
    routes += [
        Route("/api/openapi.json", openapi_json, methods=["GET"]),
        Route("/", page.dashboard, methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(SameOrigin, hosts=hosts)],
        exception_handlers={
            IncidentsError: _incidents_error,
            problems.Refused: _refused,
            HTTPException: _http,
            Exception: _bug,
        },
        lifespan=lifespan,
    )
