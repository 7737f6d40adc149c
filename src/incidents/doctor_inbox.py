"""`incidents doctor`, the inbox and staging: what sits there that nothing will move.

Bundles unchanged for longer than the grace that are neither worked nor waiting; entries
that are no bundle (a file, a link, a FIFO: the watcher sets them aside after the grace);
hidden folders (never worked, never set aside); and the leftovers of killed captures in
`.staging/` with the space they hold. Nothing here follows a symbolic link.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from incidents.config import Config
from incidents.errors import IncidentsError
from incidents.layout import Root


@dataclass(frozen=True)
class Finding:
    """One line of the report: a check, its level, what was found and how to fix it."""

    check: str
    level: str  # ok | warn | fail
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}[self.level]
        text = f"{mark} {self.check}: {self.detail}"
        return f"{text}\n     fix: {self.fix}" if self.fix and self.level != "ok" else text

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "level": self.level, "detail": self.detail, "fix": self.fix}


def changed_within(folder: Path, now: float, grace_s: float) -> bool:
    """Whether anything in `folder` changed within the last `grace_s` seconds."""
    try:
        return now - _last_change(folder) < grace_s
    except OSError:
        return False


def _last_change(folder: Path) -> float:
    """When anything in `folder` last changed (mtime or ctime: a copy may keep old mtimes).
    The folder is opened without following a link (OSError if it is one, or no folder)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        newest = max(st.st_mtime, st.st_ctime)
        with os.scandir(fd) as it:
            for entry in it:
                est = entry.stat(follow_symlinks=False)
                newest = max(newest, est.st_mtime, est.st_ctime)
    finally:
        os.close(fd)
    return newest


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISREG, "a regular file"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a device")


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _why_stuck(root: Root, folder: Path, now: float) -> str | None:
    """Why an inbox bundle is neither being worked nor waiting, or None when it is one of them."""
    from datetime import UTC, datetime

    from incidents import leases
    from incidents.fsm import decide_next_action, is_actionable
    from incidents.models.pipeline import Action
    from incidents.step.documents import load_context

    lease = leases.read(root, folder.name)
    if lease is not None and not lease.expired(now) and leases.holder_alive(lease):
        return None  # being worked (or claimed by an agent)
    try:
        ctx = load_context(root, folder)
    except (IncidentsError, OSError) as exc:
        return f"cannot be loaded: {exc}"
    if ctx is None:
        return "never picked up"
    na = decide_next_action(ctx)
    if na.action is Action.WAIT_INPUT:
        return None  # waiting for an agent or a person
    if not is_actionable(na, datetime.fromtimestamp(now, UTC)):
        return None if na.not_before is not None else f"{ctx.current_state}: {na.reason}"
    return f"{ctx.current_state}, next {na.action.value}, not taken"


def check_stuck(root: Root, cfg: Config) -> list[Finding]:
    """Inbox bundles unchanged for longer than `[watch] staging_grace_s` that are neither
    being worked (a live lease) nor waiting (a hand-off, a backoff): nothing will move them
    unless a watcher runs, and one that cannot be loaded is set aside after three passes.
    Also what is no bundle at all: a file, link or FIFO (the watcher sets it aside after the
    grace), and a hidden folder (`.name`: never worked, never set aside)."""
    import time

    grace = cfg.watch.staging_grace_s
    now = time.time()
    try:
        entries = sorted(os.listdir(root.inbox))
    except FileNotFoundError:
        return []
    stuck: list[str] = []
    others: list[str] = []
    hidden: list[str] = []
    for name in entries:
        folder = root.inbox / name
        try:
            st = folder.lstat()
            if not stat.S_ISDIR(st.st_mode):
                changed = max(st.st_mtime, st.st_ctime)
                others.append(f"{name!r} ({_kind(st.st_mode)}, {_age(now - changed)} old)")
                continue
            age = now - _last_change(folder)
        except FileNotFoundError:
            continue  # moved on meanwhile
        except OSError as exc:
            stuck.append(f"{name!r} ({exc})")
            continue
        if age < grace:
            continue
        if name.startswith("."):
            hidden.append(f"{name!r} (unchanged for {_age(age)})")
            continue
        why = _why_unworked(root, folder, now)
        if why is not None:
            stuck.append(f"{name} ({why})")
    out: list[Finding] = []
    if stuck:
        out.append(Finding("inbox", "warn", f"{len(stuck)} bundle(s) unchanged for over "
                           f"{grace:g}s, neither worked nor waiting: {'; '.join(stuck[:10])}",
                           f"incidents watch --once --root {root.path} works them (one that "
                           "cannot be loaded is set aside after 3 passes); incidents step ID "
                           "shows why one fails"))  # fmt: skip
    if others:
        out.append(Finding("inbox entries", "warn", f"{len(others)} entr(ies) in the inbox "
                           f"that are no bundle folder: {'; '.join(others[:10])}",
                           f"incidents watch --root {root.path} sets them aside in "
                           f"error_rejected/ once unchanged for {grace:g}s; or remove them"))  # fmt: skip
    if hidden:
        out.append(Finding("inbox hidden", "warn", f"{len(hidden)} hidden folder(s) in the "
                           f"inbox, never worked nor set aside: {'; '.join(hidden[:10])}",
                           "rename a bundle to its incident id to have it worked, or remove "
                           f"it from {root.inbox}"))  # fmt: skip
    return out or [Finding("inbox", "ok", "no bundle left unworked")]


def _why_unworked(root: Root, folder: Path, now: float) -> str | None:
    from incidents.layout import validate_id

    try:
        validate_id(folder.name)
    except IncidentsError as exc:
        return str(exc)
    return _why_stuck(root, folder, now)


def _size(path: Path) -> int:
    """Bytes on disk under `path`, never following a link: not at the top (a link in
    `.staging/` to `/` is one small entry) and not below (os.walk does not follow them)."""
    try:
        st = path.lstat()
    except OSError:
        return 0
    if not stat.S_ISDIR(st.st_mode):
        return st.st_blocks * 512
    total = st.st_blocks * 512
    for base, dirs, files in os.walk(path, followlinks=False):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_blocks * 512
    return total


def check_staging(root: Root, cfg: Config) -> list[Finding]:
    """Leftovers in `.staging/`: bundles of captures killed or failed before their rename."""
    try:
        names = sorted(os.listdir(root.staging))
    except FileNotFoundError:
        return []
    if not names:
        return [Finding("staging", "ok", "no staging leftover")]
    size = sum(_size(root.staging / n) for n in names)
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return [Finding("staging", "warn", f"{len(names)} leftover(s) of killed or failed captures "
                    f"in {root.staging}, {_human(size)} on disk: {shown}",
                    f"incidents watch --once --root {root.path} moves those older than "
                    f"[watch] staging_grace_s ({cfg.watch.staging_grace_s:g}s) to error_rejected/; "
                    f"or delete them: rm -rf -- {root.staging}/*")]  # fmt: skip


def _human(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}"
