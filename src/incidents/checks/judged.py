"""What a canonical report's verdict rests on (`Judged`), and whether it still holds.

The engine already reads every input its answer depends on through `Inputs` (for the
findings cache): the targets' and tests' digests, the check configs it looked for up the
tree, the test files of `[checks] test_paths`. `judged_of` turns those records into the
report's `judged.files` without reading anything again, so a report served from the cache
carries them too. `changed_files` re-hashes them now: the close grants success only while
it finds nothing, and `incidents verify-archive` says what changed since.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from incidents.allowlist import split_command
from incidents.checks.inputs import Inputs, display_path, file_digest
from incidents.digests import MISSING, UNREADABLE, combined, read_digest
from incidents.digests import file_digest as target_digest
from incidents.models.report import Judged, ToolRun

APPEARED = "appeared"


def _is_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64


def judged_of(inputs: Inputs, cwd: Path, runs: Sequence[ToolRun]) -> Judged:
    """The files the run's answer depended on, as `Inputs` recorded them, and the tools."""
    files: dict[str, str] = {}
    absent: set[str] = set()
    for name, args, result in inputs.recorded():
        if name in ("digest", "config") and _is_digest(result):
            files[display_path(args[0], cwd)] = result
        elif name == "config" and result is None:
            absent.add(display_path(args[0], cwd))
        elif name == "test_files" and isinstance(result, list):
            base = Path(args[0])
            for rel, digest in result:
                files[display_path(str(base / rel), cwd)] = digest
    return Judged(
        files=dict(sorted(files.items())),
        absent=sorted(absent),
        tools={run.tool: run.version for run in runs},
        tests=list(dict.fromkeys(t for run in runs for t in run.tests)),
    )


COMMAND_MAX_FILES = 2000  # .py files hashed under the folders commands name, all told
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "venv", "build", "dist"})


def command_files(commands: Iterable[str], workdir: Path) -> dict[str, str]:
    """The files in the workdir the verification commands name, with their digests,
    relative to the workdir: a regular file a command names (the script it runs, a test
    file it is given), and the .py files under a folder it names (`pytest tests`: the
    tests it collects; hidden folders, caches and virtualenvs left out), at most
    COMMAND_MAX_FILES of those, in sorted order."""
    base = os.path.realpath(workdir)
    found: dict[str, str] = {}
    budget = [COMMAND_MAX_FILES]
    for command in commands:
        try:
            argv = split_command(command)
        except ValueError:
            continue
        for arg in argv[1:]:
            value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
            path = value.split("::", 1)[0]  # a pytest node id names its file
            if not path or path.startswith("-"):
                continue
            real = os.path.realpath(os.path.join(base, path))
            if os.path.commonpath([base, real]) != base:
                continue
            if os.path.isdir(real):
                _folder_files(real, base, found, budget)
            elif os.path.isfile(real):
                _add(real, base, found)
    return found


def _add(real: str, base: str, found: dict[str, str]) -> None:
    with contextlib.suppress(OSError):
        found[os.path.relpath(real, base)] = file_digest(real)


def _folder_files(folder: str, base: str, found: dict[str, str], budget: list[int]) -> None:
    for top, dirs, names in os.walk(folder):  # symlinked folders are not followed
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(names):
            if budget[0] <= 0:
                return
            full = os.path.join(top, name)
            rel = os.path.relpath(full, base)
            if not name.endswith(".py") or rel in found or os.path.islink(full):
                continue
            budget[0] -= 1
            _add(full, base, found)


def targets_digest(judged: Judged | None, targets: Sequence[str], workdir: Path) -> str | None:
    """The targets as a check judged them, as one sha256 (`digests.combined`): from the
    report's own record (`judged.files`), so a report reused by a redo after a crash gives
    the same answer as when it was written. A target it holds no hash of (an older report,
    a target no tool read) is hashed now."""
    files = judged.files if judged is not None else {}
    known = {t: files.get(t) or target_digest(str(workdir / t)) for t in targets}
    return combined(known, list(targets))


def current_digest(path: str, workdir: Path) -> str:
    """The file's sha256 now, read as the check read it (symlinks followed, never blocking
    on a FIFO): `missing` when it is not there or not a regular file, `unreadable` when
    it cannot be read."""
    full = Path(path) if os.path.isabs(path) else workdir / path
    try:
        return read_digest(os.path.realpath(full))
    except FileNotFoundError:
        return MISSING
    except OSError:
        return UNREADABLE if full.exists() else MISSING


def changed_files(
    files: Mapping[str, str], workdir: Path, absent: Iterable[str] = ()
) -> dict[str, str]:
    """path -> what it is now (a digest, `missing`, `unreadable` or `appeared`), for every
    file whose content is not the one judged, and every config absent then that exists."""
    changed: dict[str, str] = {}
    for path, digest in files.items():
        now = current_digest(path, workdir)
        if now != digest:
            changed[path] = now
    for path in absent:
        if os.path.lexists(path if os.path.isabs(path) else workdir / path):
            changed[path] = APPEARED
    return changed


def describe(changed: Mapping[str, str], limit: int = 10) -> str:
    """`a.py (changed), b.py (missing)`, the first `limit` of them."""
    shown = [
        f"{path} ({'changed' if len(now) == 64 else now})"
        for path, now in list(changed.items())[:limit]
    ]
    more = len(changed) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
