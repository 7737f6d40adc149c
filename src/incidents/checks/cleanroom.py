"""The clean room a test runner's check runs in: a fresh copy of the files it judges.

A test run executes the workdir's code, and that code may write: a `conftest.py`, a
plugin, a `.pth` in a virtualenv inside the workdir, a forged report, then tidy up. Run
in place, what one run planted is loaded by the next. So a test runner runs in a folder
of its own, made for that run and removed after it, holding:

- every regular file of the workdir's source tree as it is now (the targets, the tests,
  the modules they import, data and check configs), each hashed as it is copied and
  recorded with `Inputs` (so the report's `judged.files`, and through it the verdict,
  binds every file the run could read); hidden folders, caches and virtualenvs are left
  out (a virtualenv inside the workdir is never on the copy's path);
- the frozen tests in place of the workdir's: the text the first baseline check kept of
  a test file (the specification as captured), where the caller says so;
- the nearest check configs above the workdir, when it has none of its own (pytest looks
  for its inifile upwards from its arguments).

The environment is the caller's, less the product's own variables (`INCIDENTS_*`), with
`PYTHONPATH` entries inside the workdir pointed into the copy and pytest's plugin
autoload off: only the plugins the profile names with `-p` load.

A workdir too large to copy (`MAX_FILES`, `MAX_BYTES`), or a target or test outside it,
is checked in place, with the same environment.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence

from incidents.checks.inputs import Inputs, _skipped_dir

MAX_FILES = 20_000
MAX_BYTES = 256 << 20
PRODUCT_PREFIXES = ("INCIDENTS_",)
_SKIP = frozenset({"site-packages", "dist-packages", "__pycache__", "node_modules"})
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def env(base: Mapping[str, str], cwd: str, room: str | None) -> dict[str, str]:
    """The environment of a clean-room run (see the module docstring)."""
    out = {k: v for k, v in base.items() if not k.startswith(PRODUCT_PREFIXES)}
    out.pop("PYTHONPYCACHEPREFIX", None)  # the copy's bytecode dies with it
    if "PYTHONPATH" in out:
        kept = [_moved(p, cwd, room) for p in out["PYTHONPATH"].split(os.pathsep) if p]
        out["PYTHONPATH"] = os.pathsep.join(p for p in kept if p)
        if not out["PYTHONPATH"]:
            del out["PYTHONPATH"]
    out["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return out


def _moved(entry: str, cwd: str, room: str | None) -> str:
    """A path entry into the workdir, into the copy instead (dropped without one)."""
    full = os.path.realpath(os.path.join(cwd, entry))
    base = os.path.realpath(cwd)
    if full != base and not full.startswith(base + os.sep):
        return entry
    if room is None:
        return ""
    return os.path.join(room, os.path.relpath(full, base))


def inside(cwd: str, paths: Sequence[str]) -> bool:
    """Are all `paths` (relative to cwd or absolute) inside cwd?"""
    base = os.path.realpath(cwd)
    for p in paths:
        full = os.path.realpath(os.path.join(cwd, p))
        if full != base and not full.startswith(base + os.sep):
            return False
    return True


def build(
    cwd: str,
    room: str,
    inputs: Inputs,
    frozen: Mapping[str, str] | None = None,
    configs: Sequence[str] = (),
    skip: str = "",
) -> bool:
    """Copy cwd's source tree into the folder `room` (made by the caller, empty), the
    `frozen` texts (relative path -> text) in place of those files, and the nearest of
    the `configs` names above cwd when cwd has none. False: too large to copy (the
    caller checks in place)."""
    frozen = dict(frozen or {})
    count, size = 0, 0
    base = os.path.realpath(cwd)
    for folder, dirs, names in os.walk(cwd):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP and not _skipped_dir(folder, d) and os.path.join(folder, d) != skip
        )
        rel_folder = os.path.relpath(folder, cwd)
        dest_folder = room if rel_folder == "." else os.path.join(room, rel_folder)
        os.makedirs(dest_folder, exist_ok=True)
        for name in names:
            rel = name if rel_folder == "." else os.path.join(rel_folder, name)
            path = os.path.join(folder, name)
            count += 1
            if count > MAX_FILES:
                return False
            real = os.path.realpath(path)  # a link is copied as the file it leads to, inside
            read = _read(real, MAX_BYTES - size) if _under(real, base) else None
            if read is None:
                continue  # not a regular file inside the workdir: nothing a check may read
            data, mode = read
            size += len(data)
            if size > MAX_BYTES:
                return False
            inputs.copied(path, hashlib.sha256(data).hexdigest())
            if rel in frozen:
                data = frozen.pop(rel).encode("utf-8")
            _write(os.path.join(dest_folder, name), data, mode)
    for rel, text in frozen.items():  # a frozen test the fix deleted: the spec still holds it
        dest = os.path.join(room, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        _write(dest, text.encode("utf-8"), 0o600)
    _nearest_configs(cwd, room, configs, inputs)
    return True


def _nearest_configs(cwd: str, room: str, names: Sequence[str], inputs: Inputs) -> None:
    if not names or any(os.path.isfile(os.path.join(cwd, n)) for n in names):
        return
    folder = os.path.dirname(os.path.realpath(cwd))
    while True:
        found = [n for n in names if os.path.isfile(os.path.join(folder, n))]
        if found:
            for name in found:
                read = _read(os.path.join(folder, name), MAX_BYTES)
                if read is not None:
                    digest = hashlib.sha256(read[0]).hexdigest()
                    inputs.copied(os.path.join(folder, name), digest)
                    _write(os.path.join(room, name), *read)
            return
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + os.sep)


def _read(path: str, limit: int) -> tuple[bytes, int] | None:
    """(bytes, the mode to copy them with) of a regular file, None for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                break
        return b"".join(chunks), 0o700 if st.st_mode & 0o100 else 0o600
    except OSError:
        return None
    finally:
        os.close(fd)


def _write(path: str, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def prepare(
    cwd: str,
    tmp: str,
    inputs: Inputs,
    paths: Sequence[str],
    frozen: Mapping[str, str],
    configs: Sequence[str],
    skip: str,
) -> tuple[str, dict[str, str]]:
    """(the folder to run in, its environment) for a run on `paths` (targets and tests),
    with `tmp` a folder of the run's own: the copy when the workdir can be copied, else
    the workdir itself, with the clean environment either way."""
    room = os.path.join(tmp, "room")
    os.mkdir(room, 0o700)
    if inside(cwd, paths) and build(cwd, room, inputs, frozen, configs, skip):
        return room, env(os.environ, cwd, room)
    return cwd, env(os.environ, cwd, None)


_LOADABLE_NAMES = frozenset({"conftest.py", "sitecustomize.py", "usercustomize.py"})
_LOADABLE_SUFFIXES = (".pth", ".dist-info", ".egg-info", ".egg-link", ".pyc")


def loadable(rel: str) -> bool:
    """Would the import system or a test runner load this path by its name alone? (a
    conftest, a site hook, a `.pth`, an installed distribution's metadata, bytecode, a
    file under a site-packages folder)"""
    name = os.path.basename(rel)
    parts = rel.split(os.sep)
    return (
        name in _LOADABLE_NAMES
        or name.endswith(_LOADABLE_SUFFIXES)
        or any(p in ("site-packages", "dist-packages") for p in parts[:-1])
    )
