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

import contextlib
import errno
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from incidents import fsutil
from incidents.errors import AlreadyArchived, IncidentsError, InvalidDocument
from incidents.layout import BUCKETS, Root, validate_id
from incidents.locks import flocked

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

BUNDLE_FILES = ("incident.json", "status.txt", "log_tail.txt", "audit_tail.jsonl", "context.json")
STAGING_GRACE_S = 3600.0
_SLUG_RE = re.compile(r"[^a-z0-9]+")


def iso_at(ts: float) -> str:
    """seed 004's timestamp form, `2026-02-17T03:00:00+00:00` (datetime stays off this path)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts))


def iso_now() -> str:
    return iso_at(time.time())


def iso(when: datetime) -> str:
    return when.isoformat()


def slugify(text: str, limit: int = 40) -> str:
    slug = _SLUG_RE.sub("_", text.lower()).strip("_")[:limit].strip("_")
    return slug or "step"


def _compact(ts: float) -> str:
    return time.strftime("%Y%m%d_%H%M%S", time.gmtime(ts))


def new_incident_id(step: str, ts: float) -> str:
    """seed 004's `incident_YYYYMMDD_HHMMSS_<slug>`, plus 48 random bits against collisions."""
    return f"incident_{_compact(ts)}_{slugify(step)}_{os.urandom(6).hex()}"


def new_run_id(ts: float) -> str:
    return f"run_{_compact(ts)}_{int(ts * 1_000_000) % 1_000_000:06d}"


def lock_path(root: Root, name: str) -> Path:
    return root.locks / f"{name}.lock"


@contextmanager
def incident_lock(root: Root, incident_id: str, timeout_s: float = 30.0) -> Iterator[None]:
    """Held for every change to one incident's files (capture's occurrences, status, close)."""
    with flocked(lock_path(root, validate_id(incident_id)), timeout_s):
        yield


def write_bundle(root: Root, incident_id: str, files: dict[str, bytes]) -> Path:
    """Build the bundle in staging, fsync everything, rename it into the inbox."""
    validate_id(incident_id)
    staging = root.staging / f"{incident_id}.{os.getpid()}.{os.urandom(4).hex()}"
    staging.mkdir(mode=0o700)
    for name, data in files.items():
        fsutil.write_new_file(staging / name, data)
    fsutil.fsync_dir(staging)
    target = root.inbox / incident_id
    if target.exists():
        raise IncidentsError(f"incident {incident_id} already exists in {root.inbox}")
    _rename(staging, target)
    fsutil.fsync_dir(root.inbox)
    return target


def _rename(src: Path, dst: Path) -> None:
    """One rename on one filesystem; never a copy. Refuses to replace an existing folder."""
    if dst.exists() or dst.is_symlink():
        raise IncidentsError(f"{dst} already exists; not overwriting it with {src}")
    try:
        os.rename(src, dst)
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise IncidentsError(
                f"{src} and {dst} are on different filesystems; the reports root must be one"
            ) from exc
        raise


