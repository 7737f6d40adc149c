"""A server bound to a loopback address other than 127.0.0.1 serves the URL it prints."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time

from incidents.layout import Root


def test_another_loopback_address_serves_its_own_url(root: Root) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "incidents", "serve", "--root", str(root.path),
         "--host", "127.0.0.2", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    try:
        deadline, port = time.monotonic() + 30, 0
        assert proc.stdout is not None
        while not port:
            assert time.monotonic() < deadline and proc.poll() is None
            line = proc.stdout.readline()
            if line.startswith("serving "):
                port = int(line.split("http://127.0.0.2:", 1)[1].split("/", 1)[0])
        conn = http.client.HTTPConnection("127.0.0.2", port, timeout=10)
        conn.request("GET", "/api/health")  # Host: 127.0.0.2:PORT, as a browser sends it
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 200, body
        assert json.loads(body)["ok"] is True
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.2", port, timeout=10)
        conn.request("GET", "/api/health", headers={"Host": f"evil.example:{port}"})
        assert conn.getresponse().status == 403  # a foreign name still is not
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_a_start_that_fails_does_not_swallow_the_first_token(root: Root) -> None:
    """The token is shown once, when it is made: a first start refused (a host beyond
    loopback, a port in use) must not make it, or no start ever shows it."""
    import socket

    from tests.serve.server import running

    refused = subprocess.run(
        [sys.executable, "-m", "incidents", "serve", "--root", str(root.path),
         "--host", "0.0.0.0", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        taken = subprocess.run(
            [sys.executable, "-m", "incidents", "serve", "--root", str(root.path),
             "--port", str(busy.getsockname()[1])],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        busy.close()
    assert taken.returncode == 2, taken.stderr
    with running(root.path) as server:
        shown = "".join(server.out_lines)
        assert "a new API token was made (shown once)" in shown
        assert server.token in shown
