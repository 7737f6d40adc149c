"""What a check's answer depends on, computed one way for the engine and for the replay.

Every file, folder and program the engine reads to decide its answer goes through one
`Inputs` object: each method calls the probe of that name and records
`(probe, args) -> result`. `incidents.checks.replay` stores that record next to the
report and replays the report only while every probe still returns what it recorded,
so the fast path cannot disagree with the engine about what matters.

Stdlib only: the replay runs before pydantic or typer are imported.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from fnmatch import fnmatch
from pathlib import Path

from incidents.checks import testscan
from incidents.checks.cache import VersionCache, make_key
from incidents.digests import read_digest
from incidents.errors import UsageError

TYPE_CHECKING = False  # typing stays off the replay path (import cost)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")
    Fact = list[Any]  # [probe, [args...], result]: one JSON-ready record

PY_SUFFIXES = (".py", ".pyi")
PS_SUFFIXES = (".ps1", ".psm1", ".psd1")
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "venv", "build", "dist"})
TREE_MAX_FILES = 5000
_TREE_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
_WHICH_MEMO: dict[str, str | None] = {}


class Inputs:
    """The record of one check run's inputs. Thread-safe (the engine's tools run in threads)."""

    def __init__(self) -> None:
        self.facts: dict[tuple[str, tuple[str, ...]], Any] = {}
        self.refusals: list[str] = []  # why replaying this run's report would be wrong
        self.runs: list[dict[str, Any]] = []  # the tool runs a warm re-run would report
        self._lock = threading.Lock()

    def refuse(self, reason: str) -> None:
        with self._lock:
            self.refusals.append(reason)

    def recorded(self) -> list[Fact]:
        with self._lock:
            return [[name, list(args), result] for (name, args), result in self.facts.items()]

    def _record(self, name: str, args: tuple[str, ...], result: T) -> T:
        value = _plain(result)
        with self._lock:
            if self.facts.setdefault((name, args), value) != value:
                self.refusals.append(f"{name} {args} changed during the run")
        return result

    def targets(self, *args: str) -> tuple[list[str], list[str]]:
        return self._record("targets", args, expand_targets(list(args)))

    def digest(self, path: str) -> str:
        return self._record("digest", (path,), file_digest(path))

    def copied(self, path: str, digest: str) -> str:
        """A file copied into a clean room: `digest` is of the bytes copied (a replay
        hashes it again, as for `digest`)."""
        return self._record("digest", (path,), digest)

    def config(self, path: str) -> str | None:
        return self._record("config", (path,), config_digest(path))

    def tree(
        self, cwd: str, globs: Sequence[str], starts: Iterable[str], *, others: bool, skip: str
    ) -> str | None:
        args = (cwd, _join(globs), _join(sorted(set(starts))), "stat" if others else "", skip)
        return self._record("tree", args, tree_digest(*args))

    def test_files(self, cwd: str, entry: str, globs: Sequence[str]) -> list[tuple[str, str]]:
        return self._record("test_files", (cwd, entry, *globs), test_files(cwd, entry, *globs))

    def related_tests(
        self, cwd: str, globs: Sequence[str], skip: str, targets: Iterable[str]
    ) -> list[str] | None:
        """The test files under cwd that import or are named after a target (testscan)."""
        args = (cwd, _join(globs), skip, *sorted(set(targets)))
        return self._record("related_tests", args, testscan.related_tests(*args))

    def named_tests(self, cwd: str, nodes: Sequence[str]) -> list[list[str]]:
        """The node ids a failure log named, resolved against cwd (testscan)."""
        args = (cwd, *nodes)
        return self._record("named_tests", args, testscan.resolve_named(*args))

    def which(self, program: str) -> str | None:
        return self._record("which", (program,), which(program))

    def identity(self, program: str) -> str | None:
        return self._record("identity", (program,), VersionCache.identity(program))

    def env(self, name: str) -> str | None:
        return self._record("env", (name,), os.environ.get(name))

    def stamp(self, folder: str) -> int | None:
        """A folder's mtime: it changes when an entry is added or removed (pip install)."""
        return self._record("stamp", (folder,), folder_stamp(folder))

    def own_code(self) -> None:
        """incidents' own modules loaded so far: the code that computes the report."""
        for path in loaded_sources():
            self._record("source", (path,), source_stamp(path))


def unchanged(facts: list[Fact]) -> bool:
    """Does every recorded probe still return what it returned then? (False on any doubt.)"""
    for name, args, result in facts:
        probe = PROBES.get(name)
        if probe is None:
            return False
        try:
            if _plain(probe(*args)) != result:
                return False
        except (OSError, UsageError):
            return False
    return True


