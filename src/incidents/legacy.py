"""Read seed 002's legacy executor state (`.executor-state.json`): the shapes it came in.

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

Reading is all this module does (`read`, `parse`: pure but for the read). Converting a file
into the executor's SQLite state, and renaming it to `.json.bak`, is
`incidents.executor_migrate`; `incidents import-legacy` and `ExecutorState` both use it.
A file that is unreadable, not JSON or of another shape is refused (`LegacyRefused`, naming
the file and the field) and left untouched.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents.classify import classify
from incidents.errors import IncidentsError, InvalidDocument
from incidents.fsutil import parse_json_strict, read_regular_file
from incidents.vocab import ErrorCode

LEGACY_MAX_BYTES = 64 << 20
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
        isinstance(duration, bool)
        or not isinstance(duration, int | float)
        or not math.isfinite(duration)
        or duration < 0
    ):
        raise _fail(
            path,
            f"expected a number of seconds >= 0, got {duration!r}",
            f"{where}.duration_seconds",
        )
    error = _opt_text(doc, "error", path, where)
    code = _opt_text(doc, "error_code", path, where)
    source = "file"
    if code is not None and code.upper() not in CODES:
        raise _fail(
            path, f"unknown error code {code!r} (one of {sorted(CODES)})", f"{where}.error_code"
        )
    output = _opt_text(doc, "claude_output", path, where)
    if code is None and not success:
        found = classify(error or "", output or "")  # as ExecutorState.record_attempt does
        code, source = found.error_code.value, found.reason
    return Attempt(
        index=index,
        timestamp=_opt_text(doc, "timestamp", path, where),
        success=bool(success),
        duration_seconds=None if duration is None else float(duration),
        error=error,
        error_code=(code or "").upper(),
        code_source=source if code else "",
        output=output,
    )


def _task(task_id: Any, doc: Any, loose: list[tuple[str, Any]], path: Path, where: str) -> Task:
    """`loose`: the top-level attempts of this task, each with where it sits in the file."""
    if not isinstance(task_id, str) or not task_id:
        raise _fail(path, "a task needs a non-empty text id (task_id)", where)
    if not isinstance(doc, dict):
        raise _fail(path, "a task must be a JSON object", where)
    raw = doc.get("attempts", [])
    if not isinstance(raw, list):
        raise _fail(path, "expected a list", f"{where}.attempts")
    placed = [(f"{where}.attempts[{i}]", a) for i, a in enumerate(raw)] + loose
    status = _opt_text(doc, "status", path, where) or "pending"
    return Task(
        task_id=task_id,
        status=status,
        started_at=_opt_text(doc, "started_at", path, where),
        completed_at=_opt_text(doc, "completed_at", path, where),
        attempts=[_attempt(a, i, path, at) for i, (at, a) in enumerate(placed)],
    )


def _loose(raw: Any, path: Path) -> dict[str, list[tuple[str, Any]]]:
    """The top-level `attempts`, by task id (indexed once: a file of thousands of tasks
    and attempts reads in linear time)."""
    if not isinstance(raw, list):
        raise _fail(path, "expected a list", "attempts")
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for i, a in enumerate(raw):
        where = f"attempts[{i}]"
        if not isinstance(a, dict):
            raise _fail(path, "an attempt must be a JSON object", where)
        task_id = a.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            raise _fail(path, "an attempt beside the tasks needs its task's id", f"{where}.task_id")
        by_task.setdefault(task_id, []).append((where, a))
    return by_task


def _orphan(task_id: str, loose: list[tuple[str, Any]], path: Path) -> Task:
    """A task only the top-level attempts name: kept, its status its last attempt's."""
    task = _task(task_id, {}, loose, path, f"attempts (task {task_id!r})")
    last = task.attempts[-1]
    status = "completed" if last.success else "failed"
    return Task(task_id, status, task.attempts[0].timestamp,
                last.timestamp if last.success else None, task.attempts)  # fmt: skip


def parse(doc: Any, path: Path) -> LegacyState:
    """Validate the document's shape (pure): a `LegacyRefused` names the field."""
    if not isinstance(doc, dict):
        raise _fail(path, f"expected a JSON object with `tasks`, got {type(doc).__name__}")
    if "tasks" not in doc:
        raise _fail(path, "no `tasks` key: this is not an executor state file")
    raw = doc["tasks"]
    loose = _loose(doc.get("attempts", []), path)
    if isinstance(raw, dict):
        pairs = [(k, v, f"tasks.{k}") for k, v in raw.items()]
    elif isinstance(raw, list):
        pairs = [
            (t.get("task_id", t.get("id")) if isinstance(t, dict) else None, t, f"tasks[{i}]")
            for i, t in enumerate(raw)
        ]
    else:
        raise _fail(path, "expected an object or a list of tasks", "tasks")
    tasks = [
        _task(k, v, loose.get(k, []) if isinstance(k, str) else [], path, where)
        for k, v, where in pairs
    ]
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise _fail(path, "a task id appears twice", "tasks")
    known = set(ids)
    tasks += [_orphan(k, v, path) for k, v in loose.items() if k not in known]
    meta_doc = doc.get("meta", doc.get("executor_meta", doc))
    meta = {}
    for key in META_KEYS:
        value = meta_doc.get(key) if isinstance(meta_doc, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < 1 << 62:
                raise _fail(path, f"expected a count >= 0, got {value}", key)
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
