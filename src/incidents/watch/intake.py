"""Is an inbox folder ready to be worked on? (Bundles copied in by hand arrive file by file.)

A capture builds its bundle in staging and renames it into the inbox in one step; the
watcher knows such a bundle is whole from the rename event (IN_MOVED_TO) or from the
capture's `.state/dirty/<id>` hint, written after the rename, and takes it at once unless
something in it is newer than that moment. (File
times cannot tell: they have the kernel clock's coarse granularity.) Any other folder — one
copied by hand fills up file by file — is ready only when `incident.json` parses and names
the folder, `status.txt` is there, no hidden temp file (rsync, editors) is left, and nothing
in it has changed for `stable_s`. One that never becomes valid is set aside to
`error_rejected/` with a reason once nothing in it has changed for `reject_grace_s`;
nothing is deleted. That grace is read from the disk, not from the watcher's memory, so
that `--once` and `--until-idle` runs from cron, each starting afresh, still set such a
folder aside; it counts inode change times as well as modification times, because a copy
that keeps the source's mtimes (`cp -a`, `tar x`, `mv`) has only those to say it arrived.

A folder whose entries break the bundle-file rules from their listing alone (a symlink,
FIFO, device, hard link, a file over its cap: `incidents.bundle_files`) is set aside at
once: no copy in progress looks like that.

A `state.json` does not make a folder ready: a bundle worked before and copied in by hand
may bring it first. Only a folder this watcher has already taken (the same folder, by its
inode) is ready as it is: from then on it is written by our workers and by agents' commands,
whose writes are atomic.

Ready means complete, not trusted: what a ready bundle says is judged by the worker's
first tick (`step.documents.load_bundle`, for the watcher and `incidents step`/`drive`
alike): capture's rules on its workdir, targets and commands (`bundle_rules`), and a
`state.json` believed only with the step service's seal (`step.seal`). A bundle that
fails goes to `error_rejected/` with its reason.

The one exception: a temp file of our own atomic writes (`.NAME.PID.HEX.tmp`) left by a
writer killed mid-write (a capture adding an occurrence, a step) is not data and not a
copy in progress: the file it was replacing is intact. It is removed, and the bundle is
judged without it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from incidents import artifacts, bundle_files, fsutil, store
from incidents.errors import IncidentsError
from incidents.layout import Root

REQUIRED = (artifacts.INCIDENT, artifacts.STATUS)


class Verdict(StrEnum):
    READY = "ready"
    WAIT = "wait"  # incomplete or still changing: look again later
    REJECT = "reject"
    GONE = "gone"  # moved away meanwhile (archived, rejected)


@dataclass(frozen=True)
class Examined:
    verdict: Verdict
    reason: str = ""
    settled: bool = True  # WAIT only: False while the folder is still changing
    identity: tuple[int, int] | None = None  # READY: (st_dev, st_ino) of the folder taken


@dataclass(frozen=True)
class _Listing:
    mtimes: dict[str, int]  # entry name -> mtime (ns)
    folder_ns: int  # mtime of the folder itself
    changed_ns: int  # newest mtime or ctime of an entry or of the folder: when it last changed
    identity: tuple[int, int]  # (st_dev, st_ino) of the folder

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.mtimes)

    @property
    def newest_ns(self) -> int:  # newest mtime of an entry or of the folder itself
        return max([self.folder_ns, *self.mtimes.values()])

    def without(self, names: set[str]) -> _Listing:
        return replace(self, mtimes={n: t for n, t in self.mtimes.items() if n not in names})


def _listing(folder: Path) -> _Listing | None:
    try:
        st = os.stat(folder, follow_symlinks=False)
        changed = max(st.st_mtime_ns, st.st_ctime_ns)
        if not stat.S_ISDIR(st.st_mode):
            return _Listing({}, st.st_mtime_ns, changed, (st.st_dev, st.st_ino))
        mtimes: dict[str, int] = {}
        with os.scandir(folder) as it:
            for entry in it:
                est = entry.stat(follow_symlinks=False)
                mtimes[entry.name] = est.st_mtime_ns
                changed = max(changed, est.st_mtime_ns, est.st_ctime_ns)
    except FileNotFoundError:
        return None
    return _Listing(mtimes, st.st_mtime_ns, changed, (st.st_dev, st.st_ino))


def remove_aborted_writes(
    root: Root, folder: Path, names: frozenset[str], *, now_ns: int, stable_s: float
) -> set[str]:
    """Remove the temp files our own atomic writes left in `folder` (a real folder) when
    their writer was killed; returns the names removed (or found gone meanwhile).

    One is a leftover when its writer's pid is gone, or when it has not changed for
    `stable_s` and the incident's lock is free (the pid was reused: every writer of ours
    holds that lock). Anything else hidden (rsync, editors, a live writer) is kept.
    """
    removed: set[str] = set()
    stale: list[str] = []
    for name in names:
        pid = fsutil.atomic_temp_pid(name)
        if pid is None:
            continue
        try:
            st = os.stat(folder / name, follow_symlinks=False)
        except FileNotFoundError:
            removed.add(name)  # renamed into place or removed by its writer
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            continue  # never one of ours: left for the checks that reject it
        if not fsutil.pid_alive(pid):
            _unlink(folder / name, removed)
        elif now_ns - st.st_mtime_ns >= stable_s * 1e9:
            stale.append(name)
    if stale:
        try:
            with store.incident_lock(root, folder.name, timeout_s=0):
                for name in stale:
                    _unlink(folder / name, removed)
        except (IncidentsError, OSError):
            pass  # a writer holds the lock (or the id is not one): look again later
    return removed


def _unlink(path: Path, removed: set[str]) -> None:
    path.unlink(missing_ok=True)
    removed.add(path.name)


def _document_problem(folder: Path, names: frozenset[str]) -> tuple[str | None, bool]:
    """What keeps the bundle's documents from being read, and whether it is final: a
    whole JSON document of another type than an object is no copy in progress (a part
    of an object never parses as a list or a number), so it is set aside at once."""
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        return f"missing {', '.join(missing)}", False
    try:
        doc = fsutil.read_json(folder / artifacts.INCIDENT)
    except (IncidentsError, OSError, ValueError) as exc:
        return f"incident.json does not parse: {exc}", False
    if not isinstance(doc, dict):
        return f"incident.json is a JSON {type(doc).__name__}, not an object", True
    if doc.get("incident_id") != folder.name:
        return "incident.json names another incident than its folder", False
    return None, False


# Errors of this process, not of the folder: look again later rather than set it aside.
_OURS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EINTR, errno.EAGAIN})


def examine(
    folder: Path,
    *,
    now_ns: int,
    whole_ns: int | None,
    stable_s: float,
    grace_s: float,
    root: Root | None = None,
    taken: tuple[int, int] | None = None,
) -> Examined:
    """Ready, wait, reject or gone, from one listing of the folder. Its only writes: with
    `root`, the leftovers of our own aborted atomic writes are removed first.

    `taken`: the identity of the folder when this watcher last found it ready, if it did.
    A folder whose examination fails (ENAMETOOLONG, ELOOP, EACCES...) is set aside: a
    hostile tree never stops the watcher."""
    try:
        return _examine(folder, now_ns, whole_ns, stable_s, grace_s, root, taken)
    except OSError as exc:
        if exc.errno in _OURS:
            return Examined(Verdict.WAIT, f"cannot be examined now: {exc.strerror}")
        return Examined(Verdict.REJECT, f"cannot be examined: {exc.strerror}")


def _examine(
    folder: Path,
    now_ns: int,
    whole_ns: int | None,
    stable_s: float,
    grace_s: float,
    root: Root | None = None,
    taken: tuple[int, int] | None = None,
) -> Examined:
    if folder.name.startswith("."):
        return Examined(Verdict.WAIT, "hidden")
    listing = _listing(folder)
    if listing is None:
        return Examined(Verdict.GONE)
    hidden = frozenset(n for n in listing.names if n.startswith("."))
    if root is not None and hidden and os.path.isdir(folder) and not os.path.islink(folder):
        gone = remove_aborted_writes(root, folder, hidden, now_ns=now_ns, stable_s=stable_s)
        listing = listing.without(gone)  # the folder's mtime stays the one before the sweep
    if taken is not None and listing.identity == taken:
        return Examined(Verdict.READY, identity=taken)  # ours: complete when we took it
    if os.path.islink(folder):  # never a copy in progress: set aside at once
        return Examined(Verdict.REJECT, "a symbolic link, not a bundle folder")
    if not os.path.isdir(folder):
        problem: str | None = "not a folder"
    elif any(n.startswith(".") for n in listing.names):
        problem = "a copy is still in progress (hidden temp file)"
    elif broken := bundle_files.listing_problems(folder):
        # a link, FIFO, device, hard link or oversize file is no copy in progress
        return Examined(Verdict.REJECT, f"breaks the bundle-file rules: {'; '.join(broken)}")
    else:
        problem, final = _document_problem(folder, listing.names)
        if final:
            return Examined(Verdict.REJECT, f"breaks the bundle rules: {problem}")
    whole = whole_ns is not None and listing.newest_ns <= whole_ns
    quiet = now_ns - listing.newest_ns >= stable_s * 1e9
    if problem is None and (whole or quiet):  # whole: nothing changed since it arrived
        return Examined(Verdict.READY, identity=listing.identity)
    if problem is not None and quiet and now_ns - listing.changed_ns >= grace_s * 1e9:
        why = f"incomplete bundle: {problem}, unchanged for {grace_s:g}s"
        return Examined(Verdict.REJECT, why)
    return Examined(Verdict.WAIT, problem or "still changing", settled=quiet)