def _plain(value: Any) -> Any:
    """The JSON form of a probe's result (tuples become lists), to compare with a stored one."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


# -- the probes ---------------------------------------------------------------------


def expand_targets(args: list[str]) -> tuple[list[str], list[str]]:
    """(python files, powershell files); folders are walked, hidden ones skipped."""
    python: list[str] = []
    powershell: list[str] = []
    for arg in args or ["."]:
        path = Path(arg)
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
                for name in sorted(names):
                    _sort_into(os.path.join(folder, name), python, powershell)
        elif path.is_file():
            if not _sort_into(arg, python, powershell):
                raise UsageError(f"{arg}: not a Python or PowerShell file")
        else:
            raise UsageError(f"{arg}: no such file or folder")
    return python, powershell


def _sort_into(path: str, python: list[str], powershell: list[str]) -> bool:
    if path.endswith(PY_SUFFIXES):
        python.append(path)
    elif path.endswith(PS_SUFFIXES):
        powershell.append(path)
    else:
        return False
    return True


def file_digest(path: str | os.PathLike[str]) -> str:
    """sha256 of the file at `path` as a tool reads it (symlinks followed), by the suite's
    one hashing function (`digests.read_digest`: it never blocks on a FIFO); OSError when
    it is not a readable regular file."""
    return read_digest(os.path.realpath(path))


def config_digest(path: str) -> str | None:
    """A config file's digest, or None when there is none (its absence is a fact too)."""
    try:
        return file_digest(path)
    except OSError:
        return "unreadable" if os.path.isfile(path) else None


