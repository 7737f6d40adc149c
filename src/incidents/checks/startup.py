"""What every Python process loads at start-up, outside the workdir: a check must not
leave any.

A check runs the code under judgement (the tests, the verification command, the run as
the user), and that code can write anywhere the user can. A `*.pth` file,
`sitecustomize.py` or `usercustomize.py` in a folder the interpreter reads at start-up
(its site-packages, the user's site folder under `~/.local`, the standard library's
folder) runs in every later Python process: the next check's clean room and the user's
own runs included. Code that plants one on a first check, then withdraws the planting
from the source, is judged on a later check by what it planted, and the source reviewed
no longer shows it. So the start-up files of those folders are noted before a check and
compared after it: one that appeared or changed is taken back (a new one moved into the
incident's runs folder, a changed one restored) and is a hard finding of the check.

The folders are this interpreter's `sys.path` folders outside the workdir, the
site-packages of its base installation (where a user's `python` commonly is) and the
user site folders of every Python version under the home folder.
"""

from __future__ import annotations

import glob
import os
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from incidents import fsutil
from incidents.models.report import Finding
from incidents.vocab import Category, Severity

HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
MAX_BYTES = 1 << 20  # a start-up file is small; a larger one is noted by its stat only


@dataclass(frozen=True)
class Seen:
    """A start-up file as it was: its stat and, when small, its bytes."""

    stat: tuple[int, int]
    data: bytes | None


@dataclass
class Snapshot:
    folders: list[str]
    files: dict[str, Seen] = field(default_factory=dict)


def folders(workdir: str | None = None) -> list[str]:
    """The folders a Python process reads start-up files from (see the docstring), those
    that exist, outside `workdir` (the workdir's own are judged as its files)."""
    found = [p for p in sys.path if p]
    found += [sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        found += glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))
    home = os.path.expanduser("~")
    found += glob.glob(os.path.join(home, ".local", "lib", "python3*", "site-packages"))
    found.append(site.getusersitepackages())
    inside = os.path.realpath(workdir) + os.sep if workdir else None
    out: list[str] = []
    for p in found:
        real = os.path.realpath(p)
        if real in out or not os.path.isdir(real):
            continue
        if inside is not None and (real + os.sep).startswith(inside):
            continue
        out.append(real)
    return out


def snapshot(workdir: str | None = None) -> Snapshot:
    """The start-up files of `folders()` now."""
    seen = Snapshot(folders(workdir))
    for path in _startup_files(seen.folders):
        noted = _note(path)
        if noted is not None:
            seen.files[path] = noted
    return seen


def take_back(before: Snapshot, aside: Path, tool: str = "startup") -> list[Finding]:
    """The start-up files that appeared or changed since `before`: a new one moved into
    `aside`, a changed one restored when its bytes were noted; one finding naming them."""
    now_folders = sorted(set(before.folders) | set(folders()))
    planted: list[str] = []
    for path in _startup_files(now_folders):
        was = before.files.get(path)
        noted = _note(path)
        if noted is None or (was is not None and was.stat == noted.stat):
            continue
        if was is not None and was.data is not None and was.data == noted.data:
            continue
        planted.append(path)
        try:
            if was is not None and was.data is not None:
                fsutil.atomic_write_bytes(path, was.data, sync_dir=False)
            else:
                fsutil.ensure_dir(aside)
                os.replace(path, aside / f"{len(planted):02d}-{os.path.basename(path)}")
        except OSError:
            pass  # still a finding: the check is not clean
    if not planted:
        return []
    message = (
        "a check left a file every Python process loads at start-up, outside the "
        f"workdir (taken back): {', '.join(planted[:5])}"
    )
    return [
        Finding(
            tool=tool,
            path=planted[0],
            code="planted",
            category=Category.VERIFICATION,
            severity=Severity.ERROR,
            hard=True,
            message=message,
        )
    ]


def _startup_files(roots: list[str]) -> list[str]:
    out: set[str] = set()
    for d in roots:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        out.update(os.path.join(d, n) for n in names if n in HOOKS or n.endswith(".pth"))
    return sorted(out)


def _note(path: str) -> Seen | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    data = None
    if st.st_size <= MAX_BYTES:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = None
    return Seen((st.st_mtime_ns, st.st_size), data)
