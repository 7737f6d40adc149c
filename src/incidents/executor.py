"""Seed 002's executor state, its interface exactly: a plan/exec loop's memory of its tasks.

    from incidents.executor import ExecutorConfig, ExecutorState

    state = ExecutorState(ExecutorConfig(root="reports"))   # spec/.executor-state.db
    state.mark_running("1.1")
    state.record_attempt("1.1", success=False, duration=31.5, error="...", output="...")
    if state.should_stop(): ...

The file is SQLite in WAL mode with the seed's three tables (`incidents.executor_db`);
opening it migrates a legacy `.json` of the same name (`incidents.executor_migrate`).
Each write is one `BEGIN IMMEDIATE` transaction, so two processes can record at once.
With `root`, a failed attempt is also captured into that reports root (step = the task
id) through `incidents.capture`, so it is grouped, budgeted and seen like any failure.
"""

from __future__ import annotations

import math
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from incidents import clock, executor_db, executor_migrate, executor_root
from incidents.classify import classify
from incidents.errors import UsageError
from incidents.executor_db import StateFileError
from incidents.layout import Root
from incidents.vocab import ErrorCode

if TYPE_CHECKING:
    from incidents.fixers.prompt import RetryContext

__all__ = [
    "ErrorCode",
    "ExecutorConfig",
    "ExecutorState",
    "Recorded",
    "RetryContext",
    "TaskAttempt",
    "TaskState",
]

DEFAULT_STATE_FILE = "spec/.executor-state.db"


def __getattr__(name: str) -> Any:
    # RetryContext lives with the prompt that renders it (pydantic models behind it):
    # re-exported on first use, so `import incidents.executor` stays light
    if name == "RetryContext":
        from incidents.fixers.prompt import RetryContext

        return RetryContext
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class ExecutorConfig:
    """`state_file` relative to the current directory; `spec_prefix` names a namespace
    (`spec/.executor-{prefix}state.db`); `root`: a reports root that failed attempts are
    captured into, and whose pause stops the loop."""

    state_file: str = DEFAULT_STATE_FILE
    spec_prefix: str | None = None
    max_consecutive_failures: int = 3
    root: str | os.PathLike[str] | Root | None = None

    @property
    def path(self) -> Path:
        given = Path(self.state_file)
        if self.spec_prefix:
            if "/" in self.spec_prefix or self.spec_prefix in (".", ".."):
                raise UsageError(f"spec_prefix {self.spec_prefix!r}: no path separators")
            name = given.name
            stem = name.removeprefix(".executor-")
            if stem != name:  # the seed's naming: .executor-{prefix}state.db
                given = given.with_name(f".executor-{self.spec_prefix}{stem}")
            else:
                given = given.with_name(f"{self.spec_prefix}{name}")
        return Path(os.path.abspath(given))


@dataclass(frozen=True)
class TaskAttempt:
    id: int
    timestamp: str
    success: bool
    duration_seconds: float
    error: str | None
    error_code: ErrorCode | None
    claude_output: str | None


@dataclass(frozen=True)
class TaskState:
    task_id: str
    status: str  # pending | running | completed | failed (a legacy file may hold others)
    started_at: str | None
    completed_at: str | None
    attempts: list[TaskAttempt] = field(default_factory=list)

    @property
    def attempt_count(self) -> int:
        return len(self.attempts)

    @property
    def last_error(self) -> str | None:
        failed = [a for a in self.attempts if not a.success]
        return failed[-1].error if failed else None


@dataclass(frozen=True)
class Recorded:
    """What `record_attempt` stored: the attempt's row id and code, and the incident it
    was captured into (with a root, for a failure)."""

    attempt_id: int
    error_code: ErrorCode | None
    incident_id: str | None = None


def _code(value: str | None) -> ErrorCode | None:
    if value is None:
        return None
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.UNKNOWN


