"""A content-addressed cache: one small JSON file per key, replaced atomically.

Keys are sha256 over everything that decides a tool's answer (file bytes, tool version,
profile, config files), so a changed input is a different key: an entry is never stale.
Several processes may share the folder: entries are written temp-then-rename, so a
reader sees a whole entry or none; a damaged entry is a miss. Two processes computing
the same entry write identical content; the last rename wins.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from incidents.fsutil import ensure_dir

TYPE_CHECKING = False  # typing and the parsers stay off the replay path (import cost)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from incidents.checks.parsers import RawFinding

# 2: tools run with a private PYTHONPYCACHEPREFIX; answers cached before may rest on
# bytecode planted in a workdir's __pycache__, so none of them is reused
FORMAT = 2


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "incidents" / "checks"


def make_key(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


class FindingsCache:
    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.root = root / f"v{FORMAT}"
        self.enabled = enabled

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get_doc(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        try:
            with open(self._path(key), "rb") as fh:
                doc = json.loads(fh.read())
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) and doc.get("key") == key else None

    def put_doc(self, key: str, doc: dict[str, Any]) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        data = json.dumps({**doc, "key": key}, separators=(",", ":")).encode("utf-8")
        try:
            ensure_dir(path.parent)
            _replace_file(path, data)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def get(self, key: str) -> list[RawFinding] | None:
        from incidents.checks.parsers import RawFinding

        doc = self.get_doc(key)
        if doc is None:
            return None
        try:
            return [RawFinding.from_json(d) for d in doc["findings"]]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def put(self, key: str, findings: Iterable[RawFinding]) -> None:
        self.put_doc(key, {"findings": [f.to_json() for f in findings]})


def _replace_file(path: Path, data: bytes) -> None:
    """Temp file in the same folder, then rename: readers see the old entry or the new.

    No fsync: after a power cut an entry may be empty or torn, which reads as a miss
    (not valid JSON, or its key does not match); speed matters more here.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class VersionCache:
    """Tool versions, asked once per program file: keyed by its path, mtime and size and
    by its folder's mtime (reinstalling a package rewrites its scripts there)."""

    def __init__(self, cache: FindingsCache) -> None:
        self.cache = cache
        self.memo: dict[str, str | None] = {}

    @staticmethod
    def identity(program: str) -> str | None:
        try:
            st = os.stat(program)
            dst = os.stat(os.path.dirname(program) or ".")
        except OSError:
            return None
        return f"{program}|{st.st_mtime_ns}|{st.st_size}|{dst.st_mtime_ns}"

    def get(self, identity: str, argv: tuple[str, ...]) -> tuple[bool, str | None]:
        key = make_key("version", identity, *argv)
        if key in self.memo:
            return True, self.memo[key]
        doc = self.cache.get_doc(key)
        if doc is not None and (doc.get("version") is None or isinstance(doc["version"], str)):
            self.memo[key] = doc.get("version")
            return True, self.memo[key]
        return False, None

    def put(self, identity: str, argv: tuple[str, ...], version: str | None) -> None:
        key = make_key("version", identity, *argv)
        self.memo[key] = version
        self.cache.put_doc(key, {"version": version})
