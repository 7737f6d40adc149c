"""Detection's guard on the reports root, for a fixer run without bubblewrap.

Under bubblewrap the reports root is read-only to the fixer. Without it the fixer runs as
the uid that owns the root and could write there: plant the recheck's report in its runs
folder (the check reuses a report it finds, as after a crash), overwrite the tamper
baseline, forge `state.json` with the seal key, or change the plan. `RootWatch` takes
the incident's own folders (runs, bundle, plan) and single files (the seal key) before
the run — names, types, and each file's sha256 with its bytes when small — and compares
after: every file or folder that appeared, changed or went is a violation that fails the
attempt (the runner makes it an infrastructure failure naming `tamper`). What appeared or
changed is moved aside into `.state/stray/<id>/` (never deleted: it is the evidence, and
the recheck must not find it); what changed or went is put back from the bytes held.

What others write there during the run is not the fixer's: capture folds a new
occurrence into an open incident (`incident.json`'s occurrence count and times, the
`log_tail.txt`), and atomic writes leave their temp files for an instant. Those are
allowed; every other key of `incident.json` is compared. A file too large to hold is
compared by digest and, when changed, reported but cannot be put back.

Limits (detection, not containment): the fixer can read the seal key and write other
incidents' folders; only this incident's folders and the key itself are compared. Doctor
warns when fixers run this way and the root is writable by them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import stat
from collections.abc import Iterable

from incidents import artifacts, fsutil
from incidents.errors import IncidentsError
from incidents.fixers import guard

MAX_ENTRIES = 20_000  # a runs folder larger than this is compared on its first entries
MAX_RECORD_BYTES = 16 << 20  # file bytes kept in the record for a killed run's successor
# what capture may change in an open incident's bundle while its fixer runs
CAPTURE_WRITES = frozenset({"log_tail.txt"})
CAPTURE_KEYS = frozenset({"occurrences", "last_seen", "updated_at"})
INCIDENT_DOC = "incident.json"


def _dump(tops: list[str], held: dict[str, guard.Held]) -> bytes:
    kept, entries = 0, {}
    for path, h in held.items():
        data = None
        if h.data is not None and kept + len(h.data) <= MAX_RECORD_BYTES:
            kept += len(h.data)
            data = base64.b64encode(h.data).decode("ascii")
        entries[path] = [h.kind, h.digest, data, h.mode]
    return json.dumps({"tops": tops, "entries": entries}).encode("utf-8")


def _load(record: str, tops: list[str]) -> dict[str, guard.Held] | None:
    """The holding a killed run left in `record`, when it is of the same paths."""
    try:
        doc = json.loads(fsutil.read_regular_file(record, MAX_RECORD_BYTES * 2))
        if doc.get("tops") != tops:
            return None
        return {
            str(path): guard.Held(
                str(kind), str(digest), base64.b64decode(data) if data else None, int(mode)
            )
            for path, (kind, digest, data, mode) in doc["entries"].items()
        }
    except (OSError, ValueError, TypeError, AttributeError, KeyError, IncidentsError):
        return None


def _scan(top: str, out: dict[str, guard.Held]) -> None:
    """`top` and, when it is a real folder, everything under it (links not followed)."""
    stack = [top]
    while stack and len(out) < MAX_ENTRIES:
        path = stack.pop()
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            out[path] = guard.Held("absent")
            continue
        except OSError as exc:
            out[path] = guard.Held("other", f"unreadable: {exc.strerror}")
            continue
        if not stat.S_ISDIR(st.st_mode):
            out[path] = guard.hold(path)
            continue
        out[path] = guard.Held("dir")
        try:
            names = sorted(os.listdir(path))
        except OSError:
            continue
        stack.extend(os.path.join(path, n) for n in names if fsutil.atomic_temp_pid(n) is None)


def _incident_doc_same(old: guard.Held, new: guard.Held) -> bool:
    """`incident.json` changed only where capture's fold of an occurrence changes it."""
    if old.data is None or new.data is None:
        return False
    try:
        before, after = json.loads(old.data), json.loads(new.data)
    except ValueError:
        return False
    if not isinstance(before, dict) or not isinstance(after, dict):
        return False
    return _without_capture_keys(before) == _without_capture_keys(after)


def _without_capture_keys(doc: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in doc.items() if k not in CAPTURE_KEYS}


class RootWatch:
    """`paths` (folders or files of the reports root) held now; `check` reports, moves
    aside and puts back what changed since.

    `record`: a file where the holding is kept while the fixer runs (next to its pidfile).
    If this process is killed meanwhile, the next run for the incident finds it and
    compares against it instead of against what it finds: what the killed run's fixer
    planted before the kill is still caught (the redo's own fixer could plant the same
    bytes again, and the recheck would reuse them). The prompt files are taken as they are
    now: the redo writes its prompt again before it runs."""

    def __init__(self, paths: Iterable[str], aside: str | None, record: str | None = None) -> None:
        self.aside = aside
        self.record = record
        self.tops = list(dict.fromkeys(os.path.abspath(p) for p in paths))
        self.before: dict[str, guard.Held] = {}
        for path in self.tops:
            _scan(path, self.before)
        if record is None or not self.tops:
            self.record = None
            return
        earlier = _load(record, self.tops)
        if earlier is not None:  # a run killed before its check: judge from its start
            for path, held in self.before.items():
                if os.path.basename(path).startswith(artifacts.PROMPT_PREFIX):
                    earlier[path] = held
            self.before = earlier
        with contextlib.suppress(OSError):
            fsutil.atomic_write_bytes(record, _dump(self.tops, self.before), durable=False)

    def forget(self) -> None:
        """The run is judged: drop the record."""
        if self.record is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.record)

    def _allowed(self, path: str, old: guard.Held, new: guard.Held) -> bool:
        name = os.path.basename(path)
        if name in CAPTURE_WRITES:
            return True
        return name == INCIDENT_DOC and _incident_doc_same(old, new)

    def check(self) -> tuple[list[str], list[str]]:
        """(changed paths, those that could not be moved aside or put back)."""
        after: dict[str, guard.Held] = {}
        for path in self.tops:
            _scan(path, after)
        absent = guard.Held("absent")
        changed: list[str] = []
        for path in sorted(set(self.before) | set(after)):
            old, new = self.before.get(path, absent), after.get(path, absent)
            if (old.kind, old.digest) == (new.kind, new.digest) or (old.kind == new.kind == "dir"):
                continue
            if not self._allowed(path, old, new):
                changed.append(path)
        failed: list[str] = []
        moved: list[str] = []
        for path in changed:
            if any(path.startswith(m + "/") for m in moved):
                continue  # inside a new folder already moved aside
            new = after.get(path, absent)
            if new.kind != "absent":
                if self.aside is None or guard.move_aside(path, self.aside) is None:
                    failed.append(path)
                    continue
                moved.append(path)
            old = self.before.get(path, absent)
            if old.kind not in ("absent", "dir") and not guard.put_back(path, old):
                failed.append(path)
            elif old.kind == "dir":
                os.makedirs(path, mode=0o700, exist_ok=True)
        return changed, failed
