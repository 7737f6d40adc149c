"""`events.jsonl`: the bundle's own, append-only record of its events and step attempts.

Every event of an incident (and every step attempt the mirror lists) is first appended
here, in the incident's folder, which moves with it to its archive bucket; the mirror's
`events` and `step_attempts` tables are read from these files (`mirror.ingest`), live and
by `reindex` alike, so deleting the database loses nothing (invariant I5). Events that
belong to no incident (pause, resume) go to `.state/events.jsonl`, next to the pause flag.

One JSON object per line:

    {"key": "s12.0", "ts": "...", "incident_id": "...", "kind": "event",
     "event": "state_transition", "payload": {...}}
    {"key": "s12.r", "ts": "...", "incident_id": "...", "kind": "step_attempt",
     "run_id": "...", "step_name": "error_pipeline", "label": "...", "started_at": null,
     "finished_at": null, "result": {...}}

`key` is stable for what it records: a tick's lines are keyed by the step its commit
completes (`s<step>.<n>`), a close's by `c<step>.<n>`, a capture's by the occurrence, a
human decision's by its time; other writers use a unique key. A line written again (a
tick redone after a crash before its commit) has the same key and is read once: the
first line with a key wins, in the file and in the mirror.

Bounds: a line is at most `LINE_MAX` bytes (a larger payload is replaced by a
truncation note with its head), a file at most `FILE_MAX` bytes (lines that would pass
it are dropped, and a last `events_capped` line says so). Payloads are redacted
(`incidents.redact`) before they are written. Files are read with `O_NOFOLLOW`, as a
regular file, under the file cap (`fsutil.read_regular_file`).

Durability: lines are appended (`O_APPEND`) before the commit they describe; a killed
process never loses an appended line. The file is fsynced with the incident's folder
(`sync`), at the same points that make a commit durable, so no commit is durable
without its lines and no extra fsync is paid per tick.
"""

from __future__ import annotations

import json
import os
import stat

from incidents.errors import UnsafeFile

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any

    StrPath = str | os.PathLike[str]  # a str on the capture path (no pathlib), or a Path

EVENTS = "events.jsonl"
LINE_MAX = 64 * 1024
FILE_MAX = 8 << 20
# what a reader accepts (bundle_files' cap for the file): the writer's cap, its last note,
# and room; a larger file was not written by us, and its bundle is set aside
READ_MAX = 9 << 20
_HEAD = 2048
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def event(
    key: str, ts: str, incident_id: str | None, event_type: str, payload: dict[str, Any]
) -> dict[str, Any]:
    """An event line's document."""
    return {
        "key": key,
        "ts": ts,
        "incident_id": incident_id,
        "kind": "event",
        "event": event_type,
        "payload": payload,
    }


def step_attempt(
    key: str,
    ts: str,
    incident_id: str,
    run_id: str,
    step_name: str,
    label: str,
    result: dict[str, Any] | None,
    started_at: str | None = None,
    finished_at: str | None = None,
) -> dict[str, Any]:
    """A step attempt line's document (a row of the mirror's `step_attempts`)."""
    return {
        "key": key,
        "ts": ts,
        "incident_id": incident_id,
        "kind": "step_attempt",
        "run_id": run_id,
        "step_name": step_name,
        "label": label,
        "started_at": started_at,
        "finished_at": finished_at,
        "result": result or {},
    }


def encode(doc: dict[str, Any], *, redact: bool = True) -> bytes:
    """One line, redacted and bounded (`LINE_MAX`)."""
    if redact:
        from incidents.redact import redact_json

        doc = redact_json(doc)
    line = _dumps(doc)
    if len(line) <= LINE_MAX:
        return line
    field = "payload" if doc.get("kind") == "event" else "result"
    text = json.dumps(doc.get(field), sort_keys=True, ensure_ascii=False)
    note = {"truncated": True, "bytes": len(text.encode()), "head": text[:_HEAD]}
    return _dumps({**doc, field: note})


def _dumps(doc: dict[str, Any]) -> bytes:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "replace") + b"\n"


def _open_append(path: StrPath) -> int:
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeFile(str(path), "is a symbolic link") from exc
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        raise UnsafeFile(str(path), "is not a regular file with one link")
    return fd


def append(path: StrPath, docs: list[dict[str, Any]], *, redact: bool = True) -> None:
    """Append `docs` as lines (one `write`: a killed process leaves all or, rarely on a
    full disk, a torn last line, which readers skip). Not fsynced: see `sync`."""
    if not docs:
        return
    data = b"".join(encode(d, redact=redact) for d in docs)
    fd = _open_append(path)
    try:
        size = os.fstat(fd).st_size
        if size + len(data) > FILE_MAX - LINE_MAX:  # the last LINE_MAX: the cap note's
            if size and b'"event":"events_capped"' in os.pread(fd, 512, max(0, size - 512)):
                return  # capped already: nothing more
            first = docs[0]
            data = encode(
                event(f"cap{size}", str(first.get("ts", "")), first.get("incident_id"),
                      "events_capped", {"dropped_from": str(first.get("key"))}),
                redact=False,
            )  # fmt: skip
        if size and not _ends_with_newline(fd, size):
            data = b"\n" + data  # a torn line from a crash stays alone on its line
        os.write(fd, data)
    finally:
        os.close(fd)


def _ends_with_newline(fd: int, size: int) -> bool:
    return os.pread(fd, 1, size - 1) == b"\n"


def sync(path: StrPath) -> None:
    """fsync the file if it exists (called where the folder holding it is fsynced)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except (FileNotFoundError, OSError):
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path: StrPath, offset: int = 0) -> tuple[list[dict[str, Any]], int, int]:
    """The complete lines after byte `offset` (0 when the file shrank), the offset after
    the last complete line, and how many lines could not be parsed (skipped)."""
    from incidents.fsutil import JSON_MAX_DEPTH, read_regular_file, within_depth

    try:
        data = read_regular_file(path, READ_MAX)
    except FileNotFoundError:
        return [], 0, 0
    if offset > len(data):
        offset = 0
    end = data.rfind(b"\n") + 1
    docs: list[dict[str, Any]] = []
    bad = 0
    for raw in data[offset:end].split(b"\n"):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError):  # a nesting bomb is a line that does not parse
            bad += 1
            continue
        if (
            isinstance(doc, dict)
            and isinstance(doc.get("key"), str)
            and within_depth(doc, JSON_MAX_DEPTH)
        ):
            docs.append(doc)
        else:
            bad += 1
    return docs, max(end, offset), bad


def unique_key(prefix: str) -> str:
    """A key for a line no redo can write again (a command's, not a tick's)."""
    import time

    return f"{prefix}{time.time_ns()}-{os.urandom(3).hex()}"


def events_of(
    key: str, ts: str, incident_id: str | None, events: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Event lines keyed `<key>.<n>`, in order."""
    return [event(f"{key}.{n}", ts, incident_id, t, p) for n, (t, p) in enumerate(events)]


def append_events(
    folder: StrPath,
    incident_id: str | None,
    events: list[tuple[str, dict[str, Any]]],
    key: str,
    ts: str | None = None,
) -> None:
    """Append `events` to `folder/events.jsonl`, keyed `<key>.<n>` (see the module)."""
    if not events:
        return
    if ts is None:
        from incidents.clock import iso_precise

        ts = iso_precise()
    append(os.path.join(folder, EVENTS), events_of(key, ts, incident_id, events))
