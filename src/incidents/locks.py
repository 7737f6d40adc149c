"""Short critical sections: an exclusive `flock` on a per-name lock file (stdlib only).

Lock files live in `<root>/.state/locks/` and are never deleted (deleting a lock file
that another process has open would let two holders in at once).

On the capture path: a plain context-manager class (`contextlib` costs ~0.7 ms to
import), `fcntl` imported when a lock is taken, and paths as `str` or `Path`.
"""

from __future__ import annotations

import os
import time

from incidents.errors import LockBusy

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from types import TracebackType


class Flocked:
    """`with flocked(path):` holds an exclusive flock on `path` (a file, created 0600, or
    with `folder` a folder) until the block ends; waits up to `timeout_s`, then LockBusy."""

    __slots__ = ("path", "timeout_s", "folder", "_fd")

    def __init__(
        self, path: str | os.PathLike[str], timeout_s: float = 30.0, folder: bool = False
    ) -> None:
        self.path, self.timeout_s, self.folder = path, timeout_s, folder
        self._fd = -1

    def __enter__(self) -> None:
        import fcntl

        cloexec = getattr(os, "O_CLOEXEC", 0)
        if self.folder:  # a folder locks itself: no lock file beside what it guards
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | cloexec)
        else:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | cloexec, 0o600)
        try:
            deadline = time.monotonic() + self.timeout_s
            delay = 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockBusy(
                            f"{os.fspath(self.path)} is held by another process "
                            f"(waited {self.timeout_s:g}s)"
                        ) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        fd, self._fd = self._fd, -1
        os.close(fd)  # closing releases the lock


def flocked(
    path: str | os.PathLike[str], timeout_s: float = 30.0, *, folder: bool = False
) -> Flocked:
    """`folder`: `path` is a folder, locked itself. Without it a lock file's path that is a
    folder fails to open, as a damaged root should (the watcher counts it a failed load)."""
    return Flocked(path, timeout_s, folder)
