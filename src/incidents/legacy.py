"""Import seed 002's legacy executor state (`.executor-state.json`) into the SQLite mirror.

Accepted shape (the seed names the fields, not the layout; every variant below is one an
executor of that era wrote):

    {
      "tasks": {                                  # or a list of {"task_id": ..., ...}
        "T1": {
          "status": "completed",                  # pending | running | completed | failed ...
          "started_at": "2026-02-20T10:00:00Z",   # optional
          "completed_at": "2026-02-20T10:05:00Z", # optional
          "attempts": [
            {"timestamp": "2026-02-20T10:00:00Z", "success": false,
             "duration_seconds": 31.5, "error": "Timed out after 30s",
             "error_code": "TIMEOUT",             # optional: classified from `error` if absent
             "claude_output": "..."}              # optional
          ]
        }
      },
      "attempts": [{"task_id": "T1", ...}],       # optional: attempts kept beside the tasks
      "consecutive_failures": 0, "total_completed": 1, "total_failed": 0
                                                  # optional, top level or under "meta"
    }

Import: one `runs` row per file (`legacy_<path hash>_<content hash>`), one `step_attempts`
row per task (`legacy_task`) and per attempt (`legacy_attempt`, label = its index), one
event for each row that is new, and a `meta` marker keyed on the content hash, all in one
transaction. A second import of the same content imports nothing; an updated file at the
same path adds only its new attempts. The file is renamed to `.json.bak` after the commit;
a `.bak` given again (to rebuild a lost mirror's legacy history) is imported as the file it
was and keeps its name.
A file that is unreadable, not JSON or of another shape is refused and left untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents import clock, mirror
from incidents.classify import classify
from incidents.errors import IncidentsError, InvalidDocument
from incidents.fsutil import parse_json_strict, read_regular_file
from incidents.redact import redact
from incidents.vocab import ErrorCode

LEGACY_MAX_BYTES = 64 << 20
OUTPUT_MAX_CHARS = 4000  # of an attempt's claude_output kept in the mirror
META_KEYS = ("consecutive_failures", "total_completed", "total_failed")
CODES = frozenset(c.value for c in ErrorCode)


@dataclass(frozen=True)
class Attempt:
    index: int
    timestamp: str | None
    success: bool
    duration_seconds: float | None
    error: str | None
    error_code: str
    code_source: str  # "file" or the classifier's reason
    output: str | None


@dataclass(frozen=True)
class Task:
    task_id: str
    status: str
    started_at: str | None
    completed_at: str | None
    attempts: list[Attempt] = field(default_factory=list)


@dataclass(frozen=True)
class LegacyState:
    tasks: list[Task]
    meta: dict[str, int]


@dataclass
class ImportResult:
    path: Path
    run_id: str
    tasks: int = 0
    attempts: int = 0
    already: bool = False
    renamed_to: Path | None = None
    kept_because: str = ""


class LegacyRefused(InvalidDocument):
    """The legacy file cannot be imported; it is left untouched."""


def _fail(path: Path, reason: str, where: str = "") -> LegacyRefused:
    return LegacyRefused(str(path), f"{reason}; the file was left untouched", where)


def _opt_text(doc: dict[str, Any], key: str, path: Path, where: str) -> str | None:
    value = doc.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _fail(path, f"expected text or null, got {type(value).__name__}", f"{where}.{key}")


def _attempt(doc: Any, index: int, path: Path, where: str) -> Attempt:
    if not isinstance(doc, dict):
        raise _fail(path, "an attempt must be a JSON object", where)
    success = doc.get("success", False)
    if not isinstance(success, bool | int) or isinstance(success, float):
        raise _fail(path, "expected true or false", f"{where}.success")
    duration = doc.get("duration_seconds", doc.get("duration"))
    if duration is not None and (
        isinstance(duration, bool) or not isinstance(duration, int | float)
    ):
        raise _fail(path, "expected a number of seconds", f"{where}.duration_seconds")
    error = _opt_text(doc, "error", path, where)
    code = _opt_text(doc, "error_code", path, where)
    source = "file"
    if code is not None and code.upper() not in CODES:
        raise _fail(
            path, f"unknown error code {code!r} (one of {sorted(CODES)})", f"{where}.error_code"
        )
    if code is None and not success:
        found = classify(error or "")
        code, source = found.error_code.value, found.reason
    return Attempt(
        index=index,
        timestamp=_opt_text(doc, "timestamp", path, where),
        success=bool(success),
        duration_seconds=None if duration is None else float(duration),
        error=error,
        error_code=(code or "").upper(),
        code_source=source if code else "",
        output=_opt_text(doc, "claude_output", path, where),
    )


def _task(task_id: Any, doc: Any, loose: list[Any], path: Path, where: str) -> Task:
    if not isinstance(task_id, str) or not task_id:
        raise _fail(path, "a task needs a non-empty text id (task_id)", where)
    if not isinstance(doc, dict):
        raise _fail(path, "a task must be a JSON object", where)
    raw = doc.get("attempts", [])
    if not isinstance(raw, list):
        raise _fail(path, "expected a list", f"{where}.attempts")
    raw = raw + [a for a in loose if isinstance(a, dict) and a.get("task_id") == task_id]
    status = _opt_text(doc, "status", path, where) or "pending"
    return Task(
        task_id=task_id,
        status=status,
        started_at=_opt_text(doc, "started_at", path, where),
        completed_at=_opt_text(doc, "completed_at", path, where),
        attempts=[_attempt(a, i, path, f"{where}.attempts[{i}]") for i, a in enumerate(raw)],
    )


def parse(doc: Any, path: Path) -> LegacyState:
    """Validate the document's shape (pure): a `LegacyRefused` names the field."""
    if not isinstance(doc, dict):
        raise _fail(path, f"expected a JSON object with `tasks`, got {type(doc).__name__}")
    if "tasks" not in doc:
        raise _fail(path, "no `tasks` key: this is not an executor state file")
    raw, loose = doc["tasks"], doc.get("attempts", [])
    if not isinstance(loose, list):
        raise _fail(path, "expected a list", "attempts")
    if isinstance(raw, dict):
        tasks = [_task(k, v, loose, path, f"tasks.{k}") for k, v in raw.items()]
    elif isinstance(raw, list):
        tasks = [
            _task(
                t.get("task_id", t.get("id")) if isinstance(t, dict) else None,
                t,
                loose,
                path,
                f"tasks[{i}]",
            )
            for i, t in enumerate(raw)
        ]
    else:
        raise _fail(path, "expected an object or a list of tasks", "tasks")
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise _fail(path, "a task id appears twice", "tasks")
    meta_doc = doc.get("meta", doc.get("executor_meta", doc))
    meta = {}
    for key in META_KEYS:
        value = meta_doc.get(key) if isinstance(meta_doc, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            meta[key] = value
    return LegacyState(tasks, meta)


def read(path: Path) -> tuple[LegacyState, str]:
    """Read and validate the file: (state, sha256 of its bytes)."""
    try:
        data = read_regular_file(path, LEGACY_MAX_BYTES)
    except FileNotFoundError:
        raise _fail(path, "no such file") from None
    except IsADirectoryError:
        raise _fail(path, "is a directory") from None
    except IncidentsError as exc:
        raise _fail(path, f"cannot be read ({getattr(exc, 'reason', exc)})") from exc
    except OSError as exc:
        raise _fail(path, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        doc = parse_json_strict(data, str(path))
    except InvalidDocument as exc:
        raise _fail(path, f"corrupt: {exc.reason}") from exc
    return parse(doc, path), hashlib.sha256(data).hexdigest()


def _marker(digest: str) -> str:
    return f"legacy_import:{digest}"


def _attempt_result(task: Task, a: Attempt) -> dict[str, Any]:
    output = a.output
    if output is not None:
        output = redact(output[-OUTPUT_MAX_CHARS:])
    return {
        "task_id": task.task_id,
        "index": a.index,
        "success": a.success,
        "duration_seconds": a.duration_seconds,
        "error": redact(a.error) if a.error else a.error,
        "error_code": a.error_code or None,
        "error_code_source": a.code_source or None,
        "claude_output_tail": output,
    }


def _store(
    conn: mirror.Connection, state: LegacyState, result: ImportResult, source: str, ws: str
) -> None:
    now = clock.iso_precise()
    first = min((t.started_at for t in state.tasks if t.started_at), default=None)
    mirror.add_run(conn, result.run_id, first or now, source)
    for task in state.tasks:
        ws_id = f"{ws}:{task.task_id}"
        doc = {"task_id": task.task_id, "status": task.status, "attempts": len(task.attempts)}
        if mirror.record_step_attempt(
            conn, result.run_id, ws_id, "legacy_task", "task", result=doc,
            started_at=task.started_at, finished_at=task.completed_at,
        ):  # fmt: skip
            result.tasks += 1
            payload = {**doc, "run_id": result.run_id, "ws_id": ws_id, "source": source}
            mirror.add_event(conn, None, "legacy_task", payload, ts=task.started_at or now)
        for a in task.attempts:
            body = _attempt_result(task, a)
            if mirror.record_step_attempt(
                conn, result.run_id, ws_id, "legacy_attempt", str(a.index), result=body,
                started_at=a.timestamp, finished_at=None,
            ):  # fmt: skip
                result.attempts += 1
                payload = {k: v for k, v in body.items() if k != "claude_output_tail"}
                payload.update(run_id=result.run_id, ws_id=ws_id)
                mirror.add_event(conn, None, "legacy_attempt", payload, ts=a.timestamp or now)


def import_file(conn: mirror.Connection, path: Path) -> ImportResult:
    """Import `path` once, then rename it to `<name>.bak`; see the module docstring."""
    path = Path(os.path.abspath(path))
    is_backup = path.name.endswith(".bak")
    # a .bak is the file an earlier import renamed: importing it again (the mirror was
    # rebuilt, say) keeps its name and gives the rows the ids the first import gave them
    source = path.with_name(path.name[: -len(".bak")]) if is_backup else path
    backup = source.with_name(source.name + ".bak")
    if not is_backup and not os.path.lexists(path) and backup.is_file():
        # imported and renamed by an earlier run: nothing to import twice
        return ImportResult(path, "", already=True, renamed_to=backup)
    state, digest = read(path)
    where = hashlib.sha256(str(source).encode()).hexdigest()[:8]
    result = ImportResult(path, f"legacy_{where}_{digest[:12]}")
    with mirror.write(conn):
        if mirror.get_meta(conn, _marker(digest)) is not None:
            result.already = True
        else:
            _store(conn, state, result, str(source), f"legacy_{where}")
            marker = {
                "path": str(source), "run_id": result.run_id, "imported_at": clock.iso_precise(),
                "tasks": len(state.tasks), "attempts": sum(len(t.attempts) for t in state.tasks),
                "meta": state.meta,
            }  # fmt: skip
            mirror.add_meta(conn, _marker(digest), json.dumps(marker, sort_keys=True))
    if is_backup:
        result.kept_because = f"{path.name} is already the backup"
    elif os.path.lexists(backup):
        result.kept_because = f"{backup.name} already exists"
    else:
        try:
            os.rename(path, backup)
            result.renamed_to = backup
        except OSError as exc:  # imported all the same; a rerun imports nothing twice
            result.kept_because = f"it could not be renamed to {backup.name}: {exc.strerror}"
    return result
