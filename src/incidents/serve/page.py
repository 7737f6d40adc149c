"""`GET /`: the dashboard, one page with its CSS and JS inline (no external asset) under a
Content-Security-Policy that allows exactly those two (by hash), requests to this server
and nothing else. The page carries no data and no token: its script fetches the API,
writes every text from a bundle with `textContent` (never as HTML), and listens to the
event stream. The token is typed in once (or given in the address as `#key=TOKEN`, which
never reaches the server) and kept in the tab's sessionStorage."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from importlib import resources

from starlette.requests import Request
from starlette.responses import HTMLResponse

from incidents.serve.events import all_names


def _asset(name: str) -> str:
    return resources.files("incidents.serve").joinpath("page", name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def built() -> tuple[str, str]:
    """(the page, its Content-Security-Policy)."""
    style = _asset("dashboard.css")
    script = _asset("dashboard.js").replace("/*EVENT_NAMES*/[]", json.dumps(all_names()))
    html = _asset("dashboard.html").replace("/*STYLE*/", style).replace("/*SCRIPT*/", script)
    csp = (
        f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
        "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )
    return html, csp


async def dashboard(request: Request) -> HTMLResponse:
    html, csp = built()
    headers = {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }
    return HTMLResponse(html, headers=headers)