class ExecutorState:
    """Open (or migrate, or create) the state file; see the module docstring."""

    def __init__(self, config: ExecutorConfig | None = None) -> None:
        self.config = config or ExecutorConfig()
        if self.config.max_consecutive_failures < 1:
            raise UsageError("max_consecutive_failures: must be at least 1")
        self.path = self.config.path
        given = self.config.root
        self.root = (
            given if isinstance(given, Root)
            else Root(Path(os.path.abspath(given))) if given is not None else None
        )  # fmt: skip
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.migration = executor_migrate.settle(self.path)
        if executor_migrate.is_finished(self.path):
            self._conn = self._open()
            return
        # Created under the folder's lock: two processes opening a new file at once would
        # both switch it to WAL, and the loser's switch fails with "database is locked".
        with executor_migrate.folder_lock(self.path.parent):
            if not os.path.lexists(self.path):  # the agent's output lives here: owner only
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            conn = executor_db.connect(self.path)
        except sqlite3.DatabaseError as exc:
            raise StateFileError(f"{self.path}: not an executor state database ({exc})") from exc
        try:
            executor_db.ensure_schema(conn, self.path)
        except BaseException:
            conn.close()
            raise
        return conn

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ExecutorState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads -------------------------------------------------------------------------

    def get_task_state(self, task_id: str) -> TaskState:
        """The task as stored; a task never seen is `pending` with no attempts."""
        row = self._conn.execute(
            "SELECT status, started_at, completed_at FROM tasks WHERE task_id = ?", (task_id,)
        ).fetchone()
        if row is None:
            return TaskState(task_id, "pending", None, None, [])
        attempts = [
            TaskAttempt(r[0], r[1], bool(r[2]), float(r[3]), r[4], _code(r[5]), r[6])
            for r in self._conn.execute(
                "SELECT id, timestamp, success, duration_seconds, error, error_code, "
                "claude_output FROM attempts WHERE task_id = ? ORDER BY id",
                (task_id,),
            )
        ]
        return TaskState(task_id, row[0], row[1], row[2], attempts)

    def task_ids(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT task_id FROM tasks ORDER BY task_id")]

    @property
    def consecutive_failures(self) -> int:
        return executor_db.get_int(self._conn, "consecutive_failures")

    @property
    def total_completed(self) -> int:
        return executor_db.get_int(self._conn, "total_completed")

    @property
    def total_failed(self) -> int:
        return executor_db.get_int(self._conn, "total_failed")

    def should_stop(self) -> bool:
        """Stop the loop: `max_consecutive_failures` failures in a row, or the root paused
        (seed 003's global threshold, or a person: `incidents pause`)."""
        if self.consecutive_failures >= self.config.max_consecutive_failures:
            return True
        if self.root is not None:
            from incidents import pause

            return pause.current(self.root) is not None
        return False

    def retry_context(self, task_id: str, max_attempts: int) -> RetryContext | None:
        """Seed 002's structured retry context from the task's last failed attempt (None
        when it has none), for the next attempt's prompt."""
        from incidents.fixers.prompt import RetryContext

        task = self.get_task_state(task_id)
        failed = [a for a in task.attempts if not a.success]
        if not failed:
            return None
        last = failed[-1]
        code = last.error_code or ErrorCode.UNKNOWN
        return RetryContext(
            attempt_number=task.attempt_count + 1,
            max_attempts=max_attempts,
            previous_error_code=code,
            previous_error=last.error or "",
            what_was_tried=(last.claude_output or "")[-2000:],
            test_failures=last.error if code == ErrorCode.TEST_FAILURE else None,
        )

    # --- writes ------------------------------------------------------------------------

    def mark_running(self, task_id: str) -> None:
        """The task starts (again): `running`; `started_at` is its first start."""
        _check_id(task_id)
        with executor_db.immediate(self._conn):
            self._conn.execute(
                "INSERT INTO tasks (task_id, status, started_at) VALUES (?, 'running', ?) "
                "ON CONFLICT(task_id) DO UPDATE SET status = 'running', "
                "started_at = COALESCE(started_at, excluded.started_at)",
                (task_id, clock.iso_precise()),
            )

    def record_attempt(
        self,
        task_id: str,
        success: bool,
        duration: float,
        error: str | None = None,
        output: str | None = None,
        error_code: ErrorCode | str | None = None,
    ) -> Recorded:
        """One attempt, atomically: its row, the task's status and the counters. A failed
        attempt without `error_code` is classified from `error` and `output` by capture's
        rules. `error` and `output` are stored redacted (`output` as its tail).

        With a root, a failure is captured after the attempt is committed: a process
        killed in between keeps the attempt and misses that one incident, and an unusable
        root (a bad incidents.toml, a root that is a file) raises after the commit. A
        success closes the task's open incidents as fixed by the loop
        (`incidents.executor_root`)."""
        _check_id(task_id)
        code = _check_attempt(success, duration, error, output, error_code)
        clean_error = executor_db.clean_error(error)
        clean_output = executor_db.clean_output(output)
        if code is None and not success:
            code = classify(clean_error or "", clean_output or "").error_code
        now = clock.iso_precise()
        with executor_db.immediate(self._conn) as conn:
            before = _outcome(conn, task_id)
            status = "completed" if success else "failed"
            conn.execute(
                "INSERT INTO tasks (task_id, status, started_at, completed_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(task_id) DO UPDATE SET status = excluded.status, "
                "started_at = COALESCE(started_at, excluded.started_at), "
                "completed_at = excluded.completed_at",
                (task_id, status, now, now if success else None),
            )
            cur = conn.execute(
                "INSERT INTO attempts (task_id, timestamp, success, duration_seconds, error, "
                "error_code, claude_output) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (task_id, now, int(success), float(duration), clean_error,
                 code.value if code else None, clean_output),
            )  # fmt: skip
            attempt_id = int(cur.lastrowid or 0)
            _count(conn, before, status)
        incident = None
        if self.root is not None and not success:
            incident = executor_root.capture(
                self.root, self.path, task_id, attempt_id, code or ErrorCode.UNKNOWN,
                clean_error, clean_output, duration,
            )  # fmt: skip
            executor_root.note_open(self._conn, task_id, incident)
        elif self.root is not None:
            executor_root.close_fixed(self._conn, self.root, self.path, task_id, attempt_id)
        return Recorded(attempt_id, code, incident)


