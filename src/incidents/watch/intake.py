"""Is an inbox folder ready to be worked on? (Bundles copied in by hand arrive file by file.)

A capture builds its bundle in staging and renames it into the inbox in one step; the
watcher knows such a bundle is whole from the rename event (IN_MOVED_TO) or from the
capture's `.state/dirty/<id>` hint, written after the rename, and takes it at once unless
something in it is newer than that moment. (File
times cannot tell: they have the kernel clock's coarse granularity.) Any other folder — one
copied by hand fills up file by file — is ready only when `incident.json` parses and names
the folder, `status.txt` is there, no hidden temp file (rsync, editors) is left, and nothing
in it has changed for `stable_s`. One that never becomes valid is set aside to
`error_rejected/` with a reason after `reject_grace_s`; nothing is deleted.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from incidents import fsutil
from incidents.errors import IncidentsError

REQUIRED = ("incident.json", "status.txt")


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


@dataclass(frozen=True)
class _Listing:
    names: frozenset[str]
    newest_ns: int  # newest mtime of an entry or of the folder itself


def _listing(folder: Path) -> _Listing | None:
    try:
        st = os.stat(folder, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            return _Listing(frozenset(), st.st_mtime_ns)
        names: set[str] = set()
        newest_entry = 0
        with os.scandir(folder) as it:
            for entry in it:
                names.add(entry.name)
                est = entry.stat(follow_symlinks=False)
                newest_entry = max(newest_entry, est.st_mtime_ns)
    except FileNotFoundError:
        return None
    return _Listing(frozenset(names), max(newest_entry, st.st_mtime_ns))


def _document_problem(folder: Path, names: frozenset[str]) -> str | None:
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        return f"missing {', '.join(missing)}"
    try:
        doc = fsutil.read_json_object(folder / "incident.json")
    except (IncidentsError, OSError, ValueError) as exc:
        return f"incident.json does not parse: {exc}"
    if doc.get("incident_id") != folder.name:
        return "incident.json names another incident than its folder"
    return None


def examine(
    folder: Path,
    *,
    now_ns: int,
    first_seen_ns: int,
    whole_ns: int | None,
    stable_s: float,
    grace_s: float,
) -> Examined:
    """Ready, wait, reject or gone, from one listing of the folder (no writes)."""
    if folder.name.startswith("."):
        return Examined(Verdict.WAIT, "hidden")
    listing = _listing(folder)
    if listing is None:
        return Examined(Verdict.GONE)
    if "state.json" in listing.names:
        return Examined(Verdict.READY)  # a watcher worked it before: it was complete then
    if not os.path.isdir(folder) or os.path.islink(folder):
        problem: str | None = "not a folder"
    elif any(n.startswith(".") for n in listing.names):
        problem = "a copy is still in progress (hidden temp file)"
    else:
        problem = _document_problem(folder, listing.names)
    whole = whole_ns is not None and listing.newest_ns <= whole_ns
    quiet = now_ns - listing.newest_ns >= stable_s * 1e9
    if problem is None and (whole or quiet):  # whole: nothing changed since it arrived
        return Examined(Verdict.READY)
    if problem is not None and quiet and now_ns - first_seen_ns >= grace_s * 1e9:
        return Examined(Verdict.REJECT, f"incomplete bundle: {problem} after {grace_s:g}s")
    return Examined(Verdict.WAIT, problem or "still changing", settled=quiet)
