"""The API's bearer token: `.state/serve.token` under the root, 0600, made on first start.

It is shown once, when it is made (or rotated with `incidents serve --new-token`); after
that it is only in the file. A running server reads the file again when it changes, so a
rotation takes effect without a restart. Comparisons are constant-time.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from incidents import fsutil
from incidents.layout import Root

TOKEN_FILE = "serve.token"


def token_path(root: Root) -> Path:
    return root.state / TOKEN_FILE


def _new() -> str:
    return secrets.token_urlsafe(32)


def _write(path: Path, token: str) -> None:
    fsutil.atomic_write_text(path, token + "\n")
    os.chmod(path, 0o600)


def ensure(root: Root) -> tuple[str, bool]:
    """The root's token, and whether it was made just now."""
    path = token_path(root)
    current = read(path)
    if current:
        if os.stat(path).st_mode & 0o077:  # loosened by hand: it is a credential
            os.chmod(path, 0o600)
        return current, False
    token = _new()
    _write(path, token)
    return token, True


def rotate(root: Root) -> str:
    """A new token in place of the old one (which stops working at once)."""
    token = _new()
    _write(token_path(root), token)
    return token


def read(path: Path) -> str | None:
    try:
        text = fsutil.read_regular_file(path, 4096).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    return text or None


class TokenCheck:
    """Checks a presented token against the file, re-read only when its stat changes."""

    def __init__(self, root: Root) -> None:
        self.path = token_path(root)
        self._stamp: tuple[int, int, int] | None = None
        self._token: str | None = None

    def current(self) -> str | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            self._token, self._stamp = read(self.path), stamp
        return self._token

    def accepts(self, presented: str | None) -> bool:
        expected = self.current()
        if not expected or not presented:
            return False
        return hmac.compare_digest(presented.encode(), expected.encode())
