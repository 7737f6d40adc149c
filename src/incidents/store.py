"""The bundle store: incident folders that appear atomically and move by one rename.

Stdlib only (capture uses it). The filesystem is the source of truth:
- a bundle is built in `.staging/` on the same filesystem, every file fsynced, then
  renamed into `error_inbox/` in one step (Maildir-style; a reader never sees half);
- `incident.json` is authoritative; `status.txt` is rewritten right after it, and any
  disagreement is repaired from `incident.json`;
- closing writes an intent to `.state/pending/`, updates the status, then renames the
  folder into its archive bucket; the next command completes an interrupted close;
- what does not parse or validate goes to `error_rejected/` with a `reason.txt`.
"""

from __future__ import annotations

import os
import time

from incidents import artifacts, clock, fsutil
from incidents.errors import IncidentsError, InvalidDocument
from incidents.layout import INBOX, STAGING, STATE, Root, shown_name, validate_id

TYPE_CHECKING = False  # typing and pathlib stay off the capture path (import cost)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from incidents.locks import Flocked

STAGING_GRACE_S = 3600.0
_SLUG_KEEP = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def slugify(text: str, limit: int = 40) -> str:
    """Each run of characters outside [a-z0-9] (after lower-casing) becomes one `_` (what
    `re.sub("[^a-z0-9]+", "_", ...)` does, without compiling a pattern on capture's path)."""
    out: list[str] = []
    for c in text.lower():
        if c in _SLUG_KEEP:
            out.append(c)
        elif not out or out[-1] != "_":
            out.append("_")
    slug = "".join(out).strip("_")[:limit].strip("_")
    return slug or "step"


def _compact(ts: float) -> str:
    return time.strftime("%Y%m%d_%H%M%S", time.gmtime(ts))


def new_incident_id(step: str, ts: float) -> str:
    """seed 004's `incident_YYYYMMDD_HHMMSS_<slug>`, plus 48 random bits against collisions."""
    return f"incident_{_compact(ts)}_{slugify(step)}_{os.urandom(6).hex()}"


def new_run_id(ts: float) -> str:
    return f"run_{_compact(ts)}_{int(ts * 1_000_000) % 1_000_000:06d}"


def lock_path(root: Root, name: str) -> str:
    return root.sub(STATE, "locks", f"{name}.lock")


def incident_lock(root: Root, incident_id: str, timeout_s: float = 30.0) -> Flocked:
    """Held for every change to one incident's files (capture's occurrences, status, close)."""
    from incidents.locks import flocked  # a new bundle takes no lock

    return flocked(lock_path(root, validate_id(incident_id)), timeout_s)


def write_bundle(root: Root, incident_id: str, files: dict[str, bytes]) -> str:
    """Build the bundle in staging, fsync everything, rename it into the inbox."""
    validate_id(incident_id)
    staging = root.sub(STAGING, f"{incident_id}.{os.getpid()}.{os.urandom(4).hex()}")
    os.mkdir(staging, 0o700)
    inbox = root.sub(INBOX)
    try:
        fsutil.write_new_files(staging, files)  # each fsynced, then the folder
        target = os.path.join(inbox, incident_id)
        if os.path.exists(target):
            raise IncidentsError(f"incident {incident_id} already exists in {inbox}")
        _rename(staging, target)
    except BaseException:  # a full disk, a clash: no half bundle is left in staging
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsutil.fsync_dir(inbox)
    return target


def _rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """One rename on one filesystem; never a copy. Refuses to replace an existing folder."""
    if os.path.lexists(dst):
        raise IncidentsError(f"{dst} already exists; not overwriting it with {src}")
    try:
        os.rename(src, dst)
    except OSError as exc:
        import errno

        if exc.errno == errno.EXDEV:
            raise IncidentsError(
                f"{src} and {dst} are on different filesystems; the reports root must be one"
            ) from exc
        raise


def move(src: Path, dst: Path) -> None:
    """Move a bundle between buckets: one rename, never over an existing folder, then both
    folders fsynced so the move survives a power cut (invariant I1)."""
    _rename(src, dst)
    fsutil.fsync_dir(src.parent)
    fsutil.fsync_dir(dst.parent)


