"""A real HTTP receiver on loopback (http.server in a thread) that records what it is
POSTed: it can be down (nothing listens on its port), back up on the same port, answer
an error, or hold a request until the test lets it go."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self) -> None:
        with socket.socket() as probe:  # a free port, kept while the receiver is down
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.received: list[tuple[str, Any]] = []  # (path, body)
        self.status = 200
        self.redirect: str | None = None  # set: a POST is answered 302 to this URL
        self.auth: list[str | None] = []  # each POST's Authorization header
        self.delay_s = 0.0  # it takes a POST, then answers this much later
        self.garbage = False  # set: a POST is answered with no HTTP at all
        self.gets: list[str] = []  # the paths asked for with GET (a followed redirect)
        self.hold: threading.Event | None = None  # set: requests wait for it
        self.holding = threading.Event()  # a request is being held
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size))
                receiver.auth.append(self.headers.get("Authorization"))
                if receiver.garbage:
                    self.wfile.write(b"not http\r\n\r\n")
                    self.close_connection = True
                    return
                if receiver.redirect is not None:
                    self.send_response(302)
                    self.send_header("Location", receiver.redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if receiver.hold is not None:
                    receiver.holding.set()
                    receiver.hold.wait(30)
                if receiver.status == 200:
                    receiver.received.append((self.path, body))
                time.sleep(receiver.delay_s)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def do_GET(self) -> None:
                receiver.gets.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Down: nothing listens on the port any more (a POST is refused)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)

    def bodies(self, path: str = "/hook") -> list[Any]:
        return [body for p, body in self.received if p == path]


class Trickler:
    """A receiver that answers a byte of its headers now and then, never finishing them:
    each read is quick, the answer never whole."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, path: str = "/slow") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while not self._stop.wait(0.2):
                    conn.sendall(b"x")
            except OSError:
                return

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()