def folder_stamp(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def tree_digest(cwd: str, globs: str, starts: str, others: str = "", skip: str = "") -> str | None:
    """Digest of every file matching `globs` under the roots `tree_roots` finds for the
    folders `starts`, by content; with `others` ("stat") every other file too, by size
    and mtime. None: more than TREE_MAX_FILES files, too many to be worth it.
    Lists are NUL-separated (probe arguments are strings). Below a root, hidden folders,
    caches, virtualenvs and `skip` (the checks cache) are not walked."""
    patterns = globs.split("\0")
    parts: list[str] = []
    seen: set[str] = set()  # real folders walked: symlinked folders are followed once
    for root in tree_roots(cwd, starts.split("\0") if starts else []):
        seen.add(os.path.realpath(root))
        for folder, dirs, names in os.walk(root, followlinks=True):
            dirs[:] = sorted(
                d for d in dirs
                if not _skipped_dir(folder, d) and os.path.join(folder, d) != skip
                and _first_visit(os.path.join(folder, d), seen)
            )  # fmt: skip
            for name in sorted(names):
                source = any(fnmatch(name, g) for g in patterns)
                if not source and not others:
                    continue
                if len(parts) >= TREE_MAX_FILES:
                    return None
                path = os.path.join(folder, name)
                parts.append(f"{os.path.relpath(path, cwd)}\0{_tree_entry(path, source)}")
    return make_key(*parts)


def _first_visit(path: str, seen: set[str]) -> bool:
    real = os.path.realpath(path)
    if real in seen:
        return False
    seen.add(real)
    return True


def _tree_entry(path: str, source: bool) -> str:
    try:
        if source:
            return file_digest(path)
        st = os.stat(path)
    except OSError:
        return "unreadable"
    return f"stat\0{st.st_size}\0{st.st_mtime_ns}"


def tree_roots(cwd: str, starts: Iterable[str]) -> list[str]:
    """The folders whose source trees a batch tool reads: cwd, plus the folder of each
    start (a target's or test's folder) that is outside cwd, that a walk of cwd skips (a
    hidden folder), or whose package reaches above cwd (cwd inside a package), raised to
    the top of its package as mypy and pytest do to put it on sys.path. A root that a
    walk of another root covers is dropped."""
    base = os.path.normpath(cwd)
    in_package = _is_package(base)
    roots = {base, _package_top(base, stop=None)} if in_package else {base}
    for start in starts:
        folder = os.path.normpath(os.path.join(base, start))
        inside = _under(folder, base)
        if inside and _skipped_below(base, folder):  # hidden: walked itself, within cwd
            roots.add(_package_top(folder, stop=base))
        if not inside or in_package:  # where its imports resolve, above cwd if need be
            roots.add(_package_top(folder, stop=None))
    kept: list[str] = []
    for root in sorted(roots, key=len):  # a parent before its children
        if not any(_under(root, k) and not _skipped_below(k, root) for k in kept):
            kept.append(root)
    return sorted(kept)


def _package_top(folder: str, stop: str | None) -> str:
    """The folder a package's imports resolve from (the first one up without an
    `__init__.py`), or the folder just below `stop`."""
    while _is_package(folder):
        parent = os.path.dirname(folder)
        if parent in (folder, stop):
            break
        folder = parent
    return folder


def test_files(cwd: str, entry: str, *globs: str) -> list[tuple[str, str]]:
    """(path, digest) of the test files under a configured test path (file or folder)."""
    base = Path(cwd)
    top = (base / entry).resolve()
    paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
    found: list[tuple[str, str]] = []
    for p in paths:
        rel = display_path(str(p), base)
        if matches(rel, globs) and not _hidden(rel):
            found.append((rel, file_digest(p)))
    return found


def which(program: str) -> str | None:
    """`find_program`, asked once per program per process."""
    if program not in _WHICH_MEMO:
        _WHICH_MEMO[program] = find_program(program)
    return _WHICH_MEMO[program]


def find_program(program: str) -> str | None:
    """The venv's own scripts first (the tools installed next to incidents), then PATH."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) else None
    search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return shutil.which(program, path=search)


def source_stamp(path: str) -> str:
    """Size and mtime: what Python itself checks before reusing a module's bytecode."""
    st = os.stat(path)
    return f"{st.st_size}|{st.st_mtime_ns}"


def loaded_sources() -> list[str]:
    found = {
        m.__file__
        for name, m in list(sys.modules.items())
        if (name == "incidents" or name.startswith("incidents.")) and getattr(m, "__file__", None)
    }
    return sorted(f for f in found if f is not None)


PROBES: dict[str, Callable[..., Any]] = {
    "targets": lambda *args: expand_targets(list(args)),
    "digest": file_digest,
    "config": config_digest,
    "tree": tree_digest,
    "test_files": test_files,
    "related_tests": testscan.related_tests,
    "named_tests": testscan.resolve_named,
    "which": find_program,  # not the memo: a long-lived process may hold a stale answer
    "identity": VersionCache.identity,
    "source": source_stamp,
    "env": os.environ.get,
    "stamp": folder_stamp,
}


# -- helpers ------------------------------------------------------------------------


def display_path(path: str, cwd: Path) -> str:
    """Relative to `cwd` when under it (the same for every tool), else absolute."""
    p = Path(path)
    absolute = p if p.is_absolute() else cwd / p
    norm = Path(os.path.normpath(absolute))
    try:
        return str(norm.relative_to(cwd))
    except ValueError:
        return str(norm)


def matches(path: str, globs: Sequence[str]) -> bool:
    name = os.path.basename(path)
    return any(fnmatch(name, g) or fnmatch(path, g) for g in globs)


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in Path(rel).parts[:-1])


def config_paths(cwd: str, starts: Iterable[str], names: Sequence[str]) -> list[str]:
    """Where a tool may find its config files: each bare name in every folder from cwd and
    from each start folder up to the filesystem root; a name with a folder part once,
    relative to cwd (`~` expanded)."""
    folders: set[str] = set()
    for start in (cwd, *starts):
        folder = os.path.normpath(os.path.join(cwd, start))
        while folder not in folders:
            folders.add(folder)
            folder = os.path.dirname(folder)
    bare = [n for n in names if "/" not in n and os.sep not in n]
    paths = [os.path.join(f, n) for f in sorted(folders) for n in bare]
    paths += [os.path.join(cwd, os.path.expanduser(n)) for n in names if n not in bare]
    return paths


def _join(items: Iterable[str]) -> str:
    return "\0".join(items)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _skipped_dir(parent: str, name: str) -> bool:
    """Does a source-tree walk skip this folder? (hidden, a cache, a virtualenv)"""
    return (
        name[:1] == "."
        or name in _TREE_SKIPPED_DIRS
        or os.path.exists(os.path.join(parent, name, "pyvenv.cfg"))
    )


def _skipped_below(root: str, path: str) -> bool:
    """Does a walk of `root` skip `path` (a folder under it)?"""
    folder = root
    for name in os.path.relpath(path, root).split(os.sep):
        if name in (".", ""):
            continue
        if _skipped_dir(folder, name):
            return True
        folder = os.path.join(folder, name)
    return False


def _is_package(folder: str) -> bool:
    return any(os.path.isfile(os.path.join(folder, n)) for n in ("__init__.py", "__init__.pyi"))
