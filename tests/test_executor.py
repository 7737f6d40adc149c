"""`incidents.executor`: seed 002's executor state, its interface exactly, on a real SQLite
file; concurrency with real processes; folding failures into a real reports root."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from incidents.errors import UsageError
from incidents.executor import (
    ErrorCode,
    ExecutorConfig,
    ExecutorState,
    RetryContext,
    TaskState,
)
from incidents.layout import Root
from tests.helpers import Cli

# Seed 002, section 1 "Schema", as written there.
SEED_SCHEMA = {
    "tasks": """CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY,
    status TEXT NOT NULL DEFAULT 'pending',
    started_at TEXT,
    completed_at TEXT
)""",
    "attempts": """CREATE TABLE attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL REFERENCES tasks(task_id),
    timestamp TEXT NOT NULL,
    success INTEGER NOT NULL,
    duration_seconds REAL NOT NULL,
    error TEXT,
    error_code TEXT,
    claude_output TEXT
)""",
    "executor_meta": """CREATE TABLE executor_meta (
    key TEXT PRIMARY KEY,
    value TEXT
)""",
}


def test_the_interface_names_come_from_their_one_home() -> None:
    from incidents.fixers import prompt
    from incidents.vocab import ErrorCode as VocabCode

    assert RetryContext is prompt.RetryContext and ErrorCode is VocabCode


def test_a_new_state_file_has_the_seeds_tables_in_wal_mode(tmp_path: Path) -> None:
    with ExecutorState(ExecutorConfig()) as state:
        assert state.path == tmp_path / "spec" / ".executor-state.db"
        assert state.get_task_state("1.1") == TaskState("1.1", "pending", None, None, [])
        assert (state.consecutive_failures, state.total_completed, state.total_failed) == (0, 0, 0)
    conn = sqlite3.connect(tmp_path / "spec" / ".executor-state.db")
    tables = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()
    assert {k: tables[k] for k in SEED_SCHEMA} == SEED_SCHEMA
    assert set(tables) == {*SEED_SCHEMA, "sqlite_sequence"}  # AUTOINCREMENT's own table
    mode = stat.S_IMODE((tmp_path / "spec" / ".executor-state.db").stat().st_mode)
    assert mode == 0o600  # it keeps the agent's output


def test_config_names_the_file_as_the_seed_does(tmp_path: Path) -> None:
    assert ExecutorConfig(spec_prefix="auth-").path == tmp_path / "spec/.executor-auth-state.db"
    assert ExecutorConfig("other/s.db", spec_prefix="x").path == tmp_path / "other/xs.db"
    assert ExecutorConfig().max_consecutive_failures == 3 and ExecutorConfig().root is None
    with pytest.raises(Exception, match="no path separators"):
        _ = ExecutorConfig(spec_prefix="../up").path


def test_attempts_statuses_and_counters(tmp_path: Path) -> None:
    state = ExecutorState(ExecutorConfig(max_consecutive_failures=2))
    state.mark_running("1.1")
    running = state.get_task_state("1.1")
    assert running.status == "running" and running.started_at and not running.attempts
    state.record_attempt("1.1", False, 12.5, "Task timed out after 300 seconds", "partial")
    failed = state.get_task_state("1.1")
    assert failed.status == "failed" and failed.completed_at is None
    assert failed.attempts[0].error_code == ErrorCode.TIMEOUT  # classified: none was given
    assert (state.consecutive_failures, state.total_failed, state.should_stop()) == (1, 1, False)
    state.mark_running("1.1")
    assert state.get_task_state("1.1").started_at == running.started_at  # its first start
    state.record_attempt("1.1", True, 3.0, output="done. TASK_DONE")
    done = state.get_task_state("1.1")
    assert done.status == "completed" and done.completed_at and len(done.attempts) == 2
    assert done.attempts[1].error_code is None and done.attempts[1].success
    # a failed task that completes moves from one count to the other; success resets the run
    assert (state.consecutive_failures, state.total_completed, state.total_failed) == (0, 1, 0)
    state.record_attempt("1.2", False, 1.0, "boom", error_code="HOOK_FAILURE")
    state.record_attempt("1.3", False, 1.0, "TASK_FAILED: no such section", "")
    assert state.get_task_state("1.2").attempts[0].error_code == ErrorCode.HOOK_FAILURE
    assert state.get_task_state("1.3").attempts[0].error_code == ErrorCode.TASK_FAILED
    assert (state.consecutive_failures, state.total_failed, state.should_stop()) == (2, 2, True)
    state.close()
    # another process's view: all of it was committed
    again = ExecutorState(ExecutorConfig(max_consecutive_failures=2))
    assert again.should_stop() and again.task_ids() == ["1.1", "1.2", "1.3"]


def test_what_is_stored_is_redacted_and_capped(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "a1B2c3D4" * 6
    state = ExecutorState(ExecutorConfig())
    output = "x" * 100_000 + f"\nexport ANTHROPIC_API_KEY={key}\nlast line"
    state.record_attempt("t", False, 1.0, f"failed with token {key}", output)
    (attempt,) = state.get_task_state("t").attempts
    assert key not in (attempt.error or "") and key not in (attempt.claude_output or "")
    assert attempt.claude_output is not None and attempt.claude_output.endswith("last line")
    assert len(attempt.claude_output) <= 32_001 and attempt.claude_output.startswith("…")
    raw = (tmp_path / "spec" / ".executor-state.db").read_bytes()
    wal = tmp_path / "spec" / ".executor-state.db-wal"
    assert key.encode() not in raw + (wal.read_bytes() if wal.exists() else b"")


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    state = ExecutorState(ExecutorConfig())
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(Exception, match="task_id"):
            state.record_attempt(bad, True, 1.0)
    for duration in (-1.0, float("nan"), float("inf")):
        with pytest.raises(Exception, match="duration"):
            state.record_attempt("t", True, duration)
    wrong: list[tuple[dict[str, object], type[Exception], str]] = [
        ({"error": b"x"}, TypeError, "error: expected a str or None, got bytes"),
        ({"error": ValueError("v")}, TypeError, r"error: .*ValueError \(pass str\(exc\)\)"),
        ({"output": 3}, TypeError, "output: expected a str or None, got int"),
        ({"success": "no"}, TypeError, "success: expected True or False, got str"),
        ({"duration": "3"}, TypeError, "duration: expected a number of seconds, got str"),
        ({"error_code": "FOO"}, UsageError, "error_code: unknown code 'FOO'"),
        ({"error_code": 7}, TypeError, "error_code: expected an ErrorCode"),
    ]
    for given, kind, message in wrong:
        args: dict[str, object] = {"task_id": "t", "success": False, "duration": 1.0, **given}
        with pytest.raises(kind, match=message):
            state.record_attempt(**args)  # type: ignore[arg-type]
    assert state.record_attempt("t", False, 1, error_code="TIMEOUT").error_code is ErrorCode.TIMEOUT
    with pytest.raises(Exception, match="max_consecutive_failures"):
        ExecutorState(ExecutorConfig(max_consecutive_failures=0))
    assert state.task_ids() == ["t"]


def test_retry_context_from_the_last_failure(tmp_path: Path) -> None:
    state = ExecutorState(ExecutorConfig())
    assert state.retry_context("t", 3) is None
    state.record_attempt("t", False, 2.0, "FAILED tests/test_a.py::test_x - assert 1 == 2",
                         "edited a.py", error_code=ErrorCode.TEST_FAILURE)  # fmt: skip
    ctx = state.retry_context("t", 3)
    assert ctx == RetryContext(
        attempt_number=2, max_attempts=3, previous_error_code=ErrorCode.TEST_FAILURE,
        previous_error="FAILED tests/test_a.py::test_x - assert 1 == 2",
        what_was_tried="edited a.py",
        test_failures="FAILED tests/test_a.py::test_x - assert 1 == 2",
    )  # fmt: skip
    assert "previous_error_code: TEST_FAILURE" in ctx.render()


def test_should_stop_when_the_root_is_paused(cli: Cli, root: Root, tmp_path: Path) -> None:
    state = ExecutorState(ExecutorConfig(root=root))  # a Root, a path or its text
    assert not state.should_stop()
    assert cli("pause", "--reason", "too many escalations").code == 0
    assert state.should_stop()
    assert cli("resume").code == 0
    assert not state.should_stop()
    # without a root, another root's pause is not this loop's business
    assert cli("pause", "--reason", "again").code == 0
    assert not ExecutorState(ExecutorConfig()).should_stop()


def test_a_failed_attempt_folds_into_an_incident_of_the_root(
    cli: Cli, root: Root, tmp_path: Path
) -> None:
    key = "ghp_" + "Z9y8X7w6" * 5
    state = ExecutorState(ExecutorConfig(root=str(root.path)))
    ok = state.record_attempt("1.1", True, 3.0, output="TASK_DONE")
    assert ok.incident_id is None and not root.inbox.exists()
    first = state.record_attempt(
        "1.2", False, 42.0, f"pytest failed: 3 tests failed (token {key})", "E assert 1 == 2"
    )
    assert first.incident_id is not None
    doc = json.loads((root.inbox / first.incident_id / "incident.json").read_text())
    assert doc["step"] == "1.2" and doc["error_code"] == first.error_code == "TEST_FAILURE"
    assert key not in json.dumps(doc) and doc["occurrences"] == 1
    context = json.loads((root.inbox / first.incident_id / "context.json").read_text())
    assert context["executor"]["task_id"] == "1.2"
    assert context["executor"]["state_file"] == str(state.path)
    assert "E assert 1 == 2" in (root.inbox / first.incident_id / "log_tail.txt").read_text()
    # the same failure again: grouped into the same incident, as capture groups
    again = state.record_attempt(
        "1.2", False, 40.0, f"pytest failed: 3 tests failed (token {key})", "E assert 1 == 2"
    )
    assert again.incident_id == first.incident_id
    doc = json.loads((root.inbox / first.incident_id / "incident.json").read_text())
    assert doc["occurrences"] == 2
    # seen like any other incident
    listed = cli("status", "--json")
    assert listed.code == 0, listed.err
    assert first.incident_id in listed.out


RECORDER = textwrap.dedent("""
    import sys
    from incidents.executor import ExecutorConfig, ExecutorState

    name, count = sys.argv[1], int(sys.argv[2])
    state = ExecutorState(ExecutorConfig(state_file=sys.argv[3]))
    print("ready", flush=True)
    sys.stdin.readline()  # both start recording together
    for i in range(count):
        state.mark_running(f"{name}-{i % 5}")
        state.record_attempt(f"{name}-{i % 5}", i % 3 == 0, 0.1, None if i % 3 == 0 else "boom")
        state.record_attempt("shared", i % 2 == 0, 0.1, None if i % 2 == 0 else "shared boom")
    print("done", flush=True)
    """)


OPENER = textwrap.dedent("""
    import os, sys, time
    from incidents.executor import ExecutorConfig, ExecutorState

    while not os.path.exists(sys.argv[2]):  # all start opening together
        time.sleep(0.001)
    ExecutorState(ExecutorConfig(state_file=sys.argv[1])).record_attempt("t", True, 0.1, None)
    """)


def test_processes_opening_a_new_state_file_at_once_all_succeed(tmp_path: Path) -> None:
    """The first open creates the file and switches it to WAL; without the folder's lock
    around that, a second opener's switch fails with "database is locked"."""
    for n in range(8):
        db, go = tmp_path / f"s{n}" / "state.db", tmp_path / f"go{n}"
        procs = [
            subprocess.Popen([sys.executable, "-c", OPENER, str(db), str(go)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
            for _ in range(4)
        ]
        time.sleep(0.3)
        go.touch()
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
        with ExecutorState(ExecutorConfig(state_file=str(db))) as state:
            assert len(state.get_task_state("t").attempts) == 4


def test_two_processes_record_at_once(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    count = 60
    procs = [
        subprocess.Popen([sys.executable, "-c", RECORDER, name, str(count), str(db)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)  # fmt: skip
        for name in ("a", "b")
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "done", err
    state = ExecutorState(ExecutorConfig(state_file=str(db)))
    conn = sqlite3.connect(db)
    per_task = dict(conn.execute("SELECT task_id, count(*) FROM attempts GROUP BY task_id"))
    conn.close()
    assert per_task["shared"] == 2 * count  # none lost, none doubled
    assert sum(per_task.values()) == 4 * count
    # the counters agree with the rows: every increment was its transaction's
    statuses = [state.get_task_state(t).status for t in state.task_ids()]
    assert state.total_completed == statuses.count("completed")
    assert state.total_failed == statuses.count("failed")
    assert os.path.getsize(db) > 0


def test_the_readme_example_runs(tmp_path: Path) -> None:
    from tests.helpers import REPO

    readme = (REPO / "README.md").read_text()
    section = readme.split("### Executor state: the loop API", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout == "0 1 0\nFalse\n"
    assert (tmp_path / "spec" / ".executor-state.db").is_file()
    # the timeout, captured; closed as fixed by the loop when the task then succeeded
    (incident,) = Root(tmp_path / "reports").bucket("resolved").iterdir()
    assert json.loads((incident / "incident.json").read_text())["step"] == "1.1"


def test_a_later_success_closes_the_tasks_open_incident_so_it_never_escalates(
    cli: Cli, root: Root
) -> None:
    """A task that fails (a reset connection) and then succeeds: the loop fixed it. Its
    incident is closed as resolved (not_reproduced), so driving the root escalates nothing,
    and five such tasks do not pause the root."""
    state = ExecutorState(ExecutorConfig(root=root))
    reset = str(ConnectionResetError(104, "Connection reset by peer"))
    closed = []
    for n in range(5):
        failed = state.record_attempt(f"fetch-{n}", False, 1.0, error=reset)
        assert failed.incident_id is not None
        assert root.locate(failed.incident_id)[0] == "inbox"
        state.record_attempt(f"fetch-{n}", True, 1.0)
        where, folder = root.locate(failed.incident_id)
        assert where == "resolved"
        result = json.loads((root.runs_dir(failed.incident_id) / "run_result.json").read_text())
        assert result["final_status"] == "resolved" and result["outcome"] == "not_reproduced"
        assert f"fetch-{n} succeeded" in result["reason"]
        closed.append(failed.incident_id)
        driven = cli("drive", failed.incident_id)  # nothing left to drive
        assert driven.code == 0 and "resolved -> resolved" in driven.out, driven.err
        shown = cli("status", failed.incident_id)
        assert "status:          resolved" in shown.out and "fixed by the loop" in shown.out
    status = cli("status", "--json")
    assert status.code == 0 and not any(i in status.out for i in closed)
    assert not state.should_stop() and not list(root.bucket("escalated").glob("incident_*"))
    # a task that never succeeds keeps its incident open, for the ladder
    still = state.record_attempt("other", False, 1.0, error=reset)
    assert still.incident_id is not None and root.locate(still.incident_id)[0] == "inbox"
    state.record_attempt("fetch-0", True, 1.0)  # another task's success closes nothing of it
    assert root.locate(still.incident_id)[0] == "inbox"
