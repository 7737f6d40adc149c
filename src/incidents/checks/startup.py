"""What every Python process loads at start-up or can import, outside the workdir: a
check must not leave any.

A check runs the code under judgement (the tests, the verification command, the run as
the user), and that code can write anywhere the user can. A `*.pth` file,
`sitecustomize.py` or `usercustomize.py` in a folder the interpreter reads at start-up
(its site-packages, the user's site folder under `~/.local`, the standard library's
folder) runs in every later Python process, the next check's clean room and the user's
own runs included, and a module or package that appears in a site folder is there for
any code that imports it. Code that plants one on a first check, then withdraws the
planting from the source, is judged on a later check by what it planted, and the source
reviewed no longer shows it (a target that imports a planted module is judged on files
no verdict hashes). So the start-up files of those folders, and every entry of the site
folders (a package by its presence: what an existing package holds is not compared),
are noted before a check and compared after it: one that appeared or changed is taken
back (a new one moved into the incident's runs folder, a changed one restored) and is a
hard finding of the check.

The folders are this interpreter's `sys.path` folders outside the workdir, the
site-packages of its base installation (where a user's `python` commonly is) and the
user site folders of every Python version under the home folder.
"""

from __future__ import annotations

import glob
import os
import site
import stat
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
    sites: list[str] = field(default_factory=list)


def folders(workdir: str | None = None) -> list[str]:
    """The folders a Python process reads start-up files from (see the docstring), those
    that exist, outside `workdir` (the workdir's own are judged as its files)."""
    found = [p for p in sys.path if p]
    found.append(sysconfig.get_paths()["stdlib"])
    return _existing(found + site_folders(), workdir)


def site_folders(workdir: str | None = None) -> list[str]:
    """The folders packages are installed in: this interpreter's, its base
    installation's and the user site folders under the home folder."""
    found = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        found += glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))
    home = os.path.expanduser("~")
    found += glob.glob(os.path.join(home, ".local", "lib", "python3*", "site-packages"))
    found.append(site.getusersitepackages())
    return _existing(found, workdir)


def _existing(found: list[str], workdir: str | None) -> list[str]:
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
    seen = Snapshot(folders(workdir), sites=site_folders(workdir))
    for path in _startup_files(seen.folders, seen.sites):
        noted = _note(path)
        if noted is not None:
            seen.files[path] = noted
    return seen


def take_back(before: Snapshot, aside: Path, tool: str = "startup") -> list[Finding]:
    """The start-up files that appeared or changed since `before`: a new one moved into
    `aside`, a changed one restored when its bytes were noted; one finding naming them."""
    now_folders = sorted(set(before.folders) | set(folders()))
    now_sites = sorted(set(before.sites) | set(site_folders()))
    planted: list[str] = []
    for path in _startup_files(now_folders, now_sites):
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
        "a check left, outside the workdir, a file every Python process loads at start-up "
        f"or can import (taken back): {', '.join(planted[:5])}"
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


def _startup_files(roots: list[str], sites: list[str]) -> list[str]:
    """The start-up files of `roots`, and every entry of the site folders `sites` (a
    module or package there is importable by every later run) but their bytecode."""
    out: set[str] = set()
    for d in roots:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        every = d in sites
        out.update(
            os.path.join(d, n)
            for n in names
            if n in HOOKS or n.endswith(".pth") or (every and n != "__pycache__")
        )
    return sorted(out)


def _note(path: str) -> Seen | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):  # a package: noted by its presence (what it holds is not)
        return Seen((0, 0), b"")
    data = None
    if st.st_size <= MAX_BYTES:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = None
    return Seen((st.st_mtime_ns, st.st_size), data)
