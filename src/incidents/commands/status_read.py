"""What both forms of `status` read: the mirror, caught up with the folders (a bundle that
does not parse set aside after its grace), whether the root can be written, and how a
closed incident closed, as shown."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

from incidents import mirror, output
from incidents.layout import Root


def open_mirror(root: Root, reject_grace_s: float | None = None) -> Any:
    """The mirror, rebuilt from the folders when it does not exist, caught up with captures.

    An inbox bundle that does not parse or validate is reported with its path and reason;
    once it has been unchanged for `reject_grace_s` (a hand copy may still be arriving) it
    is moved to `error_rejected/<name>/` with a `reason.txt`. Nothing is deleted."""
    conn = mirror.connect(root.db_path)
    result = mirror.catch_up(conn, root)  # rebuilds first a database created empty
    for location, reason in result.unreadable:
        bucket, _, name = location.partition("/")
        folder = root.bucket(bucket) / name
        if (
            bucket == "inbox"
            and reject_grace_s is not None
            and _quiet_for(folder) >= reject_grace_s
        ):
            from incidents import store

            target = store.reject(root, folder, reason)
            output.err(f"incidents: {folder}: {reason}; moved to {target}")
        else:
            output.err(f"incidents: {folder}: {reason}")
    return conn


def _quiet_for(folder: Path) -> float:
    """Seconds since anything in `folder` last changed or arrived: the newest mtime or
    ctime of the folder and its entries, links not followed, as the watcher reads it
    (`watch/intake.py`). A copy that keeps the source's mtimes (`cp -a`, `tar x`, `mv`)
    has only its ctimes to say it has just arrived."""
    try:
        st = folder.lstat()
        newest = max(st.st_mtime, st.st_ctime)
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(folder) as it:
                for entry in it:
                    est = entry.stat(follow_symlinks=False)
                    newest = max(newest, est.st_mtime, est.st_ctime)
    except OSError:
        return 0.0
    return time.time() - newest


OUTCOME_SHOWN = {
    "fixed": "fixed",
    "not_reproduced": "not reproduced (flaky)",
    "changed_before_check": "changed before check",
    "escalated": "escalated",
    "resolved_by_human": "resolved by a person",
    "recovered": "recovered (cleared, no fix claimed)",
}


def closed_outcome(bucket: str, outcome: str | None) -> str | None:
    """How a closed incident closed, as shown: the machine's outcome, except that an
    escalation a person then resolved (`resolve-escalation`; state.json keeps the
    machine's "escalated") is `resolved_by_human`, never "escalated" in `resolved`."""
    if bucket == "resolved" and outcome == "escalated":
        return "resolved_by_human"
    return outcome


def unwritable(root: Root) -> str | None:
    """Why nothing can be written in the root (a read-only mount, no permission), or None."""
    if os.access(root.state, os.W_OK):
        return None
    try:
        read_only = os.statvfs(root.state).f_flag & os.ST_RDONLY
    except OSError:
        read_only = 0
    return f"{root.path} is {'on a read-only filesystem' if read_only else 'not writable'}"
