"""Steps that succeed again: what clears a transient incident that has nothing to re-run.

A transient failure (a network blip, a rate limit) clears by itself. With a reproduction
the step service re-runs it with backoff; without one the incident waits for its step:

- a passing `incidents run -- CMD` records the success of its step and command, and
  `incidents capture --ok --step S [--message M]` (a script's success path) the success
  of its step (of the signature `M` gives, or of any failure of the step), each in
  `.state/step_ok/<step>/<what>` (`note_success`);
- the step service reads the successes that concern an open transient incident
  (`latest`, keys from `keys_for`) and closes it as recovered when one came after its
  last failure (`incidents.fsm`); a later recurrence moves its last failure on again;
- an incident waiting for its step is listed in `.state/waiting/<step>/<id>` by the step
  service (`wait_for_step`); a success marks each listed incident dirty, which the
  watcher's observer sees, so it is looked at now rather than at its next due time.

These are hints, written without fsync: one lost to a power cut costs a wait until
`[policy] transient_quiet`, never a wrong close. Standard library only (capture's path).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

from incidents import fsutil
from incidents.errors import IncidentsError
from incidents.layout import STATE, Root

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "capture_ok",
    "done_waiting",
    "keys_for",
    "latest",
    "note_success",
    "run_passed",
    "wait_for_step",
]

STEP_OK = "step_ok"
WAITING = "waiting"
ANY = "any"  # `capture --ok` without a message: every failure of the step


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def keys_for(signature: str | None, commands: Iterable[str]) -> list[str]:
    """The successes that clear an incident: any of its step's, its signature's, and its
    commands' (the command `run` failed with, the reproduction)."""
    keys = [ANY]
    if signature:
        keys.append(f"sig-{_key(signature)}")
    keys.extend(f"cmd-{_key(c)}" for c in dict.fromkeys(commands))
    return keys


def note_success(
    root: Root,
    step: str,
    by: str,
    *,
    signature: str | None = None,
    command: str | None = None,
) -> list[str]:
    """Record that `step` succeeded now (for `command`, or `signature`, or any failure of
    it) and wake the incidents waiting for it; returns the ids woken."""
    from datetime import UTC, datetime

    if command is not None:
        what = f"cmd-{_key(command)}"
    elif signature is not None:
        what = f"sig-{_key(signature)}"
    else:
        what = ANY
    folder = root.sub(STATE, STEP_OK, _key(step))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    doc = {"at": datetime.now(UTC).isoformat(), "by": by, "step": step}
    fsutil.atomic_write_bytes(os.path.join(folder, what), fsutil.dump_json(doc), durable=False)
    try:
        names = os.listdir(root.sub(STATE, WAITING, _key(step)))
    except (FileNotFoundError, NotADirectoryError):
        return []
    woken = [n for n in names if not n.startswith(".")]
    for incident_id in woken:
        root.mark_dirty(incident_id)
    return woken


def latest(root: Root, step: str, keys: Iterable[str]) -> tuple[str, str] | None:
    """(when, by whom) of the latest recorded success of `step` under any of `keys`."""
    best: tuple[str, str] | None = None
    folder = root.sub(STATE, STEP_OK, _key(step))
    for key in keys:
        try:
            doc = json.loads(fsutil.read_regular_file(os.path.join(folder, key), 4096))
        except (OSError, ValueError, IncidentsError):
            continue  # none, or not ours to believe: a hint only
        at, by = (doc.get("at"), doc.get("by")) if isinstance(doc, dict) else (None, None)
        if isinstance(at, str) and isinstance(by, str) and (best is None or at > best[0]):
            best = (at, by)
    return best


def wait_for_step(root: Root, step: str, incident_id: str) -> None:
    """List `incident_id` as waiting for a success of `step` (once)."""
    folder = root.sub(STATE, WAITING, _key(step))
    path = os.path.join(folder, incident_id)
    if os.path.exists(path):
        return
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)


def done_waiting(root: Root, step: str, incident_id: str) -> None:
    """`incident_id` no longer waits (it closed)."""
    import contextlib  # the step service's call, off capture's path

    with contextlib.suppress(FileNotFoundError):
        os.unlink(root.sub(STATE, WAITING, _key(step), incident_id))


def run_passed(root: Root, step: str, command: str) -> None:
    """`incidents run -- CMD` passed: its step's open transient incidents of that command
    may close. Best effort, and only on a root that exists (a pass never makes one)."""
    if not os.path.isdir(root.sub(STATE)):
        return
    try:
        note_success(root, step, "incidents run passed", command=command)
    except (OSError, IncidentsError) as exc:  # a hint: it still recovers when quiet
        sys.stderr.write(f"incidents: the success of step {step!r} was not recorded: {exc}\n")


def capture_ok(
    root: Root, step: str, message: str | None, failure_class: str | None, table: dict[str, Any]
) -> list[str]:
    """`incidents capture --ok`: the step succeeded; with a message, only incidents of the
    signature it gives (classified and normalised as capture does) are concerned."""
    signature = None
    if message:
        from incidents.classify import classify
        from incidents.fingerprint import signature_fields
        from incidents.redact import redact

        text = redact(message.strip())[: table["max_message_chars"]]
        verdict = classify(text, "", None, False)
        signature, _ = signature_fields(failure_class or verdict.failure_class_value, step, text)
    root.ensure_fast()
    return note_success(root, step, "capture --ok", signature=signature)
