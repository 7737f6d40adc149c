"""Detection, for a fixer run without bubblewrap (and cheap insurance with it).

- `Held`/`FileGuard`: the files outside the workdir a later verdict depends on (every check
  config a tool may read from the workdir and the targets' folders up to `/`, the same list
  `checks.tamper_files.config_paths` compares, and the incidents config in use) are read
  before the run, with their bytes; after it, each one that was created, changed, deleted
  or replaced by a link or something else is a violation and is put back (a file that did
  not exist is removed) — after the version found there is moved into `aside` (the root's
  `.state/stray/<id>/`): it may be a person's edit made while the fixer ran, and is never
  lost. Under bubblewrap only the configs under the tier's `writable` paths are held (it
  cannot write the others, so a change there is someone else's).
- `Listings`: the entries of the folders a stray write lands in most (each folder from the
  workdir's parent up to `/`, and `/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`; one level
  each, not their trees) before and after. Beside the workdir (its ancestors) a new
  regular file of ours is reported and moved aside into `aside`, never deleted (another
  process may have made it in the same instant); a new link, FIFO or socket, or a changed
  file, is reported and left. In the shared temporary folders a new entry is only
  reported: other programs' sockets and temp files appear there all the time, and the
  fixer has a private TMPDIR of its own (removed after). This is detection, not
  containment: a write deeper in some other tree or a new folder goes unseen.
- `Reaper`: for the run this process is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`,
  Linux): whatever the fixer leaves running (a background child of its process group, a
  `setsid` daemon, a double fork) is re-parented to us instead of init, and `sweep` kills
  every such descendant before the recheck, so nothing can touch the workdir after it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from incidents import proc
from incidents.fixers import snapshot

MAX_HELD_BYTES = 4 << 20  # a config larger than this is compared by digest, not put back
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
SWEEP_ROUNDS = 50
RECORD_EVERY_S = 0.25  # how often a detection-mode run lists the fixer's descendants


Held = snapshot.Entry  # one shape for a path as it was, inside the workdir or out
put_back = snapshot.put_back  # and one way to make it so again
move_aside = snapshot.move_aside  # and one way to keep what was found instead


def hold(path: str) -> Held:
    """`path` as it is now (a link is not followed), with a file's bytes up to
    `MAX_HELD_BYTES`."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return snapshot.ABSENT
    except OSError as exc:
        return Held("other", f"unreadable: {exc.strerror}")
    if stat.S_ISLNK(st.st_mode):
        return Held("link", os.readlink(path))
    if not stat.S_ISREG(st.st_mode):
        return Held("other", f"mode {st.st_mode:o}")
    read = snapshot.read_file(path, MAX_HELD_BYTES)
    if read is None:
        return Held("other", "unreadable")
    digest, data, mode = read
    return Held("file", digest, data, mode)


class FileGuard:
    """`paths` held now; `check` reports and puts back what changed since. The version
    found is first moved into `aside` (never unlinked or overwritten without a copy kept:
    it may be a person's edit made while the fixer ran); with no `aside`, or where it
    cannot be moved, a changed path is reported and left as it is."""

    def __init__(self, paths: Iterable[str], aside: str | None = None) -> None:
        self.aside = aside
        self.before = {p: hold(p) for p in dict.fromkeys(paths)}

    def check(self) -> tuple[list[str], list[str]]:
        """(changed paths, those that could not be put back)."""
        changed: list[str] = []
        failed: list[str] = []
        for path, old in self.before.items():
            new = hold(path)
            if (new.kind, new.digest) == (old.kind, old.digest):
                continue
            changed.append(path)
            kept = new.kind == "absent" or (
                self.aside is not None and move_aside(path, self.aside) is not None
            )
            if not kept or not put_back(path, old):
                failed.append(path)
        return changed, failed


def config_files(workdir: Path, targets: list[str], extra: Iterable[str]) -> list[str]:
    """The check configs a tool may read for these targets outside the workdir (inside it
    the workdir snapshot already reverts them), and `extra` (the incidents config)."""
    from incidents.checks.tamper_files import config_paths

    inside = os.path.realpath(workdir).rstrip("/") + "/"
    out = [
        str(p) for p in config_paths(workdir, targets) if not os.path.realpath(p).startswith(inside)
    ]
    return [*out, *(os.path.abspath(e) for e in extra)]


TEMP_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")


def listed_folders(workdir: Path) -> dict[str, bool]:
    """The workdir's ancestors (not the workdir: the snapshot covers it) and the temporary
    folders (/tmp, /var/tmp, /dev/shm, $TMPDIR), each with whether a change to a file
    already there is reported: not in a temporary folder, where other programs' files
    change all the time."""
    temps = {os.path.realpath(t) for t in (*TEMP_FOLDERS, os.environ.get("TMPDIR", "")) if t}
    folders: dict[str, bool] = {}
    folder = os.path.dirname(os.path.realpath(workdir))
    while folder not in folders:
        folders[folder] = folder not in temps
        folder = os.path.dirname(folder)
    for tmp in sorted(temps):
        if os.path.isdir(tmp):
            folders.setdefault(tmp, False)
    for site in _site_folders():  # a .pth or sitecustomize.py there runs in every check
        folders.setdefault(site, True)
    return folders


