"""What may be in an incident's folder: the door every reader of a bundle goes through.

Stdlib only (capture folds a repeat into an open bundle through it). A bundle in the inbox
may have been written by anyone who can write there, so before anything of it is believed
every entry of the folder is judged, without following a symlink (`O_NOFOLLOW`, then
`fstat`), by the one table below (`RULES`, also in README "Bundle files"):

| file               | cap      | content                                                  |
| incident.json      | 1 MiB    | a JSON object                                            |
| status.txt         | 64 B     | text                                                     |
| log_tail.txt       | 16 MiB   | text (capture keeps at most [capture] log_tail_bytes)    |
| audit_tail.jsonl   | 16 MiB   | JSON objects, one a line; at most 10% of lines may not   |
|                    |          | decode (UTF-8 JSON object)                               |
| context.json       | 1 MiB    | a JSON object                                            |
| state.json         | 1 MiB    | the step service's sealed context (judged by step.seal)  |
| decisions.json     | 1 MiB    | a JSON array                                             |
| metadata.json      | 1 MiB    | a JSON object                                            |
| reason.txt         | 64 KiB   | text                                                     |
| events.jsonl       | 9 MiB    | the bundle's journal (eventlog; its reader skips a line  |
|                    |          | that does not parse)                                     |
| any other file     | 16 MiB   | anything                                                 |

Every entry, known or not: a regular file with one link (no symlink, FIFO, socket, device,
no hard link to a file elsewhere) or a plain folder (judged the same way, entry by entry,
at most `MAX_ENTRIES` in all). The temp files of our own atomic writes
(`.NAME.PID.HEX.tmp`) are skipped: their writer holds the incident's lock, and a dead
writer's are removed before a load. A bundle that breaks a rule is set aside whole in
`error_rejected/` by its reader (`step.documents.load_bundle`), with a reason naming the
file and the rule.
"""

from __future__ import annotations

import json
import os
import stat

from incidents import artifacts, eventlog
from incidents.errors import IncidentsError, UnsafeFile
from incidents.fsutil import JSON_MAX_BYTES, atomic_temp_pid, parse_json_strict, read_regular_file

TEXT, OBJECT, ARRAY, JSONL, SEALED, ANY = "text", "object", "array", "jsonl", "sealed", "any"
JOURNAL = "journal"  # events.jsonl: only its size is judged here, its lines by eventlog
MiB = 1 << 20
LOG_MAX_BYTES = 16 * MiB  # capture's [capture] log_tail_bytes is at most this
OTHER_MAX_BYTES = 16 * MiB
AUDIT_BAD_SHARE = 0.10  # undecodable audit lines tolerated, as a share of the lines
MAX_ENTRIES = 10_000
# Folders below the bundle's own: its files are a level or two deep; a tree nested deeper
# (towards PATH_MAX, where every call on it fails with ENAMETOOLONG) is no bundle.
MAX_DEPTH = 16
SHOWN_MAX = 200  # characters of a name a reason quotes

# name -> (cap in bytes, what it must hold): the one table (README "Bundle files")
RULES: dict[str, tuple[int, str]] = {
    artifacts.INCIDENT: (JSON_MAX_BYTES, OBJECT),
    artifacts.STATUS: (64, TEXT),
    artifacts.LOG_TAIL: (LOG_MAX_BYTES, TEXT),
    artifacts.AUDIT_TAIL: (LOG_MAX_BYTES, JSONL),
    artifacts.CONTEXT: (JSON_MAX_BYTES, OBJECT),
    artifacts.STATE: (JSON_MAX_BYTES, SEALED),
    artifacts.DECISIONS: (JSON_MAX_BYTES, ARRAY),
    artifacts.METADATA: (JSON_MAX_BYTES, OBJECT),
    artifacts.REASON: (64 * 1024, TEXT),
    eventlog.EVENTS: (eventlog.READ_MAX, JOURNAL),
}
_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def cap_of(name: str) -> int:
    return RULES.get(name, (OTHER_MAX_BYTES, ANY))[0]


def read(folder: str | os.PathLike[str], name: str) -> bytes:
    """A bundle file's bytes through the door: no link, regular, one link, under its cap
    (`UnsafeFile` else; FileNotFoundError when it is not there)."""
    return read_regular_file(os.path.join(folder, name), cap_of(name))


