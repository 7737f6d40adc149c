"""One POST of an alert to one webhook, as a receiver must take it: JSON, a timeout,
the URL's credentials as basic auth, no redirect followed, and every failure an answer
(never an exception), so a pass records it and backs off."""

from __future__ import annotations

import base64
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from incidents import __version__
from incidents.notify.settings import Webhook


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is an answer, not a delivery: urllib would follow a 301/302/303 with a GET
    that drops the body (to whatever host it names), and a 2xx there would count as taken
    an alert nobody received."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


def _without_credentials(url: str) -> tuple[str, dict[str, str]]:
    """A URL's `user:password@` as HTTP basic auth (urllib would take it for part of the
    host name, and never send it), and the URL without it."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, {}
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc).geturl(), {"Authorization": f"Basic {token}"}


def post(hook: Webhook, body: dict[str, Any], timeout_s: float) -> str | None:
    """POST `body` as JSON; None when the receiver took it (2xx), else why not."""
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    url, headers = _without_credentials(hook.url)
    headers |= {"Content-Type": "application/json", "User-Agent": f"incidents/{__version__}"}
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=timeout_s) as answer:
            answer.read(1 << 16)
            return None if 200 <= answer.status < 300 else f"HTTP {answer.status}"
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:  # where it points is not said: it may hold a secret
            return f"HTTP {exc.code}: a redirect, not followed (configure the URL it names)"
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{type(exc).__name__}: {reason}"[:300]
