"""Content snapshots of a workdir: what a fixer changed, and putting back what it must not.

Bounded: build and cache folders (`.venv`, `node_modules`, `__pycache__`, ...) are not
read, but no folder is left out because of its name: their files are recorded by their
status (size, mtime, inode), so a file added there (a `.pth` in a virtualenv's
site-packages, a forged `.pyc`) is a change like any other, and is removed; a cache file
changed in place is removed too (the program that made it makes it again). Of `.git`
only `config` and `hooks/` are kept (a hook is code someone runs later).
Files up to `max_file_bytes` keep their bytes so they can be restored; larger ones keep
only a digest (a change to them is reported but cannot be reverted). Symlinks are
recorded as links, never followed; FIFOs, sockets and devices are ignored.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from incidents import fsutil
from incidents.errors import IncidentsError

SKIP_DIRS = frozenset({".venv", "venv", "__pycache__", "node_modules", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".tox", ".nox"})  # fmt: skip
GIT_KEEP = ("config", "hooks")
MAX_FILE_BYTES = 4 << 20
MAX_FILES = 20_000
MAX_TOTAL_BYTES = 256 << 20
MAX_STATUS_FILES = 500_000
STATUS = "status:"  # an Entry's digest that is a file's status, not its content's hash
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class SnapshotTooLarge(IncidentsError):
    pass


@dataclass(frozen=True)
class Entry:
    """A path as it was, and what `put_back` needs to make it so again: absent, a regular
    file (its sha256, and its bytes unless too large to keep), a symlink (its target), a
    folder, or something else (only its type: it cannot be put back)."""

    kind: str  # file | link | absent | dir | other
    digest: str = ""  # sha256 of the bytes, or the link's target
    data: bytes | None = None  # the bytes to restore (None: too large to keep)
    mode: int = 0o644  # the file's mode (its permission bits are restored)


ABSENT = Entry("absent")


@dataclass
class Snapshot:
    root: Path
    files: dict[str, Entry] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    by_status: int = 0  # files of build and cache folders, known by their status only


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = MAX_FILE_BYTES
    max_files: int = MAX_FILES
    max_total_bytes: int = MAX_TOTAL_BYTES


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def read_file(path: str, limit: int) -> tuple[str, bytes | None, int] | None:
    """(sha256, the bytes when at most `limit`, st_mode) of the regular file at `path`, read
    without following a link; None when it is not one or cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None  # vanished, a symlink race, unreadable: not ours to judge
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        digest = hashlib.sha256()
        kept = bytearray() if st.st_size <= limit else None
        while chunk := os.read(fd, 1 << 16):
            digest.update(chunk)
            if kept is not None:
                kept += chunk
                if len(kept) > limit:
                    kept = None
        return digest.hexdigest(), (bytes(kept) if kept is not None else None), st.st_mode
    finally:
        os.close(fd)


def take(workdir: Path, skip: Iterable[str] = (), limits: Limits | None = None) -> Snapshot:
    """Every file under `workdir` (bounded, see the module docstring). `skip`: top-level
    names (glob) left out, such as a fixer's own state folder."""
    limits = limits or Limits()
    snap = Snapshot(Path(os.path.realpath(workdir)))
    skip = tuple(skip)
    total = 0
    stack: list[tuple[str, str]] = [(str(snap.root), "")]
    while stack:
        abs_dir, rel_dir = stack.pop()
        try:
            entries = list(os.scandir(abs_dir))
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}{entry.name}"
            if not rel_dir and _matches(entry.name, skip):
                continue
            if rel_dir == ".git/" and entry.name not in GIT_KEEP:
                continue
            if entry.is_symlink():
                snap.files[rel] = Entry("link", os.readlink(entry.path), None, 0)
            elif entry.is_dir(follow_symlinks=False):
                if entry.name in SKIP_DIRS:
                    _by_status(entry.path, rel + "/", snap)
                    continue
                snap.dirs.add(rel)
                stack.append((entry.path, rel + "/"))
            elif entry.is_file(follow_symlinks=False):
                read = read_file(entry.path, limits.max_file_bytes)
                if read is None:
                    continue
                digest, data, mode = read
                snap.files[rel] = Entry("file", digest, data, mode)
                total += len(data or b"")
            if len(snap.files) > limits.max_files or total > limits.max_total_bytes:
                raise SnapshotTooLarge(
                    f"workdir {workdir} is too large to snapshot (over {limits.max_files} "
                    f"files or {limits.max_total_bytes} bytes); a fixer is not run there"
                )
    return snap


