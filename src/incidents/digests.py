"""The sha256 of target files: capture records them (incident.json `target_digests`) and
every check records their combination (state.json `check_digests`), so the machine can tell
"nothing changed" from "something was fixed" (flaky is not fixed). Standard library only:
capture imports it, so sha256 comes from the small C module behind `hashlib.sha256`
(~0.3 ms to import against ~3 ms for `hashlib`, which loads OpenSSL) where it exists."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any

MISSING = "missing"  # a file that is not there, or not a regular file
UNREADABLE = "unreadable"  # a regular file that cannot be read
_CHUNK = 1 << 20


def read_digest(path: str) -> str:
    """sha256 of the regular file at `path`, read without following a symlink in its last
    component and without blocking (O_NONBLOCK: opening a FIFO or a device must not hang a
    check or a close); OSError when it cannot be read, FileNotFoundError also when it is
    not a regular file. The one way every part of the suite hashes a file (capture, the
    checks, the verdict, verify-archive); callers that mean to follow a symlink resolve
    it first (os.path.realpath)."""
    import errno
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileNotFoundError(errno.ENOENT, "not a regular file", path)
        h = _sha256()
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
        return str(h.hexdigest())
    finally:
        os.close(fd)


def file_digest(path: str) -> str:
    """`read_digest`, or MISSING when the file is not a readable regular file."""
    try:
        return read_digest(path)
    except OSError:
        return MISSING


def target_digests(workdir: str, targets: list[str]) -> dict[str, str]:
    """Each target (relative to `workdir`) -> its file_digest."""
    return {t: file_digest(os.path.join(workdir, t)) for t in targets}


def combined(digests: dict[str, str], targets: list[str]) -> str | None:
    """One sha256 over `targets`' digests in order; None when one of them is not known."""
    if any(t not in digests for t in targets):
        return None
    text = "".join(f"{t}\0{digests[t]}\n" for t in targets)
    h = _sha256()
    h.update(text.encode("utf-8", "surrogateescape"))
    return str(h.hexdigest())


def _sha256() -> Any:
    try:  # CPython 3.11: _sha256; 3.12+: _sha2
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    return sha256()
