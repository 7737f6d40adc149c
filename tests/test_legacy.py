"""`incidents import-legacy`: seed 002's `.executor-state.json` into the SQLite mirror."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import Cli

LEGACY = Path(__file__).resolve().parent / "fixtures" / "legacy"


@pytest.fixture
def state_file(tmp_path: Path) -> Path:
    spec = tmp_path / "spec"
    spec.mkdir()
    path = spec / ".executor-state.json"
    shutil.copyfile(LEGACY / "executor-state.json", path)
    return path


def rows(root: Root, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with sqlite3.connect(root.db_path) as conn:
        return list(conn.execute(sql, params))


def test_import_a_realistic_file(cli: Cli, root: Root, state_file: Path) -> None:
    r = cli("import-legacy", str(state_file))
    assert r.code == 0, r.err
    backup = state_file.with_name(".executor-state.json.bak")
    assert (
        not state_file.exists()
        and backup.read_bytes() == (LEGACY / "executor-state.json").read_bytes()
    )
    lines = r.out.splitlines()
    assert lines[0].startswith(f"{state_file}: imported: 3 task(s), 5 attempt(s) as run legacy_")
    assert lines[1] == f"renamed to {backup}"
    ((run_id, source),) = rows(root, "SELECT run_id, source FROM runs WHERE run_id LIKE 'legacy_%'")
    assert source == str(state_file)
    attempts = rows(root, "SELECT ws_id, label, started_at, result_json FROM step_attempts "
                          "WHERE step_name = 'legacy_attempt' ORDER BY ws_id, label")  # fmt: skip
    assert [(str(w).rsplit(":", 1)[1], label) for w, label, _, _ in attempts] == [
        ("1.1", "0"), ("1.1", "1"), ("1.2", "0"), ("1.2", "1"), ("1.2", "2"),
    ]  # fmt: skip
    results = [json.loads(str(a[3])) for a in attempts]
    assert [r["error_code"] for r in results] == [
        "TIMEOUT",
        None,
        "TEST_FAILURE",
        "RATE_LIMIT",
        "TASK_FAILED",
    ]
    assert results[3]["error_code_source"].startswith("pattern")  # classified: the file had none
    assert "sk-ant-api03" not in json.dumps(results)  # secrets redacted before the mirror
    assert attempts[0][2] == "2026-02-20T09:00:02+00:00"
    tasks = rows(root, "SELECT result_json FROM step_attempts WHERE step_name = 'legacy_task'")
    assert sorted(json.loads(str(t[0]))["status"] for t in tasks) == [
        "completed",
        "failed",
        "pending",
    ]
    events = rows(root, "SELECT event_type, count(*) FROM events WHERE event_type LIKE 'legacy_%' "
                        "GROUP BY event_type ORDER BY event_type")  # fmt: skip
    assert events == [("legacy_attempt", 5), ("legacy_task", 3)]
    ((marker,),) = rows(root, "SELECT value FROM meta WHERE key LIKE 'legacy_import:%'")
    meta = json.loads(str(marker))
    assert meta["run_id"] == run_id and meta["meta"] == {
        "consecutive_failures": 3, "total_completed": 1, "total_failed": 1,
    }  # fmt: skip


def test_a_repeat_import_imports_nothing_twice(cli: Cli, root: Root, state_file: Path) -> None:
    assert cli("import-legacy", str(state_file)).code == 0
    before = rows(root, "SELECT count(*) FROM step_attempts"), rows(
        root, "SELECT count(*) FROM events"
    )
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
    # the .bak itself: same content, nothing new, and it keeps its name (no .bak.bak)
    r = cli("import-legacy", str(state_file.with_name(".executor-state.json.bak")))
    assert (
        r.code == 0 and "already imported; nothing imported twice: 0 task(s), 0 attempt(s)" in r.out
    )
    assert state_file.with_name(".executor-state.json.bak").is_file()
    assert not state_file.with_name(".executor-state.json.bak.bak").exists()
    after = rows(root, "SELECT count(*) FROM step_attempts"), rows(
        root, "SELECT count(*) FROM events"
    )
    assert after == before


def test_an_updated_file_adds_only_its_new_attempts(cli: Cli, root: Root, state_file: Path) -> None:
    assert cli("import-legacy", str(state_file)).code == 0
    doc = json.loads((LEGACY / "executor-state.json").read_text())
    doc["tasks"]["2.1"]["attempts"].append(
        {"timestamp": "2026-02-21T08:00:00+00:00", "success": True, "duration_seconds": 9.5}
    )
    state_file.with_name(".executor-state.json.bak").unlink()
    state_file.write_text(json.dumps(doc))
    r = cli("import-legacy", str(state_file))
    assert r.code == 0 and ": imported: 0 task(s), 1 attempt(s)" in r.out, r.out + r.err


def test_tasks_as_a_list_with_attempts_beside_them(cli: Cli, root: Root, tmp_path: Path) -> None:
    path = tmp_path / ".executor-state.json"
    shutil.copyfile(LEGACY / "executor-state-list.json", path)
    r = cli("import-legacy", str(path))
    assert r.code == 0 and "imported: 2 task(s), 2 attempt(s)" in r.out, r.out + r.err
    codes = rows(root, "SELECT json_extract(result_json, '$.error_code') FROM step_attempts "
                       "WHERE step_name = 'legacy_attempt' ORDER BY ws_id")  # fmt: skip
    assert codes == [(None,), ("HOOK_FAILURE",)]


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
    cli: Cli, root: Root, tmp_path: Path, content: str | bytes, problem: str
) -> None:
    path = tmp_path / ".executor-state.json"
    data = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(data)
    r = cli("import-legacy", str(path))
    assert r.code == 2, r.out
    assert r.err.startswith(f"incidents: {path}")
    assert problem in r.err and "left untouched" in r.err, r.err
    assert path.read_bytes() == data and not path.with_name(path.name + ".bak").exists()
    assert rows(root, "SELECT count(*) FROM step_attempts") == [(0,)]
    assert rows(root, "SELECT count(*) FROM meta WHERE key LIKE 'legacy_import:%'") == [(0,)]


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


def test_imported_history_survives_a_reindex(cli: Cli, root: Root, state_file: Path) -> None:
    assert cli("import-legacy", str(state_file)).code == 0
    before = rows(root, "SELECT run_id FROM runs WHERE run_id LIKE 'legacy%'")
    attempts = rows(root, "SELECT count(*) FROM step_attempts WHERE step_name = 'legacy_attempt'")
    assert before and attempts[0][0] > 0
    assert cli("reindex").code == 0
    assert rows(root, "SELECT run_id FROM runs WHERE run_id LIKE 'legacy%'") == before
    assert (
        rows(root, "SELECT count(*) FROM step_attempts WHERE step_name = 'legacy_attempt'")
        == attempts
    )


def test_the_backup_rebuilds_a_lost_mirrors_legacy_rows(
    cli: Cli, root: Root, state_file: Path
) -> None:
    """Legacy history lives only in the database: after losing it, importing the .bak
    gives back the same rows under the same ids, and the .bak stays as it is."""
    assert cli("import-legacy", str(state_file)).code == 0
    query = (
        "SELECT run_id, ws_id, step_name, label, result_json FROM step_attempts ORDER BY 1, 2, 3, 4"
    )
    first = rows(root, query)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    backup = state_file.with_name(".executor-state.json.bak")
    r = cli("import-legacy", str(backup))
    assert r.code == 0 and "already imported" not in r.out, r.out + r.err
    assert rows(root, query) == first and first
    assert backup.is_file() and not state_file.exists()


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_a_file_that_cannot_be_renamed_is_imported_and_left_in_place(root: Root, state_file: Path) -> None:  # fmt: skip
    state_file.parent.chmod(0o555)  # the folder refuses the rename (root too, without caps)
    try:
        argv = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", sys.executable, "-m",
                "incidents", "import-legacy", "--root", str(root.path), str(state_file)]  # fmt: skip
        for _ in range(2):  # and a rerun imports nothing twice, still without a crash
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stderr
            assert "left in place: it could not be renamed" in p.stdout, p.stdout
        assert "already imported" in p.stdout and state_file.exists()
    finally:
        state_file.parent.chmod(0o755)
