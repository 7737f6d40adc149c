"""A real `incidents serve` on a free loopback port, and small stdlib clients for it:
JSON requests (`Server.call`) and a Server-Sent Events reader (`Stream`)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START_S = 30.0


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Server:
    """`python -m incidents serve --root ROOT --port 0` as a real process."""

    def __init__(self, root: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "incidents", "serve", "--root", str(root), "--port", "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or dict(os.environ),
        )  # fmt: skip
        self.out_lines: list[str] = []
        try:
            self._wait_until_serving()
        except BaseException:  # a server that did not start is not left running
            self.proc.kill()
            self.proc.wait()
            raise
        self.host = f"127.0.0.1:{self.port}"

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_S
        assert self.proc.stdout is not None
        fd, pending = self.proc.stdout.fileno(), b""  # raw reads: select sees what is unread
        while not any(line.startswith("serving ") for line in self.out_lines):
            assert time.monotonic() < deadline, "the server did not start in time"
            if not select.select([fd], [], [], 1.0)[0]:
                assert self.proc.poll() is None, self._stderr()
                continue
            chunk = os.read(fd, 65536)
            assert chunk, f"the server exited: {self._stderr()}"
            *lines, pending = (pending + chunk).split(b"\n")
            self.out_lines += [line.decode() + "\n" for line in lines]
        serving = next(line for line in self.out_lines if line.startswith("serving "))
        self.port = int(serving.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        self.out_lines.append(pending.decode())

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode()

    @property
    def token(self) -> str:
        return (self.root / ".state" / "serve.token").read_text().strip()

    def call(
        self, method: str, path: str, body: Any = None, *, token: str | None = None,
        headers: dict[str, str] | None = None, raw: bytes | None = None, timeout: float = 30,
    ) -> Reply:  # fmt: skip
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            sent = {**(headers or {})}
            data = raw
            if body is not None:
                data = json.dumps(body).encode()
                sent.setdefault("Content-Type", "application/json")
            if token is not None:
                sent["Authorization"] = f"Bearer {token}"
            conn.request(method, path, body=data, headers=sent)
            resp = conn.getresponse()
            return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def until(self, path: str, check: Callable[[Any], bool], timeout: float = 15.0) -> Any:
        """GET `path` until `check(answer)` holds: captures reach the mirror at the server's
        next catch-up (every 0.5 s), not at once."""
        deadline = time.monotonic() + timeout
        while True:
            doc = self.call("GET", path).json()
            if check(doc):
                return doc
            assert time.monotonic() < deadline, f"{path} never satisfied the check: {doc}"
            time.sleep(0.1)

    def act(self, path: str, body: Any = None) -> Reply:
        """A POST with the server's token."""
        return self.call("POST", path, {} if body is None else body, token=self.token)

    def stop(self) -> tuple[str, str]:
        """SIGTERM, wait; (stdout, stderr) of the whole run."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return "".join(self.out_lines) + out.decode(), err.decode()


@contextlib.contextmanager
def running(root: Path, *extra: str) -> Iterator[Server]:
    server = Server(root, *extra)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Event:
    id: str
    event: str
    data: dict[str, Any]


class Stream:
    """One connection to `GET /api/events` on a raw socket (chunked transfer decoded here,
    so a deadline can be kept with select), read event by event."""

    def __init__(self, server: Server, last_event_id: str | None = None, query: str = "") -> None:
        self.server, self.last_event_id, self.query = server, last_event_id, query
        self.raw = b""  # bytes off the socket, not yet de-chunked
        self.buf = b""  # de-chunked stream text, not yet split into frames
        self.status = 0
        self.headers: dict[str, str] = {}
        self.received: list[Event] = []

    def __enter__(self) -> Stream:
        self.sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        lines = [f"GET /api/events{self.query} HTTP/1.1", f"Host: {self.server.host}",
                 "Accept: text/event-stream"]  # fmt: skip
        if self.last_event_id is not None:
            lines.append(f"Last-Event-ID: {self.last_event_id}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        deadline = time.monotonic() + 10
        while b"\r\n\r\n" not in self.raw:
            assert self._recv(deadline), "no response head"
        head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        first, *rest = head.decode("latin-1").split("\r\n")
        self.status = int(first.split()[1])
        self.headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in rest)}
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def _recv(self, deadline: float) -> bool:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.sock], [], [], left)[0]:
            return False
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.raw += chunk
        return True

    def _dechunk(self) -> None:
        while b"\r\n" in self.raw:
            size_line, rest = self.raw.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            if len(rest) < size + 2:
                return
            self.buf += rest[:size]
            self.raw = rest[size + 2 :]

    def _frame(self, deadline: float) -> bytes | None:
        while True:
            self._dechunk()
            if b"\n\n" in self.buf:
                frame, self.buf = self.buf.split(b"\n\n", 1)
                return frame
            if not self._recv(deadline):
                return None

    def body(self, timeout: float = 5.0) -> bytes:
        """What a non-stream answer (an error) said."""
        deadline = time.monotonic() + timeout
        length = int(self.headers.get("content-length", "0"))
        while len(self.raw) < length and self._recv(deadline):
            pass
        return self.raw[:length]

    def next(self, timeout: float = 10.0) -> Event | None:
        """The next event (comments and `retry:` skipped), or None at the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self._frame(deadline)
            if frame is None:
                return None
            fields: dict[str, str] = {}
            for line in frame.decode().splitlines():
                if line.startswith(":") or ":" not in line:
                    continue
                key, _, value = line.partition(":")
                fields[key] = value[1:] if value.startswith(" ") else value
            if "data" in fields:
                data = json.loads(fields["data"])
                event = Event(fields.get("id", ""), fields.get("event", "message"), data)
                self.received.append(event)
                return event

    def take(self, count: int, timeout: float = 20.0) -> list[Event]:
        deadline = time.monotonic() + timeout
        got: list[Event] = []
        while len(got) < count:
            event = self.next(max(0.0, deadline - time.monotonic()))
            assert event is not None, f"{len(got)} of {count} events in {timeout}s: {got}"
            got.append(event)
        return got

    def until(self, name: str, timeout: float = 20.0) -> list[Event]:
        """Events up to and including the first named `name`."""
        deadline = time.monotonic() + timeout
        got: list[Event] = []
        while True:
            event = self.next(max(0.0, deadline - time.monotonic()))
            assert event is not None, f"no {name} in {timeout}s: {[e.event for e in got]}"
            got.append(event)
            if event.event == name:
                return got
