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
- the check configs and `conftest.py` files of every folder above the workdir, at their
  own places: the copy sits at `<room>/<the workdir's real path>`, so a runner looking
  upwards for its inifile finds what it finds for the workdir.

The environment is the caller's, less the product's own variables (`INCIDENTS_*`), with
`PYTHONPATH` entries inside the workdir pointed into the copy and pytest's plugin
autoload off: only the plugins the profile names with `-p` load.

A workdir too large to copy (`MAX_FILES`, `MAX_BYTES`), or a target or test outside it,
is checked in place, with the same environment. The copy is made in memory
(`/dev/shm`) where there is one: creating a thousand files on a loaded disk costs
seconds, in a tmpfs a few milliseconds.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence

from incidents.checks.inputs import Inputs, _skipped_dir

MAX_FILES = 20_000
MAX_BYTES = 128 << 20
MEMORY_FOLDERS = ("/dev/shm",)  # a tmpfs: making a thousand files there costs little
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


def memory_folder() -> str | None:
    """A folder in memory to make the copy in (None: the default temporary folder)."""
    for folder in MEMORY_FOLDERS:
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            return folder
    return None


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
) -> str | None:
    """Copy cwd's source tree into the folder `room` (made by the caller, empty) at the
    place its real path names (`room/<path of cwd>`), the `frozen` texts (relative path
    -> text) in place of those files, and, at their own places above it, the files
    named `configs` (and `conftest.py`) of every folder above cwd, as a test runner
    looking upwards finds them. Returns the copy of cwd, or None: too large to copy
    (the caller checks in place)."""
    frozen = dict(frozen or {})
    base = os.path.realpath(cwd)
    copy = os.path.join(room, base.lstrip(os.sep))
    budget = [MAX_FILES, MAX_BYTES]
    seen: set[str] = {base}  # real folders walked: a symlinked folder is copied once
    for folder, dirs, names in os.walk(cwd, followlinks=True):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP
            and not _skipped_dir(folder, d)
            and os.path.join(folder, d) != skip
            and _first_visit(os.path.join(folder, d), seen)
        )
        rel_folder = os.path.relpath(folder, cwd)
        dest_folder = copy if rel_folder == "." else os.path.join(copy, rel_folder)
        os.makedirs(dest_folder, exist_ok=True)
        for name in names:
            rel = name if rel_folder == "." else os.path.join(rel_folder, name)
            source, dest = os.path.join(folder, name), os.path.join(dest_folder, name)
            if not _copy(source, dest, inputs, budget, frozen.pop(rel, None)):
                return None
    for rel, text in frozen.items():  # a frozen test the fix deleted: the spec still holds it
        dest = os.path.join(copy, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        _write(dest, text.encode("utf-8"), 0o600)
    return copy if _above(base, room, sorted({*configs, "conftest.py"}), inputs, budget) else None


def _above(base: str, room: str, names: list[str], inputs: Inputs, budget: list[int]) -> bool:
    """The files `names` of every folder above `base`, copied to their places in `room`."""
    folder = os.path.dirname(base)
    while True:
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                dest = os.path.join(room, path.lstrip(os.sep))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                if not _copy(path, dest, inputs, budget, None):
                    return False
        if os.path.dirname(folder) == folder:
            return True
        folder = os.path.dirname(folder)


def _first_visit(path: str, seen: set[str]) -> bool:
    real = os.path.realpath(path)
    if real in seen:
        return False
    seen.add(real)
    return True


def _copy(path: str, dest: str, inputs: Inputs, budget: list[int], replaced: str | None) -> bool:
    """Copy one file (a link: the file it leads to), hashed and recorded; `replaced`:
    the text to write instead (the frozen test). False: over the budget."""
    budget[0] -= 1
    read = _read(os.path.realpath(path), max(budget[1], 0))
    if read is None:
        return budget[0] >= 0  # not a regular file: nothing a check may read
    data, mode = read
    budget[1] -= len(data)
    if budget[0] < 0 or budget[1] < 0:
        return False
    inputs.copied(path, hashlib.sha256(data).hexdigest())
    _write(dest, replaced.encode("utf-8") if replaced is not None else data, mode)
    return True


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


# An inifile in the room's parent: a test runner looking upwards from the copy for its
# config stops there at the latest, never reading a folder above it (`/dev/shm`, `/`:
# anybody may write there). Found only when the workdir's own chain held none, and then
# the same as none: the rootdir is the profile's `--rootdir`, and the conftest files
# loaded stop at the copy, as they stop at the rootdir without an inifile.
STOP_MARKER = "pytest.ini"


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
    with `tmp` a private folder of the run's own (`mkdtemp`: 0700), the room's parent:
    the copy when the workdir can be copied, else the workdir itself, with the clean
    environment either way."""
    room = os.path.join(tmp, "room")
    os.mkdir(room, 0o700)
    copy = build(cwd, room, inputs, frozen, configs, skip) if inside(cwd, paths) else None
    if copy is not None:
        marker = f"[pytest]\naddopts = --confcutdir={copy}\n"
        _write(os.path.join(tmp, STOP_MARKER), marker.encode("utf-8"), 0o600)
        return copy, env(os.environ, cwd, copy)
    # in place: bytecode of this run only (a planted .pyc in the workdir is never run)
    return cwd, {**env(os.environ, cwd, None), "PYTHONPYCACHEPREFIX": os.path.join(tmp, "pyc")}


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