def _check_attempt(
    success: object, duration: object, error: object, output: object, error_code: object
) -> ErrorCode | None:
    """`record_attempt`'s arguments, each named when it is wrong; returns the code given."""
    if not isinstance(success, bool):
        raise TypeError(f"success: expected True or False, got {type(success).__name__}")
    if isinstance(duration, bool) or not isinstance(duration, int | float):
        raise TypeError(f"duration: expected a number of seconds, got {type(duration).__name__}")
    if not math.isfinite(duration) or duration < 0:
        raise UsageError(f"duration: must be a number of seconds >= 0, got {duration!r}")
    for name, value in (("error", error), ("output", output)):
        if value is not None and not isinstance(value, str):
            hint = " (pass str(exc))" if isinstance(value, BaseException) else ""
            hint = " (decode it first)" if isinstance(value, bytes | bytearray) else hint
            raise TypeError(f"{name}: expected a str or None, got {type(value).__name__}{hint}")
    if error_code is None:
        return None
    if not isinstance(error_code, str):  # ErrorCode is a str
        raise TypeError(
            f"error_code: expected an ErrorCode or None, got {type(error_code).__name__}"
        )
    try:
        return ErrorCode(error_code)
    except ValueError:
        known = ", ".join(c.value for c in ErrorCode)
        raise UsageError(f"error_code: unknown code {error_code!r} (one of {known})") from None


def _check_id(task_id: str) -> None:
    if not isinstance(task_id, str) or not task_id.strip():
        raise UsageError("task_id: must be non-empty text")
    if len(task_id) > 200:  # it is the step of the incident a failure is captured into
        raise UsageError("task_id: at most 200 characters")


def _outcome(conn: sqlite3.Connection, task_id: str) -> str | None:
    """The task's latest outcome ("completed" or "failed"): its last attempt's, else its
    status for a task imported without attempts; None when it has none."""
    row = conn.execute(
        "SELECT success FROM attempts WHERE task_id = ? ORDER BY id DESC LIMIT 1", (task_id,)
    ).fetchone()
    if row is not None:
        return "completed" if row[0] else "failed"
    row = conn.execute("SELECT status FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return row[0] if row is not None and row[0] in ("completed", "failed") else None


def _count(conn: sqlite3.Connection, before: str | None, status: str) -> None:
    """The counters after one attempt, in its transaction. `total_completed` and
    `total_failed` count tasks by their latest outcome (`mark_running` between attempts
    does not change it): a failed task that then completes moves from one to the other."""
    if status == "completed":
        executor_db.set_int(conn, "consecutive_failures", 0)
    else:
        failures = executor_db.get_int(conn, "consecutive_failures")
        executor_db.set_int(conn, "consecutive_failures", failures + 1)
    if before == status:
        return
    for key, delta in (
        ("total_completed", (status == "completed") - (before == "completed")),
        ("total_failed", (status == "failed") - (before == "failed")),
    ):
        if delta:
            executor_db.set_int(conn, key, max(0, executor_db.get_int(conn, key) + delta))