def _site_folders() -> list[str]:
    """The site-packages folders of the interpreter the checks run with, and the user's."""
    import site

    from incidents.checks.engine import site_packages

    found = {*site_packages(), site.getusersitepackages()}
    return sorted(os.path.realpath(p) for p in found if os.path.isdir(p))


Listing = dict[str, tuple[int, int, int, int]]  # name -> (mode, ino, size, mtime_ns)


def _list(folder: str) -> Listing:
    out: Listing = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    out[entry.name] = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        pass
    return out


class Listings:
    """`folders` listed now; `check` reports what appeared or changed in them since."""

    def __init__(
        self, folders: dict[str, bool], skip: Iterable[str] = (), aside: str | None = None
    ) -> None:
        self.aside = aside
        self.skip = {os.path.realpath(s) for s in skip}
        self.ancestor = folders  # False: a shared temporary folder
        self.before = {f: _list(f) for f in folders}

    def check(self) -> tuple[list[str], list[str]]:
        """(new or changed paths, those beside the workdir left in place)."""
        found: list[str] = []
        left: list[str] = []
        me = os.getuid()
        for folder, old in self.before.items():
            for name, now in _list(folder).items():
                path = os.path.join(folder, name)
                if path in self.skip or old.get(name) == now:
                    continue
                if stat.S_ISDIR(now[0]):
                    continue  # folders come and go with every tool run: too noisy to judge
                if name in old and not self.ancestor[folder]:
                    continue  # other programs' temporary files change all the time
                found.append(path)
                # Only a new regular file of ours beside the workdir is moved aside: in the
                # shared temporary folders (the fixer has its own TMPDIR) a new file is as
                # likely another program's (a socket, a lock), and a changed one's old
                # bytes are not kept.
                movable = (
                    name not in old and self.ancestor[folder] and self.aside is not None
                    and stat.S_ISREG(now[0]) and _owner(path) == me
                )  # fmt: skip
                if not self.ancestor[folder]:
                    continue  # reported only, on purpose: not "could not be put back"
                if not movable or self.aside is None or move_aside(path, self.aside) is None:
                    left.append(path)
        return found, left


def _owner(path: str) -> int | None:
    try:
        return os.lstat(path).st_uid
    except OSError:
        return None


# --- the subreaper ----------------------------------------------------------------------


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process we can see."""
    out: dict[int, tuple[int, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rpartition(")")[2].split()
            out[int(name)] = (int(fields[1]), fields[0])
        except (OSError, ValueError, IndexError):
            continue
    return out


def _descendants(table: dict[int, tuple[int, str]], root: int, skip: set[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    stack = [p for p in children.get(root, []) if p not in skip]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


class Reaper:
    """`with Reaper() as r:` run the fixer, then `r.sweep()`; leaving the block sweeps too and
    gives the subreaper flag back. `killed`: how many processes the sweeps killed.

    `record`: a pidfile of `proc.run`. If this process is killed while the fixer runs, the
    subreaper goes with it and what the fixer started in a session of its own is orphaned
    outside the recorded process group; so while the fixer runs, every `RECORD_EVERY_S`
    its descendants are listed beside the pidfile (`proc.record_descendants`), and the next
    worker's `proc.kill_recorded` kills them too. What was started and left alone within
    the last interval before the kill is not listed yet."""

    def __init__(self, record: str | os.PathLike[str] | None = None) -> None:
        self.me = os.getpid()
        self.killed = 0
        self.active = False
        self.earlier: set[int] = set()
        self.record = record
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def __enter__(self) -> Reaper:
        if os.path.isdir("/proc"):
            self.earlier = {p for p, (pp, _) in _parents().items() if pp == self.me}
            self.active = _prctl(PR_SET_CHILD_SUBREAPER, 1)
        if self.active and self.record is not None:
            self._watcher = threading.Thread(target=self._watch, name="fixer-descendants")
            self._watcher.daemon = True
            self._watcher.start()
        return self

    def _watch(self) -> None:
        assert self.record is not None
        listed: set[int] = set()
        while not self._stop.wait(RECORD_EVERY_S):
            found = set(_descendants(_parents(), self.me, self.earlier))
            if found - listed:
                listed |= found
                with contextlib.suppress(OSError):
                    proc.record_descendants(self.record, sorted(listed))

    def sweep(self) -> int:
        """Kill every descendant that was not our child before the run (and its own
        descendants), until none is left; reap those that were re-parented to us."""
        if not self.active:
            return 0
        for _ in range(SWEEP_ROUNDS):
            table = _parents()
            found = _descendants(table, self.me, self.earlier)
            if not found:
                break
            for pid in found:
                if table[pid][1] != "Z":
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                        self.killed += 1
            time.sleep(0.005)
            now = _parents()
            for pid in found:  # killed ones re-parented to us are our zombies now
                if now.get(pid, (0, ""))[0] == self.me:
                    with contextlib.suppress(ChildProcessError, OSError):
                        os.waitpid(pid, 0)
        return self.killed

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
        try:
            self.sweep()
        finally:
            if self.active:
                _prctl(PR_SET_CHILD_SUBREAPER, 0)
                self.active = False
            if self.record is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(proc.descendants_file(self.record))
