"""Ctrl-C on `incidents serve` with event streams open: each stream ends cleanly at the
signal (its chunked body closed by the terminating chunk), instead of being cancelled when
uvicorn's graceful wait runs out, with a CancelledError traceback per client."""

from __future__ import annotations

import signal
import time

from incidents.layout import Root
from tests.serve.server import Server, Stream


def test_sigint_ends_open_streams_cleanly(root: Root) -> None:
    root.ensure()
    server = Server(root.path)
    streams = [Stream(server).__enter__() for _ in range(3)]
    try:
        for s in streams:
            assert s.status == 200 and s._frame(time.monotonic() + 10) == b"retry: 2000"
        server.proc.send_signal(signal.SIGINT)
        for s in streams:  # the server ends each body: the terminating chunk, then EOF
            deadline = time.monotonic() + 30
            while s._recv(deadline):
                pass
            assert s.raw.endswith(b"0\r\n\r\n"), s.raw[-40:]
        _, err = server.stop()
    finally:
        for s in streams:
            s.__exit__()
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert "graceful shutdown exceeded" not in err
    assert "Application shutdown complete" in err  # positive control: we read its log
