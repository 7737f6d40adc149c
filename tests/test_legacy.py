"""`incidents import-legacy`: seed 002's `.executor-state.json` into the SQLite state file
beside it (`.executor-state.db`, incidents.executor_migrate), shown by `incidents tasks`."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Cli

LEGACY = Path(__file__).resolve().parent / "fixtures" / "legacy"


@pytest.fixture
def state_file(tmp_path: Path) -> Path:
    spec = tmp_path / "spec"
    spec.mkdir()
    path = spec / ".executor-state.json"
    shutil.copyfile(LEGACY / "executor-state.json", path)
    return path


def rows(db: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


def test_import_a_realistic_file(cli: Cli, state_file: Path) -> None:
    r = cli("import-legacy", str(state_file))
    assert r.code == 0, r.err
    backup = state_file.with_name(".executor-state.json.bak")
    db = state_file.with_name(".executor-state.db")
    assert (
        not state_file.exists()
        and backup.read_bytes() == (LEGACY / "executor-state.json").read_bytes()
    )
    assert r.out.splitlines() == [
        f"{state_file}: imported: 3 task(s), 5 attempt(s) into {db}",
        f"renamed to {backup}",
    ]
    attempts = rows(db, "SELECT task_id, timestamp, success, duration_seconds, error_code, "
                        "claude_output FROM attempts ORDER BY id")  # fmt: skip
    assert [(a[0], a[2], a[4]) for a in attempts] == [
        ("1.1", 0, "TIMEOUT"), ("1.1", 1, None), ("1.2", 0, "TEST_FAILURE"),
        ("1.2", 0, "RATE_LIMIT"),  # classified: the file had none
        ("1.2", 0, "TASK_FAILED"),
    ]  # fmt: skip
    assert attempts[0][1] == "2026-02-20T09:00:02+00:00" and attempts[0][3] == 300.0
    assert "sk-ant-api03" not in json.dumps(attempts)  # secrets redacted in the state file
    assert "[REDACTED]" in str(attempts[2][5])
    assert rows(db, "SELECT task_id, status, completed_at FROM tasks ORDER BY task_id") == [
        ("1.1", "completed", "2026-02-20T09:07:41+00:00"),
        ("1.2", "failed", None),
        ("2.1", "pending", None),
    ]
    meta = dict(rows(db, "SELECT key, value FROM executor_meta"))
    assert (meta["consecutive_failures"], meta["total_completed"], meta["total_failed"]) == (
        "3", "1", "1",
    )  # fmt: skip
    shown = cli("tasks", str(db), "--json")
    assert shown.code == 0, shown.err
    doc = shown.json()
    assert [t["task_id"] for t in doc["tasks"]] == ["1.1", "1.2", "2.1"]
    assert [i["path"] for i in doc["imported"]] == [str(state_file)]


def test_a_repeat_import_imports_nothing_twice(cli: Cli, state_file: Path) -> None:
    db = state_file.with_name(".executor-state.db")
    assert cli("import-legacy", str(state_file)).code == 0
    before = rows(db, "SELECT count(*) FROM attempts")
    # the same path again: the file is now .bak
    r = cli("import-legacy", str(state_file))
    assert r.code == 0, r.err
    assert r.out.strip().endswith("nothing to do") and "already imported" in r.out
    # the same content again (an executor restored the file): nothing imported twice
    shutil.copyfile(LEGACY / "executor-state.json", state_file)
    r = cli("import-legacy", "--json", str(state_file))
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["already_imported"] is True and doc["tasks"] == doc["attempts"] == 0
    # the .bak is never overwritten: this copy stays where it is
    assert doc["renamed_to"] is None and state_file.exists()
    assert doc["left_in_place"] == ".executor-state.json.bak already exists"
    # the .bak itself: same content, nothing new, and it keeps its name (no .bak.bak)
    r = cli("import-legacy", str(state_file.with_name(".executor-state.json.bak")))
    assert (
        r.code == 0 and "already imported; nothing imported twice: 0 task(s), 0 attempt(s)" in r.out
    )
    assert state_file.with_name(".executor-state.json.bak").is_file()
    assert not state_file.with_name(".executor-state.json.bak.bak").exists()
    assert rows(db, "SELECT count(*) FROM attempts") == before == [(5,)]


def test_an_updated_file_adds_only_its_new_attempts(cli: Cli, state_file: Path) -> None:
    assert cli("import-legacy", str(state_file)).code == 0
    doc = json.loads((LEGACY / "executor-state.json").read_text())
    doc["tasks"]["2.1"]["attempts"].append(
        {"timestamp": "2026-02-21T08:00:00+00:00", "success": True, "duration_seconds": 9.5}
    )
    doc["tasks"]["3.1"] = {"status": "pending"}
    state_file.with_name(".executor-state.json.bak").unlink()
    state_file.write_text(json.dumps(doc))
    r = cli("import-legacy", str(state_file))
    assert r.code == 0 and ": imported: 1 task(s), 1 attempt(s)" in r.out, r.out + r.err
    db = state_file.with_name(".executor-state.db")
    assert rows(db, "SELECT count(*) FROM attempts") == [(6,)]
    # the live state keeps its own status for a task it already had
    assert rows(db, "SELECT status FROM tasks WHERE task_id = '2.1'") == [("pending",)]


def test_tasks_as_a_list_with_attempts_beside_them(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / ".executor-state.json"
    shutil.copyfile(LEGACY / "executor-state-list.json", path)
    r = cli("import-legacy", str(path))
    assert r.code == 0 and "imported: 2 task(s), 2 attempt(s)" in r.out, r.out + r.err
    db = tmp_path / ".executor-state.db"
    codes = rows(db, "SELECT task_id, error_code FROM attempts ORDER BY task_id")
    assert codes == [("A", None), ("B", "HOOK_FAILURE")]
    assert rows(db, "SELECT value FROM executor_meta WHERE key = 'consecutive_failures'") == [
        ("1",)
    ]


def test_another_state_file_and_a_prefixed_name(cli: Cli, tmp_path: Path) -> None:
    """`.executor-{prefix}state.json` goes to `.executor-{prefix}state.db`; `--state-file`
    names another target."""
    path = tmp_path / ".executor-auth-state.json"
    shutil.copyfile(LEGACY / "executor-state-list.json", path)
    assert cli("import-legacy", str(path)).code == 0
    assert (tmp_path / ".executor-auth-state.db").is_file()
    other = tmp_path / "elsewhere.db"
    shutil.copyfile(LEGACY / "executor-state.json", path)
    path.with_name(path.name + ".bak").unlink()
    r = cli("import-legacy", str(path), "--state-file", str(other))
    assert r.code == 0 and f"into {other}" in r.out, r.out + r.err
    assert rows(other, "SELECT count(*) FROM attempts") == [(5,)]
    r = cli("import-legacy", str(path), "--state-file", str(tmp_path / "no" / "such.db"))
    assert r.code == 2 and "no such folder" in r.err, r.err


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"tasks": {"1.1": {"status": "completed", "attempts": [', "corrupt: not valid JSON"),
        (b"\xff\xfe{}", "corrupt: not UTF-8"),
        ('["not", "a", "state"]', "expected a JSON object with `tasks`, got list"),
        ('{"version": 2}', "no `tasks` key: this is not an executor state file"),
        ('{"tasks": {"1.1": {"attempts": {"0": {}}}}}', "tasks.1.1.attempts: expected a list"),
        (
            '{"tasks": {"1.1": {"attempts": [{"success": "yes"}]}}}',
            "tasks.1.1.attempts[0].success: expected true or false",
        ),
        ('{"tasks": {"1": {"attempts": [{"error_code": "BOOM"}]}}}', "unknown error code 'BOOM'"),
        ('{"tasks": {"1": {}, "1": {}}}', "corrupt: not valid JSON: duplicate key '1'"),
    ],
)
def test_a_corrupt_or_wrong_file_is_refused_and_left_untouched(
    cli: Cli, tmp_path: Path, content: str | bytes, problem: str
) -> None:
    path = tmp_path / ".executor-state.json"
    data = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(data)
    r = cli("import-legacy", str(path))
    assert r.code == 2, r.out
    assert r.err.startswith(f"incidents: {path}")
    assert problem in r.err and "left untouched" in r.err, r.err
    assert path.read_bytes() == data and not path.with_name(path.name + ".bak").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".executor-state.json"]  # no .db


def test_an_unreadable_path_is_refused(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.json"
    folder.mkdir()
    r = cli("import-legacy", str(folder))
    assert r.code == 2 and str(folder) in r.err, r.err
    assert "is not a regular file" in r.err or "is a directory" in r.err, r.err
    link = tmp_path / "link.json"
    link.symlink_to(LEGACY / "executor-state.json")
    r = cli("import-legacy", str(link))
    assert r.code == 2 and "symbolic link" in r.err and link.is_symlink(), r.err
    r = cli("import-legacy", str(tmp_path / "missing.json"))
    assert r.code == 2 and "no such file" in r.err


def test_the_backup_rebuilds_a_lost_state_file(cli: Cli, state_file: Path) -> None:
    """After the state file is lost, importing the .bak gives back the same rows, and the
    .bak stays as it is."""
    assert cli("import-legacy", str(state_file)).code == 0
    db = state_file.with_name(".executor-state.db")
    query = "SELECT * FROM attempts ORDER BY id"
    first = rows(db, query)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    backup = state_file.with_name(".executor-state.json.bak")
    r = cli("import-legacy", str(backup))
    assert r.code == 0 and "already imported" not in r.out, r.out + r.err
    assert "left in place: .executor-state.json.bak is already the backup" in r.out
    assert rows(db, query) == first and first
    assert backup.is_file() and not state_file.exists()


def drop_caps(*argv: str) -> list[str]:
    """argv run without capabilities: a read-only folder refuses it even as root."""
    return ["setpriv", "--inh-caps=-all", "--bounding-set=-all", sys.executable, "-m",
            "incidents", *argv]  # fmt: skip


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_a_read_only_folder_refuses_the_conversion_and_loses_nothing(
    state_file: Path, tmp_path: Path
) -> None:
    state_file.parent.chmod(0o555)  # no state file can be made beside it, no rename
    try:
        p = subprocess.run(drop_caps("import-legacy", str(state_file)),
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert p.returncode == 2, p.stdout + p.stderr
        assert p.stderr.startswith(f"incidents: cannot create {state_file.parent}/"), p.stderr
        assert "Permission denied" in p.stderr and "left untouched" in p.stderr, p.stderr
        assert len(p.stderr.splitlines()) == 1
        assert sorted(f.name for f in state_file.parent.iterdir()) == [".executor-state.json"]
        # into a state file elsewhere: converted, and the JSON stays (it cannot be renamed)
        other = tmp_path / "state.db"
        for _ in range(2):  # and a rerun imports nothing twice, still without a crash
            argv = drop_caps("import-legacy", str(state_file), "--state-file", str(other))
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stderr
            assert "left in place: it could not be renamed" in p.stdout, p.stdout
        assert "already imported" in p.stdout and state_file.exists()
        assert rows(other, "SELECT count(*) FROM attempts") == [(5,)]
    finally:
        state_file.parent.chmod(0o755)


def test_a_large_file_of_loose_attempts_reads_in_linear_time(tmp_path: Path) -> None:
    from incidents import legacy

    n = 4000  # ~2.5 MB: each task's attempts beside the tasks, as one executor kept them
    doc = {
        "tasks": [{"task_id": f"t{i}", "status": "completed"} for i in range(n)],
        "attempts": [
            {"task_id": f"t{i}", "timestamp": f"2026-02-20T10:{i % 60:02d}:00Z",
             "success": k == 4, "duration_seconds": 1.5, "error": None if k == 4 else "x" * 80}
            for i in range(n) for k in range(5)
        ],
    }  # fmt: skip
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    assert path.stat().st_size > 1_500_000
    started = time.monotonic()
    state, _ = legacy.read(path)
    took = time.monotonic() - started
    assert sum(len(t.attempts) for t in state.tasks) == 5 * n
    assert took < 5.0, f"{took:.1f}s"  # quadratic (a scan of every attempt per task): ~20 s


def test_loose_attempts_of_a_task_the_file_does_not_list_are_kept(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({
        "tasks": {"a": {"status": "completed", "attempts": []}},
        "attempts": [
            {"task_id": "a", "timestamp": "2026-02-20T10:00:00Z", "success": True},
            {"task_id": "ghost", "timestamp": "2026-02-20T10:01:00Z", "success": False,
             "error": "Task timed out after 300 seconds"},
            {"task_id": "ghost", "timestamp": "2026-02-20T10:02:00Z", "success": True},
        ],
    }))  # fmt: skip
    assert cli("import-legacy", str(path)).code == 0
    shown = cli("tasks", str(tmp_path / "state.db"), "--json")
    tasks = {t["task_id"]: t for t in json.loads(shown.out)["tasks"]}
    assert tasks["ghost"]["status"] == "completed"
    assert [a["success"] for a in tasks["ghost"]["attempts"]] == [False, True]
    assert tasks["ghost"]["attempts"][0]["error_code"] == "TIMEOUT"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"tasks": {"a": {"attempts": [{"duration_seconds": 1e999}]}}}', "duration_seconds"),
        ('{"tasks": {"a": {"attempts": [{"duration_seconds": -3}]}}}', "duration_seconds"),
        ('{"tasks": {}, "total_failed": -1}', "total_failed"),
        ('{"tasks": {}, "attempts": [{"success": true}]}', "attempts[0].task_id"),
    ],
)
def test_impossible_numbers_are_refused_and_nothing_is_created(
    tmp_path: Path, text: str, field: str
) -> None:
    path = tmp_path / "state.json"
    path.write_text(text)
    p = subprocess.run([sys.executable, "-m", "incidents", "import-legacy", str(path)],
                       cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 2 and field in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
    assert path.read_text() == text and not (tmp_path / "state.db").exists()
