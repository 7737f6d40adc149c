"""One POST of an alert to one webhook, as a receiver must take it: JSON, a timeout,
the URL's credentials as basic auth, no redirect followed, and every failure an answer
(never an exception), so a pass records it and backs off."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import threading
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


class _Watchdog:
    """The whole of one request within its time: a socket's timeout bounds each read, so a
    receiver that sends a byte now and then would hold a pass (and the deliverer's lock)
    for hours; when the time is up the connection's socket is shut down under it."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s, self.fired = timeout_s, False
        self.timers: list[threading.Timer] = []

    def opener(self) -> urllib.request.OpenerDirector:
        watch = self

        def watched(base: type[http.client.HTTPConnection]) -> Any:
            class Watched(base):  # type: ignore[valid-type,misc]
                def connect(self) -> None:
                    super().connect()
                    timer = threading.Timer(watch.timeout_s, watch.shut, (self.sock,))
                    timer.daemon = True
                    watch.timers.append(timer)
                    timer.start()

            return Watched

        class HTTP(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> Any:
                return self.do_open(watched(http.client.HTTPConnection), req)

        class HTTPS(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> Any:
                conn = watched(http.client.HTTPSConnection)
                return self.do_open(conn, req, context=self._context)  # type: ignore[attr-defined]

        return urllib.request.build_opener(_NoRedirect, HTTP, HTTPS)

    def shut(self, sock: socket.socket) -> None:
        self.fired = True
        with contextlib.suppress(OSError):  # closed already: the request ended in time
            sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        for timer in self.timers:
            timer.cancel()


LATE = "no whole answer within"  # how post says the receiver had the request, then was slow
LONGEST_S = 60.0  # the longest a receiver that answers late is given


def post(hook: Webhook, body: dict[str, Any], timeout_s: float) -> str | None:
    """POST `body` as JSON; None when the receiver took it (2xx), else why not. The
    connection and then the whole exchange each get `timeout_s`."""
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    url, headers = _without_credentials(hook.url)
    headers |= {"Content-Type": "application/json", "User-Agent": f"incidents/{__version__}"}
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)
    watchdog = _Watchdog(timeout_s)
    try:
        with watchdog.opener().open(request, timeout=timeout_s) as answer:
            answer.read(1 << 16)
            if watchdog.fired:  # what was cut off can parse as a whole answer
                return f"{LATE} {timeout_s:g} s"
            return None if 200 <= answer.status < 300 else f"HTTP {answer.status}"
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:  # where it points is not said: it may hold a secret
            return f"HTTP {exc.code}: a redirect, not followed (configure the URL it names)"
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        # a timeout while waiting for the answer (urllib wraps only those of the connection
        # and the request): the receiver had the whole request and may have taken it
        if watchdog.fired or isinstance(exc, TimeoutError):
            return f"{LATE} {timeout_s:g} s"
        reason = getattr(exc, "reason", exc)
        return f"{type(exc).__name__}: {reason}"[:300]
    finally:
        watchdog.cancel()
