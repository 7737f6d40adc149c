"""The budget units an in-process loop used, kept in the reports root (seed 003's tracker).

A fixer tier's budget use is derived from the incidents' committed contexts (the mirror's
`budget_used`). A loop that retries in its own process (`incidents.tracker`) has no
incident per retry, so its units are lines here: `.state/budget/<signature key>.jsonl`,
one file per group, appended under the group's budget lock (`lock`), never rewritten.

    {"kind": "attempt", "at": "2026-...+00:00", "signature": "code | agent | ..."}
    {"kind": "reset", "at": "...", "signature": "...", "guidance": "...", "by": "tracker"}
    {"kind": "escalation", "at": "...", "signature": "...", "incident": "incident_..."}

An `escalation` line names the incident the tracker escalated the group into, so that
repeats fold into it while it is open (`Ledger.escalation`) instead of each opening one.

A reset gives the group its whole budget again, for the fixers too, like a human's
decision on an escalation (`resolve-escalation`), whose reset counts here as well: both
are read by `policy.budget_used`, the one place that counts a signature's units.
The file is truth, not cache: `reindex` does not rebuild it and deleting the mirror
loses none of it. A line that does not parse (a write cut by a power failure) is skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from incidents import clock, fsutil, store
from incidents.layout import Root
from incidents.locks import flocked
from incidents.signature import signature_key

__all__ = ["Ledger", "append", "lock", "path", "read"]


def path(root: Root, group: str) -> Path:
    return root.state / "budget" / f"{signature_key(group)}.jsonl"


@contextlib.contextmanager
def lock(root: Root, group: str) -> Iterator[None]:
    """The group's budget lock: held while a unit is counted and taken, so two processes
    never both take the last one."""
    with flocked(store.lock_path(root, f"budget-{signature_key(group)}")):
        yield


@dataclass(frozen=True)
class Ledger:
    attempts: tuple[str, ...]  # when each unit was taken, in file order
    reset_at: str | None  # the last reset
    guidance: str | None  # what the last reset said
    escalation: tuple[str, str] | None = None  # (when, incident id) of the latest escalation

    def attempts_since(self, since: str | None) -> int:
        return sum(1 for at in self.attempts if since is None or at > since)


def read(root: Root, group: str) -> Ledger:
    try:
        data = path(root, group).read_bytes()
    except FileNotFoundError:
        return Ledger((), None, None)
    attempts: list[str] = []
    reset_at: str | None = None
    guidance: str | None = None
    escalation: tuple[str, str] | None = None
    for line in data.splitlines():
        try:
            entry = json.loads(line)
            kind, at = entry["kind"], entry["at"]
        except (ValueError, TypeError, KeyError):
            continue
        if not isinstance(at, str):
            continue
        if kind == "attempt":
            attempts.append(at)
        elif kind == "reset" and (reset_at is None or at > reset_at):
            reset_at, guidance = at, entry.get("guidance")
        elif (
            kind == "escalation"
            and isinstance(entry.get("incident"), str)
            and (escalation is None or at > escalation[0])
        ):
            escalation = (at, entry["incident"])
    guidance = guidance if isinstance(guidance, str) else None
    return Ledger(tuple(attempts), reset_at, guidance, escalation)


def append(root: Root, group: str, kind: str, **fields: str) -> str:
    """Append one entry (under `lock`, by the caller), durable before it returns; its time."""
    at = clock.iso_precise()
    target = path(root, group)
    fsutil.ensure_dir(target.parent)
    created = not target.exists()
    line = json.dumps({"kind": kind, "at": at, "signature": group, **fields}) + "\n"
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))  # one write of a short line: whole or not at all
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsutil.fsync_dir(target.parent)
    return at