def _by_status(folder: str, rel_dir: str, snap: Snapshot) -> None:
    """Every file below a build or cache folder by its status only (nothing read, nothing
    kept: a changed one cannot be put back, only removed), bounded by MAX_STATUS_FILES."""
    snap.dirs.add(rel_dir.rstrip("/"))
    stack = [(folder, rel_dir)]
    while stack and snap.by_status < MAX_STATUS_FILES:
        abs_dir, rel = stack.pop()
        try:
            entries = list(os.scandir(abs_dir))
        except OSError:
            continue
        for entry in entries:
            path = f"{rel}{entry.name}"
            try:
                if entry.is_symlink():
                    snap.files[path] = Entry("link", os.readlink(entry.path), None, 0)
                elif entry.is_dir(follow_symlinks=False):
                    snap.dirs.add(path)
                    stack.append((entry.path, path + "/"))
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    status = f"{STATUS}{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
                    snap.files[path] = Entry("file", status, None, st.st_mode)
            except OSError:
                continue
            snap.by_status += 1


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Created, modified and deleted files (and links), sorted."""
    paths = set(before.files) | set(after.files)
    return sorted(p for p in paths if _key(before.files.get(p)) != _key(after.files.get(p)))


def _key(entry: Entry | None) -> tuple[str, str] | None:
    return None if entry is None else (entry.kind, entry.digest)


def _safe_parent(root: Path, rel: str) -> Path | None:
    """The parent folder of `rel`, created if missing, when every component is a real
    folder inside `root` (no symlinks): else None."""
    current = root
    for part in Path(rel).parent.parts:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current, 0o700)
            continue
        if not stat.S_ISDIR(st.st_mode):
            return None
    return current


def _clear(path: str) -> None:
    """Remove whatever is at `path` now (a folder made there too). Callers outside the
    workdir move what they found aside first: only a fixer's own leftovers get here."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def put_back(path: str, old: Entry) -> bool:
    """Make `path` what `old` says it was; False when that cannot be done (a file too large
    to have been kept, a folder or something else, an error)."""
    try:
        if old.kind == "absent":
            _clear(path)
        elif old.kind == "link":
            _clear(path)
            os.symlink(old.digest, path)
        elif old.kind == "file" and old.data is not None:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            fsutil.atomic_write_bytes(path, old.data, stat.S_IMODE(old.mode))
        elif old.kind == "file" and old.digest.startswith(STATUS) and _in_cache(path):
            _clear(path)  # a cache file changed in place: whoever made it makes it again
        else:
            return False
    except OSError:
        return False
    return True


def _in_cache(path: str) -> bool:
    return "__pycache__" in Path(path).parts or path.endswith((".pyc", ".pyo"))


def restore(
    before: Snapshot, paths: Iterable[str], aside: str | None = None
) -> tuple[list[str], list[str]]:
    """Put `paths` back as they were in `before` (remove what did not exist), never through
    a symlinked folder. With `aside`, what is found there is moved into that folder first
    (never deleted): a change outside the targets may be a person's edit made in the same
    window, or a file renamed away from its place. Returns (reverted, not reverted)."""
    done: list[str] = []
    failed: list[str] = []
    for rel in sorted(paths):
        try:
            parent = _safe_parent(before.root, rel)
        except OSError:
            parent = None
        target = None if parent is None else str(parent / Path(rel).name)
        kept = target is None or aside is None or not os.path.lexists(target)
        if not kept and _keep(str(target), str(aside), rel) is None:
            failed.append(rel)
            continue
        if target is not None and put_back(target, before.files.get(rel, ABSENT)):
            done.append(rel)
        else:
            failed.append(rel)
    return done, failed


def _keep(path: str, aside: str, rel: str) -> str | None:
    """Move the file (or link) at `path` into `aside`, named after `rel`; None on failure.
    A folder is left to `put_back` (it holds files the walk judged one by one)."""
    if os.path.isdir(path) and not os.path.islink(path):
        return path
    return move_aside(path, aside, rel)


def move_aside(path: str, aside: str, name: str | None = None) -> str | None:
    """Move `path` (a file, link or folder) into the folder `aside` under a name that says
    where it was (`name`, else the path); across filesystems it is copied, then removed.
    Returns where it went, or None when it could not be moved (it is then left where it is)."""
    try:
        os.makedirs(aside, mode=0o700, exist_ok=True)
        flat = (name or path).strip("/").replace("/", "%")[-200:]
        for n in range(1, 10_000):
            dest = os.path.join(aside, f"{n:03d}-{flat}")
            if not os.path.lexists(dest):
                break
        shutil.move(path, dest)
    except (OSError, shutil.Error):
        return None
    return dest


def remove_new_dirs(before: Snapshot, after: Snapshot) -> None:
    """Remove folders the fixer created that are empty once its files are gone."""
    for rel in sorted(after.dirs - before.dirs, key=lambda p: p.count("/"), reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(before.root / rel)
