"""Headless Debian Chromium for the browser tests, driven over the DevTools protocol on a
pipe (`--remote-debugging-pipe`: fd 3 in, fd 4 out, NUL-separated JSON), stdlib only.

`find_or_install()` returns the binary, installing Debian's `chromium` package with
apt-get when it is missing (as root, `apt-get update` first), or the reason it cannot.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests import debian

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def find_or_install() -> tuple[str | None, str]:
    """(path to chromium, "") or (None, why it is not available)."""
    return debian.find_or_install("chromium", "chromium", "chromium-browser")


class Browser:
    """One headless Chromium with one page, driven over the DevTools pipe."""

    def __init__(self, binary: str, width: int = 1280, height: int = 900) -> None:
        self.profile = tempfile.mkdtemp(prefix="incidents-chromium-")
        self._log = open(os.path.join(self.profile, "stderr.log"), "wb")  # noqa: SIM115
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds() -> None:  # runs in the child before exec: the pipe ends become fds 3 and 4
            read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)  # above 4 now
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
            close_fds=False, preexec_fn=fds,  # the pipe ends must become fds 3 and 4
        )  # fmt: skip
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        doc: dict[str, Any] = json.loads(raw)
        return doc

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False,
        timeout: float = 20.0,
    ) -> dict[str, Any]:  # fmt: skip
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            doc = self._read_message(deadline)
            if doc.get("id") == self._next:
                if "error" in doc:
                    raise RuntimeError(f"{method}: {doc['error']}")
                result: dict[str, Any] = doc.get("result", {})
                return result
            self.events.append(doc)

    def wait_event(self, method: str, timeout: float = 20.0) -> dict[str, Any]:
        for i, doc in enumerate(self.events):
            if doc.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            doc = self._read_message(deadline)
            if doc.get("method") == method:
                return doc
            self.events.append(doc)

    def goto(self, url: str) -> None:
        self.events.clear()
        res = self.call("Page.navigate", {"url": url}, session=True)
        if res.get("loaderId"):  # a hash change is a same-document navigation: no load event
            self.wait_event("Page.loadEventFired")

    def js(self, expression: str, timeout: float = 20.0) -> Any:
        res = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=True,
            timeout=timeout,
        )
        if "exceptionDetails" in res:
            raise RuntimeError(f"page script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        data = self.call("Page.captureScreenshot", params, session=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