def read_incident(folder: str | os.PathLike[str]) -> dict[str, Any]:
    path = os.path.join(folder, artifacts.INCIDENT)
    doc = fsutil.read_json_object(path)
    for key in ("incident_id", "status", "step", "error_signature", "created_at"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise InvalidDocument(path, "missing or not a string", key)
    return doc


def save_incident(
    folder: str | os.PathLike[str], doc: dict[str, Any], *, sync_dir: bool = True
) -> None:
    """incident.json first (authoritative), then status.txt from it. `sync_dir=False`: the
    caller fsyncs the folder next (the step service commits state.json there)."""
    fsutil.atomic_replace_files(
        folder,
        [
            (artifacts.INCIDENT, fsutil.dump_json(doc)),
            (artifacts.STATUS, f"{doc['status']}\n".encode()),
        ],
        sync_dir=sync_dir,
    )


def set_status(
    folder: str | os.PathLike[str],
    doc: dict[str, Any],
    status: str,
    *,
    sync_dir: bool = True,
    **fields: Any,
) -> None:
    """incident.json (`doc` with `status`, `fields` and a new `updated_at`), then status.txt."""
    save_incident(
        folder,
        {**doc, **fields, "status": status, "updated_at": clock.iso_now()},
        sync_dir=sync_dir,
    )


def read_status_txt(folder: Path) -> str:
    try:
        return (
            fsutil.read_regular_file(folder / artifacts.STATUS, 64)
            .decode("utf-8", "replace")
            .strip()
        )
    except FileNotFoundError:
        return ""


def repair_status_txt(folder: Path, status: str) -> bool:
    """Rewrite status.txt when it disagrees with incident.json's `status` (a crash
    between the two)."""
    if read_status_txt(folder) == status:
        return False
    fsutil.atomic_write_text(folder / artifacts.STATUS, f"{status}\n")
    return True


# --- rejection and sweeping ------------------------------------------------------------


def reject(root: Root, path: Path, reason: str) -> Path:
    """Move a bundle that does not parse or validate aside, with why. Nothing is deleted.

    A name that cannot be shown on one line (bytes that are not UTF-8, control characters)
    is not carried into `error_rejected/`: the folder gets a name derived from it, and its
    reason says the name it had, escaped."""
    name = path.name
    if not name.isprintable():
        import hashlib

        shown = shown_name(name)
        name = f"unprintable-name-{hashlib.sha256(os.fsencode(path.name)).hexdigest()[:16]}"
        reason = f"{reason} (its folder name was '{shown}')"
    target = root.rejected / name
    n = 1
    while target.exists() or target.is_symlink():
        target = root.rejected / f"{name}.{n}"
        n += 1
    if path.is_dir() and not path.is_symlink():
        _rename(path, target)
        reason_file = target / artifacts.REASON
        if reason_file.exists() or reason_file.is_symlink():
            reason_file = target / "reason.rejected.txt"
    else:
        target.mkdir(mode=0o700)
        _rename(path, target / name)
        reason_file = target / artifacts.REASON
    from incidents.redact import redact

    reason = redact(reason)  # it quotes the value that broke a rule: a command may hold a key
    reason = shown_name(reason)  # and names or paths of any bytes: on one line, as UTF-8
    fsutil.write_new_file(reason_file, f"{clock.iso_now()} {reason}\n".encode())
    fsutil.fsync_dir(root.rejected)
    return target


def sweep_staging(root: Root, grace_s: float = STAGING_GRACE_S) -> list[Path]:
    """Staging folders older than the grace period were left by a killed capture: move them
    to `error_rejected/` (never processed, never deleted)."""
    from pathlib import Path

    moved: list[Path] = []
    now = time.time()
    for entry in os.scandir(root.staging):
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue
        if age >= grace_s:
            moved.append(reject(root, Path(entry.path), "abandoned in staging by a killed capture"))
    return moved


# --- the mirror ------------------------------------------------------------------------


def mark_dirty(root: Root, incident_id: str) -> None:
    """Tell the mirror that this bundle changed (`Root.mark_dirty`)."""
    root.mark_dirty(incident_id)


def mirror_bundle(
    root: Root, bucket: str, folder: Path, event: str, payload: dict[str, Any] | None = None
) -> None:
    """Upsert one bundle's row and log `event`. Best effort: the folders are the truth, and a
    mirror that cannot be written now is rebuilt by `incidents reindex` or the watcher."""
    from incidents import eventlog, mirror

    if payload is None:
        payload = {"status": read_incident(folder).get("status")}
    path = folder / eventlog.EVENTS
    eventlog.append_events(folder, folder.name, [(event, payload)], eventlog.unique_key("b"))
    eventlog.sync(path)
    with mirror.best_effort(root, busy_timeout_ms=2000, incident=folder.name) as conn:
        if conn is not None:
            mirror.refresh(conn, root, folder.name)
            mirror.ingest_incident(conn, root, folder.name)