def _shown(rel: str) -> str:
    """A name as a reason shows it: on one line, whatever it holds, at most `SHOWN_MAX`
    characters."""
    shown = rel if rel.isprintable() else ascii(rel)
    return shown if len(shown) <= SHOWN_MAX else f"{shown[:SHOWN_MAX]}..."


def _entry_problem(st: os.stat_result, name: str) -> str | None:
    """What is wrong with an entry from its lstat alone, or None."""
    kind = stat.S_IFMT(st.st_mode)
    if kind in _KINDS:
        return f"is {_KINDS[kind]} (a bundle holds regular files only)"
    if kind == stat.S_IFDIR:
        return "is a folder (a file is expected)" if name in RULES else None
    if kind != stat.S_IFREG:
        return "is not a regular file"
    if st.st_nlink > 1:
        return f"has {st.st_nlink} hard links (may be a file outside the bundle)"
    if st.st_size > cap_of(name):
        return f"is {st.st_size} bytes, over its cap of {cap_of(name)}"
    return None


def listing_problems(folder: str | os.PathLike[str]) -> list[str]:
    """The rules the entries of `folder` break from their lstat alone (no file is opened):
    links, FIFOs, devices, hard links, sizes over the cap. Each `FILE: rule`."""
    found: list[str] = []
    count = 0
    pending = [(os.fspath(folder), "", 0)]
    while pending:
        path, prefix, depth = pending.pop()
        if depth > MAX_DEPTH:
            return [*found, f"{_shown(prefix)}: nested more than {MAX_DEPTH} folders deep"]
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except FileNotFoundError:
            continue
        except OSError as exc:
            found.append(f"{_shown(prefix or '.')}: cannot be listed: {exc.strerror}")
            continue
        for entry in entries:
            count += 1
            if count > MAX_ENTRIES:
                return [*found, f"more than {MAX_ENTRIES} entries"]
            if atomic_temp_pid(entry.name) is not None:
                continue
            rel = f"{prefix}{entry.name}"
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as exc:  # ENAMETOOLONG, ELOOP, EACCES...: no file of a bundle
                found.append(f"{_shown(rel)}: cannot be examined: {exc.strerror}")
                continue
            problem = _entry_problem(st, rel)
            if problem is not None:
                found.append(f"{_shown(rel)}: {problem}")
            elif stat.S_ISDIR(st.st_mode):
                pending.append((entry.path, f"{rel}/", depth + 1))
    return found


def _content_problem(data: bytes, kind: str) -> str | None:
    if kind in (OBJECT, ARRAY):
        try:
            doc = parse_json_strict(data, "")
        except IncidentsError as exc:
            return str(getattr(exc, "reason", exc))
        want = dict if kind == OBJECT else list
        if not isinstance(doc, want):
            got = type(doc).__name__
            return f"must be a JSON {'object' if kind == OBJECT else 'array'}, not {got}"
        return None
    if kind == JSONL:
        lines = [ln for ln in data.split(b"\n") if ln.strip()]
        bad = sum(1 for ln in lines if not _json_object_line(ln))
        if bad > len(lines) * AUDIT_BAD_SHARE:
            return (
                f"{bad} of {len(lines)} lines are not UTF-8 JSON objects "
                f"(at most {AUDIT_BAD_SHARE:.0%} may be)"
            )
    return None


def _json_object_line(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


def problems(folder: str | os.PathLike[str]) -> list[str]:
    """Every rule of the table the bundle in `folder` breaks, each `FILE: rule`: first the
    listing (`listing_problems`), then the content of the JSON documents and the audit
    tail, each opened without following links and read under its cap. Text files are
    not read (their reader reads them through `read`)."""
    found = listing_problems(folder)
    if found:
        return found
    for name, (_cap, kind) in RULES.items():
        if kind not in (OBJECT, ARRAY, JSONL) or name == artifacts.INCIDENT:
            continue  # incident.json is validated, field by field, by its reader
        try:
            data = read(folder, name)
        except FileNotFoundError:
            continue
        except UnsafeFile as exc:  # changed since the listing
            found.append(f"{name}: {exc.reason}")
            continue
        except OSError as exc:
            found.append(f"{name}: cannot be read: {exc.strerror}")
            continue
        problem = _content_problem(data, kind)
        if problem is not None:
            found.append(f"{name}: {problem}")
    return found
