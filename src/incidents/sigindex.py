"""Capture's signature index: `.state/signatures/<key>` names the open incident that a
capture of the signature with that key (`signature.signature_key`) folds into.

The index is a hint: a lost or stale entry costs a duplicate incident, never data, and
capture checks the incident it names (open, same signature) before it folds.

When the normalisation rules change (`signature.NORMALIZATION_VERSION`), an open
incident keeps the signature the older rules made (its budget and history are under it),
and its entry the key of that signature; a capture of the same failure now signs it
differently and would not find it. So the first capture under new rules re-keys the
index, once per root: each open incident signed by older rules, and indexed under its old
key, gets an entry under the key of its signature made again by the current rules
(`fingerprint.current_signature`); then the stamp `normalization-<version>` is written.
The capture's fold compares that same recomputed signature, so the repeat folds into the
older incident. Incidents opened afterwards carry signatures of the current rules.

Stdlib only (the capture path).
"""

from __future__ import annotations

import os

from incidents import fsutil, store
from incidents.errors import IncidentsError
from incidents.fingerprint import current_signature, normalization_of
from incidents.layout import INBOX, STATE, Root
from incidents.locks import flocked
from incidents.signature import NORMALIZATION_VERSION, signature_key

__all__ = ["entry_path", "read_entry", "rekey_once", "stamp_path", "write_entry"]


def entry_path(root: Root, key: str) -> str:  # paths as str: no pathlib on the capture path
    return root.sub(STATE, "signatures", key)


def stamp_path(root: Root) -> str:
    return root.sub(STATE, "signatures", f"normalization-{NORMALIZATION_VERSION}")


def read_entry(root: Root, key: str) -> str | None:
    """The incident id the entry names, or None (no entry, or not a readable one)."""
    try:
        incident_id = fsutil.read_regular_file(entry_path(root, key), 256).decode().strip()
    except (FileNotFoundError, IncidentsError, UnicodeDecodeError):
        return None
    return incident_id or None


def write_entry(root: Root, key: str, incident_id: str) -> None:
    # a hint (a lost one costs a duplicate incident, never data): no fsync
    fsutil.atomic_write_bytes(entry_path(root, key), f"{incident_id}\n".encode(), durable=False)


def rekey_once(root: Root) -> int:
    """Re-key the open incidents signed by older rules, unless this root's index was
    re-keyed for the current rules already (one `stat` then). Returns how many it re-keyed."""
    stamp = stamp_path(root)
    if os.path.exists(stamp):
        return 0
    with flocked(store.lock_path(root, "signatures-rekey")):
        if os.path.exists(stamp):  # another capture did it while this one waited
            return 0
        count = sum(_rekey(root, e.path) for e in _inbox_folders(root))
        fsutil.atomic_write_bytes(stamp, f"re-keyed {count}\n".encode(), durable=False)
    return count


def _inbox_folders(root: Root) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(root.sub(INBOX)) as entries:
            return [e for e in entries if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []


def _rekey(root: Root, folder: str) -> int:
    try:
        doc = store.read_incident(folder)
    except (IncidentsError, OSError, ValueError):
        return 0  # not ours to judge here: its pickup sets it aside
    incident_id = doc["incident_id"]
    if doc["status"] in ("resolved", "escalated") or normalization_of(doc) == NORMALIZATION_VERSION:
        return 0
    old_key = signature_key(doc["error_signature"])
    if read_entry(root, old_key) != incident_id:
        return 0  # captured with --no-dedupe, or a later incident took the entry
    new_key = signature_key(current_signature(doc))
    taken = read_entry(root, new_key)
    if new_key == old_key or (taken is not None and os.path.isdir(root.sub(INBOX, taken))):
        return 0  # unchanged, or an open incident of the current rules has it
    write_entry(root, new_key, incident_id)
    return 1
