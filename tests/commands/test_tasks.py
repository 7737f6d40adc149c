"""`incidents tasks [STATE_FILE] [--json]`: an executor state file's tasks and attempts."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from incidents.executor import ExecutorConfig, ExecutorState
from tests.helpers import FIXTURES, Cli


def test_tasks_lists_tasks_and_their_attempts(cli: Cli, tmp_path: Path) -> None:
    with ExecutorState(ExecutorConfig()) as state:
        state.mark_running("1.1")
        state.record_attempt("1.1", False, 30.0, "Task timed out after 30 seconds\nmore", "x")
        state.record_attempt("1.1", True, 12.25, output="TASK_DONE")
        state.mark_running("1.2")
        t11 = state.get_task_state("1.1")
        t12 = state.get_task_state("1.2")
    r = cli("tasks")
    assert r.code == 0, r.err
    db = tmp_path / "spec" / ".executor-state.db"
    a1, a2 = t11.attempts
    assert t11.started_at is not None and t11.completed_at is not None
    assert t12.started_at is not None
    width = len(t11.started_at)
    assert r.out.splitlines() == [
        f"{db}: 2 task(s); consecutive_failures=0 total_completed=1 total_failed=0",
        "TASK  STATUS     ATTEMPTS  " + "STARTED".ljust(width) + "  COMPLETED",
        f"1.1   completed  2         {t11.started_at}  {t11.completed_at}",
        f"    #1 {a1.timestamp} failed 30.0s TIMEOUT Task timed out after 30 seconds more",
        f"    #2 {a2.timestamp} ok 12.2s -",
        f"1.2   running    0         {t12.started_at}  -",
    ]
    doc = cli("tasks", str(db), "--json").json()
    assert doc["state_file"] == str(db) and doc["total_completed"] == 1
    assert [t["task_id"] for t in doc["tasks"]] == ["1.1", "1.2"]
    assert doc["tasks"][0]["attempts"][0] == {
        "id": a1.id, "timestamp": a1.timestamp, "success": False, "duration_seconds": 30.0,
        "error": "Task timed out after 30 seconds\nmore", "error_code": "TIMEOUT",
        "claude_output": "x",
    }  # fmt: skip


def test_tasks_reads_only(cli: Cli, tmp_path: Path) -> None:
    """It never creates a file, nor migrates a JSON it finds: it says what to run."""
    r = cli("tasks")
    assert r.code == 2 and r.out == ""
    assert r.err == f"incidents: {tmp_path}/spec/.executor-state.db: no such executor state file\n"
    assert not (tmp_path / "spec").exists()
    (tmp_path / "spec").mkdir()
    legacy = tmp_path / "spec" / ".executor-state.json"
    shutil.copyfile(FIXTURES / "legacy" / "executor-state.json", legacy)
    r = cli("tasks")
    assert r.code == 2 and f"run `incidents import-legacy {legacy}`" in r.err, r.err
    assert [p.name for p in (tmp_path / "spec").iterdir()] == [".executor-state.json"]
    assert cli("import-legacy", str(legacy)).code == 0
    r = cli("tasks")
    assert r.code == 0 and "3 task(s); consecutive_failures=3" in r.out, r.err
    assert f"imported from {legacy} at " in r.out


def test_tasks_refuses_a_file_that_is_not_a_state_file(cli: Cli, tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"definitely not sqlite" * 50)
    r = cli("tasks", str(junk))
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err.startswith(f"incidents: {junk}: not an executor state database"), r.err
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    r = cli("tasks", str(other))
    assert r.code == 2 and "not an executor state file (no `tasks` table)" in r.err, r.err
    r = cli("tasks", str(tmp_path))
    assert r.code == 2 and "not a regular file" in r.err, r.err