def read_incident(folder: Path) -> dict[str, Any]:
    doc = fsutil.read_json_object(folder / "incident.json")
    for key in ("incident_id", "status", "step", "error_signature", "created_at"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise InvalidDocument(str(folder / "incident.json"), "missing or not a string", key)
    return doc


def save_incident(folder: Path, doc: dict[str, Any], *, sync_dir: bool = True) -> None:
    """incident.json first (authoritative), then status.txt from it. `sync_dir=False`: the
    caller fsyncs the folder next (the step service commits state.json there)."""
    fsutil.atomic_replace_files(
        folder,
        [("incident.json", fsutil.dump_json(doc)), ("status.txt", f"{doc['status']}\n".encode())],
        sync_dir=sync_dir,
    )


def set_status(
    folder: Path, doc: dict[str, Any], status: str, *, sync_dir: bool = True, **fields: Any
) -> dict[str, Any]:
    new = {**doc, **fields, "status": status, "updated_at": iso_now()}
    save_incident(folder, new, sync_dir=sync_dir)
    return new


def read_status_txt(folder: Path) -> str:
    try:
        return (
            fsutil.read_regular_file(folder / "status.txt", 64).decode("utf-8", "replace").strip()
        )
    except FileNotFoundError:
        return ""


def repair_status_txt(folder: Path, doc: dict[str, Any]) -> bool:
    """Rewrite status.txt when it disagrees with incident.json (a crash between the two)."""
    if read_status_txt(folder) == doc["status"]:
        return False
    fsutil.atomic_write_text(folder / "status.txt", f"{doc['status']}\n")
    return True


# --- closing -------------------------------------------------------------------------


def _pending_dir(root: Root) -> Path:
    path = root.state / "pending"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def archive(
    root: Root,
    incident_id: str,
    bucket: str,
    reason: str,
    run_result: dict[str, Any] | None = None,
    *,
    journal: bool = True,
) -> Path:
    """Close an inbox incident into `resolved` or `escalated`: status, run_result.json, rename.

    The close's intent goes to `.state/pending/` first, so `complete_pending` finishes a close
    a crash interrupted. `journal=False` is for a caller whose own record already says how to
    close (the step service: a terminal `state.json` closes the incident again when it is
    picked up), and saves a file written and deleted per incident.
    """
    if bucket not in ("resolved", "escalated"):
        raise ValueError(bucket)
    validate_id(incident_id)
    with incident_lock(root, incident_id):
        where, folder = root.locate(incident_id)
        if where != "inbox":
            raise AlreadyArchived(f"incident {incident_id} is already archived in {BUCKETS[where]}")
        doc = read_incident(folder)
        if journal:
            fsutil.atomic_write_json(
                _pending_dir(root) / incident_id,
                {"bucket": bucket, "reason": reason, "run_result": run_result},
            )
        return _close(root, incident_id, folder, doc, bucket, reason, run_result)


def _close(
    root: Root,
    incident_id: str,
    folder: Path,
    doc: dict[str, Any],
    bucket: str,
    reason: str,
    run_result: dict[str, Any] | None,
) -> Path:
    """The close after its intent (if any): run_result.json, the status, the move. Done
    again after a crash, it finishes what is left (every part is idempotent)."""
    # run_result.json first: its folder's fsync makes the incident's run artifacts
    # durable before the folder whose state.json refers to them
    runs = root.runs_dir(incident_id)
    runs.mkdir(mode=0o700, parents=True, exist_ok=True)
    for directory in (runs, folder):  # temp files of a writer killed mid-close
        fsutil.remove_orphan_temps(directory)
    result_path = runs / "run_result.json"
    if not result_path.exists():
        fsutil.atomic_write_json(result_path, run_result or default_run_result(doc, bucket, reason))
    else:  # a close done again: what else is in the folder is durable all the same
        fsutil.fsync_dir(runs)
    repair_status_txt(folder, doc)  # killed between incident.json and status.txt
    if doc["status"] != bucket or doc.get("resolution") != reason:
        doc = set_status(folder, doc, bucket, resolution=reason)  # fsyncs the folder
    else:
        fsutil.fsync_dir(folder)  # what was written in it is durable before it moves
    target = root.bucket(bucket) / incident_id
    _rename(folder, target)
    fsutil.fsync_dir(folder.parent)
    fsutil.fsync_dir(target.parent)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(root.state / "pending" / incident_id)
    return target


def default_run_result(doc: dict[str, Any], bucket: str, reason: str) -> dict[str, Any]:
    from datetime import datetime

    now = time.time()
    try:
        created = datetime.fromisoformat(doc["created_at"]).timestamp()
        minutes = max(0.0, round((now - created) / 60, 2))
    except (ValueError, TypeError):
        minutes = 0.0
    return {
        "incident_id": doc["incident_id"],
        "final_status": bucket,
        "loops_used": 0,
        "runtime_minutes": minutes,
        "same_error_repeats": 0,
        "archived_to": f"{BUCKETS[bucket]}/{doc['incident_id']}",
        "reason": reason,
        "finished_at": iso_at(now),
    }


def complete_pending(root: Root) -> list[str]:
    """Finish closes that a crash interrupted (their intent is in `.state/pending/`)."""
    done: list[str] = []
    pending = root.state / "pending"
    if not pending.is_dir():
        return done
    fsutil.remove_orphan_temps(pending)  # an intent whose writer was killed mid-write
    for entry in sorted(os.listdir(pending)):
        if entry.startswith("."):
            continue  # a temp file of an interrupted intent write
        try:
            intent = fsutil.read_json_object(pending / entry)
            bucket, reason = str(intent["bucket"]), str(intent["reason"])
            result = intent.get("run_result")
            with incident_lock(root, entry):
                folder = root.inbox / entry
                if folder.is_dir():
                    _close(
                        root, entry, folder, read_incident(folder), bucket, reason,
                        result if isinstance(result, dict) else None,
                    )  # fmt: skip
                else:
                    (pending / entry).unlink(missing_ok=True)
            done.append(entry)
        except (IncidentsError, KeyError, OSError):
            continue  # left for doctor to report; never guessed at
    return done


# --- rejection and sweeping ------------------------------------------------------------


def reject(root: Root, path: Path, reason: str) -> Path:
    """Move a bundle that does not parse or validate aside, with why. Nothing is deleted."""
    name = path.name
    target = root.rejected / name
    n = 1
    while target.exists() or target.is_symlink():
        target = root.rejected / f"{name}.{n}"
        n += 1
    if path.is_dir() and not path.is_symlink():
        _rename(path, target)
        reason_file = target / "reason.txt"
        if reason_file.exists() or reason_file.is_symlink():
            reason_file = target / "reason.rejected.txt"
    else:
        target.mkdir(mode=0o700)
        _rename(path, target / name)
        reason_file = target / "reason.txt"
    fsutil.write_new_file(reason_file, f"{iso_now()} {reason}\n".encode())
    fsutil.fsync_dir(root.rejected)
    return target


def sweep_staging(root: Root, grace_s: float = STAGING_GRACE_S) -> list[Path]:
    """Staging folders older than the grace period were left by a killed capture: move them
    to `error_rejected/` (never processed, never deleted)."""
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
    """Tell the mirror that this bundle changed (an empty hint file; see mirror.catch_up).
    Cheap and best effort: a lost hint is found by catch_up's inbox listing."""
    with contextlib.suppress(OSError):
        os.close(os.open(root.state / "dirty" / incident_id, os.O_WRONLY | os.O_CREAT, 0o600))


def mirror_bundle(
    root: Root, bucket: str, folder: Path, event: str, payload: dict[str, Any] | None = None
) -> None:
    """Upsert one bundle's row and log `event`. Best effort: the folders are the truth, and a
    mirror that cannot be written now is rebuilt by `incidents reindex` or the watcher."""
    from incidents import mirror

    with mirror.best_effort(root, busy_timeout_ms=2000) as conn:
        if conn is not None:
            row = mirror.row_from_bundle(root, bucket, folder)
            mirror.upsert_incident(conn, row)
            mirror.add_event(conn, row.incident_id, event, payload or {"status": row.status})


def warn_mirror(exc: BaseException) -> None:
    """The one warning for a mirror that could not be written (it is rebuilt later)."""
    from incidents import mirror

    mirror.warn(exc)
