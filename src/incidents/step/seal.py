"""The step service's seal on `state.json`: a state it did not write is never believed.

`state.json` says where an incident stands on the ladder, and a terminal one closes the
incident without another check. Anyone who can write into the inbox could otherwise put
one there (`current_state: S_SUCCESS`) and have a broken target archived as resolved.

The design, and why:
- **One secret per reports root**: 32 random bytes in `.state/seal.key`, mode 0600, owner
  only, created once and never replaced (created exclusively: written under a temp name,
  then hard-linked into place, which unlike a rename never replaces an existing key).
- **The seal is inside the file it seals.** `write_state`, the one writer of state.json,
  puts `"seal": "<HMAC-SHA256, hex>"` first in the document; the MAC covers the incident
  id (the folder's name) and every byte of the rest of the file. A commit is still one
  atomic replace of one file, so there is no instant between two writes at which a
  killed process could leave a state and a seal that disagree: whatever a crash leaves
  (the old file or the new one, I3) carries its own valid seal. A separate seal file
  would need two writes per commit and a protocol to survive a kill between them.
- **Checked before anything is believed**: `load_context` verifies the seal on the raw
  bytes, then parses the rest. Missing, malformed or not matching: `Untrusted`, and the
  step service sets the bundle aside to `error_rejected/` (`documents.load_bundle`). A
  state.json edited in place, planted in a new bundle, or copied from another incident
  (the id is in the MAC) does not verify.
- **Roots from before the seal keep their incidents in flight.** A root created by this
  version gets its key from `Root.ensure`, so nothing is ever sealed wholesale there. A
  root created before has no key: the first step-service read or write takes the
  `.seal` lock, makes a key, seals every state.json then in the inbox and in
  `error_archive/escalated/` (where a requeue reads it), and only then publishes the
  key. Those are exactly the states the previous version trusted, so sealing them
  trusts nothing it did not; from the key's publication on, nothing unsealed is
  trusted. No step-service process writes a state.json meanwhile (each needs the key,
  so each waits on the lock). Killed mid-way, the key was never published: the next
  attempt makes another and seals everything again (an old seal is replaced).
- **Limits.** Whoever can read `.state/seal.key` can forge a seal: `.state/` (which also
  holds leases, locks and the pause flag) belongs to the service and is the trust
  boundary; the inbox may be opened to others. An older sealed state.json of the same
  incident, saved and put back, still verifies: it can only send the incident back to an
  earlier step of its own climb, which is redone with canonical checks.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path

from incidents import artifacts, fsutil, store
from incidents.errors import InvalidDocument, UnsafeFile
from incidents.layout import Root
from incidents.locks import flocked

KEY_BYTES = 32
_PREFIX = b'{\n  "seal": "'
_TAG = 64  # hex digits of a SHA-256 MAC
_DOMAIN = b"incidents state.json v1\x00"
LOCK = ".seal"  # not a valid incident id: never one incident's lock
LOCK_TIMEOUT_S = 600.0  # sealing a large inbox once, at the upgrade


class Untrusted(InvalidDocument):
    """A state.json the step service did not write (no seal, or one that does not match)."""


def _mac(key: bytes, incident_id: str, body: bytes) -> bytes:
    message = _DOMAIN + incident_id.encode() + b"\x00" + body
    return hmac.new(key, message, hashlib.sha256).hexdigest().encode()


def seal(key: bytes, incident_id: str, body: bytes) -> bytes:
    """`body` (a JSON object laid out by `fsutil.dump_model`) with its seal put first."""
    if not body.startswith(b"{") or body[1:].lstrip().startswith(b"}"):
        raise ValueError("a state is a non-empty JSON object")
    return _PREFIX + _mac(key, incident_id, body) + b'",' + body[1:]


def _split(data: bytes) -> tuple[bytes, bytes] | None:
    """(tag, body) of a sealed file, or None when it carries no seal of our form."""
    end = len(_PREFIX) + _TAG
    if not data.startswith(_PREFIX) or data[end : end + 2] != b'",':
        return None
    return data[len(_PREFIX) : end], b"{" + data[end + 2 :]


def unseal(key: bytes, incident_id: str, data: bytes, where: str) -> bytes:
    """The body of a sealed state.json, once its seal is checked; `Untrusted` otherwise."""
    parts = _split(data)
    if parts is None:
        raise Untrusted(where, "not written by the step service (it carries no seal)", "seal")
    tag, body = parts
    if not hmac.compare_digest(tag, _mac(key, incident_id, body)):
        raise Untrusted(
            where,
            "not written by the step service for this incident (its seal does not match: "
            "edited, or copied from elsewhere)",
            "seal",
        )
    return body


def read_key(path: Path) -> bytes:
    """The key, if it is a regular file of ours that nobody else can read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise UnsafeFile(str(path), "is not a regular file owned by this user")
        if st.st_mode & 0o077:
            raise UnsafeFile(str(path), "is readable by others; run: chmod 600 on it")
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise UnsafeFile(str(path), f"is not a {KEY_BYTES}-byte key")
    return data


def key(root: Root) -> bytes:
    """The root's key; made at the first use in a root created before the seal (see the
    module docstring: the states already there are sealed before it is published)."""
    path = root.seal_key
    try:
        return read_key(path)
    except FileNotFoundError:
        pass
    with flocked(store.lock_path(root, LOCK), LOCK_TIMEOUT_S):
        try:
            return read_key(path)  # made meanwhile by another process
        except FileNotFoundError:
            pass
        new = os.urandom(KEY_BYTES)
        seal_existing(root, new)
        if not fsutil.publish_new_file(path, new):  # `Root.ensure` of a new root won
            new = read_key(path)
            seal_existing(root, new)
        return new


def seal_existing(root: Root, key_: bytes) -> int:
    """Seal every state.json in the inbox and in escalated/ with `key_` (replacing any
    seal a killed attempt left); returns how many. Files that are unsafe or not a JSON
    object are left as they are: the step service rejects them when it reads them."""
    count = 0
    for bucket in (root.inbox, root.bucket("escalated")):
        try:
            entries = list(os.scandir(bucket))
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path) / artifacts.STATE
            try:
                data = fsutil.read_regular_file(path)
                parts = _split(data)
                doc = fsutil.parse_json_strict(parts[1] if parts else data, str(path))
            except (FileNotFoundError, InvalidDocument, UnsafeFile):
                continue
            if not isinstance(doc, dict) or not doc:
                continue
            doc.pop("seal", None)
            fsutil.atomic_write_bytes(path, seal(key_, entry.name, fsutil.dump_json(doc)))
            count += 1
    return count
