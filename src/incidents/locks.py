"""Short critical sections: an exclusive `flock` on a per-name lock file (stdlib only).

Lock files live in `<root>/.state/locks/` and are never deleted (deleting a lock file
that another process has open would let two holders in at once).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from incidents.errors import LockBusy


@contextmanager
def flocked(path: Path, timeout_s: float = 30.0) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusy(
                        f"{path} is held by another process (waited {timeout_s:g}s)"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing releases the lock
