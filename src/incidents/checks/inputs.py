"""What a check's answer depends on, computed one way for the engine and for the replay.

Every file, folder and program the engine reads to decide its answer goes through one
`Inputs` object: each method calls the probe of that name and records
`(probe, args) -> result`. `incidents.checks.replay` stores that record next to the
report and replays the report only while every probe still returns what it recorded,
so the fast path cannot disagree with the engine about what matters.

Stdlib only: the replay runs before pydantic or typer are imported.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from fnmatch import fnmatch
from pathlib import Path

from incidents.checks.cache import VersionCache, make_key
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

    def config_file(self, cwd: str, name: str) -> str | None:
        return self._record("config_file", (cwd, name), config_file(cwd, name))

    def tree(self, cwd: str, globs: Sequence[str]) -> str | None:
        return self._record("tree", (cwd, *globs), tree_digest(cwd, *globs))

    def test_files(self, cwd: str, entry: str, globs: Sequence[str]) -> list[tuple[str, str]]:
        return self._record("test_files", (cwd, entry, *globs), test_files(cwd, entry, *globs))

    def which(self, program: str) -> str | None:
        return self._record("which", (program,), which(program))

    def identity(self, program: str) -> str | None:
        return self._record("identity", (program,), VersionCache.identity(program))

    def own_code(self) -> None:
        """incidents' own modules loaded so far: the code that computes the report."""
        for path in loaded_sources():
            self._record("source", (path,), source_stamp(path))


def unchanged(facts: list[Fact]) -> bool:
    """Does every recorded probe still return what it returned then? (False on any doubt.)"""
    for name, args, result in facts:
        probe = PROBES[name]
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
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def config_file(cwd: str, name: str) -> str | None:
    """A tool's config file as `path NUL digest`: `name` looked up from cwd upwards (or
    at cwd/name when it has a folder part); None when there is none."""
    base = Path(cwd)
    found = _find_upward(base, name) if os.sep not in name else base / name
    if found is None or not found.is_file():
        return None
    return f"{found}\0{file_digest(found)}"


def tree_digest(cwd: str, *globs: str) -> str | None:
    """Digest of every file matching `globs` under cwd (None: too many to be worth it).
    Skips hidden folders, caches and virtualenvs."""
    parts: list[str] = []
    for folder, dirs, names in os.walk(cwd):
        dirs[:] = sorted(
            d for d in dirs
            if d[:1] != "." and d not in _TREE_SKIPPED_DIRS
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        )  # fmt: skip
        for name in sorted(names):
            if any(fnmatch(name, g) for g in globs):
                if len(parts) >= TREE_MAX_FILES:
                    return None
                path = os.path.join(folder, name)
                try:
                    parts.append(f"{os.path.relpath(path, cwd)}\0{file_digest(path)}")
                except OSError:
                    parts.append(f"{os.path.relpath(path, cwd)}\0unreadable")
    return make_key(*parts)


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
    "config_file": config_file,
    "tree": tree_digest,
    "test_files": test_files,
    "which": find_program,  # not the memo: a long-lived process may hold a stale answer
    "identity": VersionCache.identity,
    "source": source_stamp,
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


def _find_upward(start: Path, name: str) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None
