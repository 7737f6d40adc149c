"""Seed 002's migration (incidents.executor_migrate): `.db` exists -> open it; only the
`.json` -> convert it and rename it to `.json.bak`; neither -> create. And killed at any
instant, the next open ends in a correct state and loses nothing: the process is really
killed (SIGKILL delivered by strace at the Nth write, fsync, unlink or rename it makes),
never a patched function."""

from __future__ import annotations

import functools
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from incidents.executor import ExecutorConfig, ExecutorState
from incidents.executor_db import StateFileError
from incidents.legacy import LegacyRefused

LEGACY = Path(__file__).resolve().parent / "fixtures" / "legacy"
ORIGINAL = (LEGACY / "executor-state.json").read_bytes()
OPEN = (
    "from incidents.executor import ExecutorConfig, ExecutorState; ExecutorState(ExecutorConfig())"
)


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    folder = tmp_path / "spec"
    folder.mkdir()
    (folder / ".executor-state.json").write_bytes(ORIGINAL)
    return folder


def dump(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        return {
            "tasks": list(conn.execute("SELECT * FROM tasks ORDER BY task_id")),
            "attempts": list(conn.execute("SELECT * FROM attempts ORDER BY id")),
            "meta": dict(conn.execute("SELECT key, value FROM executor_meta "
                                      "WHERE key NOT LIKE 'imported:%'")),  # fmt: skip
            "imported": [r[0] for r in conn.execute(
                "SELECT key FROM executor_meta WHERE key LIKE 'imported:%'")],  # fmt: skip
        }
    finally:
        conn.close()


def assert_migrated(spec: Path) -> None:
    """The correct end state: the whole file in the database, once; the JSON renamed to
    .bak with its bytes; nothing half-made left beside them."""
    db = spec / ".executor-state.db"
    got = dump(db)
    assert [t[0] for t in got["tasks"]] == ["1.1", "1.2", "2.1"]
    assert [(a[1], a[3], a[6]) for a in got["attempts"]] == [
        ("1.1", 0, "TIMEOUT"), ("1.1", 1, None), ("1.2", 0, "TEST_FAILURE"),
        ("1.2", 0, "RATE_LIMIT"), ("1.2", 0, "TASK_FAILED"),
    ]  # fmt: skip
    assert got["meta"] == {
        "consecutive_failures": "3", "total_completed": "1", "total_failed": "1",
        "schema_version": "1",
    }  # fmt: skip
    assert len(got["imported"]) == 1
    assert (spec / ".executor-state.json.bak").read_bytes() == ORIGINAL
    left = {p.name for p in spec.iterdir()} - {".executor-state.db-wal", ".executor-state.db-shm"}
    assert left == {".executor-state.db", ".executor-state.json.bak"}


def test_only_the_json_exists_it_is_converted_and_renamed(spec: Path) -> None:
    state = ExecutorState(ExecutorConfig())
    assert state.migration is not None and state.migration.created
    assert (state.migration.tasks, state.migration.attempts) == (3, 5)
    assert (state.consecutive_failures, state.total_completed, state.total_failed) == (3, 1, 1)
    assert state.should_stop()  # three failures in a row, carried over
    assert (
        state.get_task_state("1.1").attempts[1].claude_output == "Implemented the parser. TASK_DONE"
    )
    state.close()
    assert_migrated(spec)


def test_the_db_exists_it_is_opened_and_a_json_beside_it_left_alone(spec: Path) -> None:
    (spec / ".executor-state.json").rename(spec / "held.json")
    with ExecutorState(ExecutorConfig()) as state:
        state.record_attempt("9.9", True, 1.0)
    (spec / "held.json").rename(spec / ".executor-state.json")  # an old executor wrote it
    with ExecutorState(ExecutorConfig()) as state:
        assert state.migration is None and state.task_ids() == ["9.9"]
    assert (spec / ".executor-state.json").read_bytes() == ORIGINAL  # import-legacy merges it


def test_neither_exists_a_fresh_file_is_created(tmp_path: Path) -> None:
    with ExecutorState(ExecutorConfig()) as state:
        assert state.migration is None and state.task_ids() == []
    assert sorted(p.name for p in (tmp_path / "spec").iterdir())[0] == ".executor-state.db"


def test_a_prefixed_state_migrates_its_own_json(spec: Path) -> None:
    shutil.copyfile(LEGACY / "executor-state-list.json", spec / ".executor-auth-state.json")
    with ExecutorState(ExecutorConfig(spec_prefix="auth-")) as state:
        assert state.task_ids() == ["A", "B"]
    assert (spec / ".executor-auth-state.json.bak").is_file()
    assert (spec / ".executor-state.json").read_bytes() == ORIGINAL  # another namespace's


def test_a_corrupt_json_is_refused_and_nothing_is_created(spec: Path) -> None:
    (spec / ".executor-state.json").write_text('{"tasks": {"1": ')
    with pytest.raises(LegacyRefused, match="corrupt: not valid JSON.*left untouched"):
        ExecutorState(ExecutorConfig())
    assert [p.name for p in spec.iterdir()] == [".executor-state.json"]


def test_a_state_file_that_is_not_ours_is_refused(spec: Path, tmp_path: Path) -> None:
    (spec / ".executor-state.db").write_bytes(b"not a database at all, just text" * 100)
    with pytest.raises(StateFileError, match="not an executor state database"):
        ExecutorState(ExecutorConfig())
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE incidents (id TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StateFileError, match="of something else"):
        ExecutorState(ExecutorConfig(state_file=str(other)))
    assert dump_tables(other) == ["incidents"]  # nothing added to it


def dump_tables(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master ORDER BY name")]
    finally:
        conn.close()


# --- interrupted migrations ------------------------------------------------------------


def test_a_kill_between_the_two_renames_is_finished_by_the_next_open(spec: Path) -> None:
    """The state such a kill leaves: the database complete, the JSON not yet renamed."""
    ExecutorState(ExecutorConfig()).close()
    (spec / ".executor-state.json.bak").rename(spec / ".executor-state.json")
    with ExecutorState(ExecutorConfig()) as state:
        assert state.migration is not None and state.migration.already
    assert_migrated(spec)


def test_a_left_over_temporary_and_an_unfinished_db_are_rebuilt(spec: Path) -> None:
    (spec / ".executor-state.db.migrating").write_bytes(b"half a database")
    (spec / ".executor-state.db").write_bytes(b"")  # a creator killed at birth
    (spec / ".executor-state.db-journal").write_bytes(b"stale")
    ExecutorState(ExecutorConfig()).close()
    assert_migrated(spec)


def test_a_backup_already_there_is_never_overwritten(spec: Path) -> None:
    (spec / ".executor-state.json.bak").write_bytes(b"an older backup")
    with ExecutorState(ExecutorConfig()) as state:
        assert state.migration is not None
        assert state.migration.kept_because == ".executor-state.json.bak already exists"
    assert (spec / ".executor-state.json.bak").read_bytes() == b"an older backup"
    assert (spec / ".executor-state.json").read_bytes() == ORIGINAL
    assert len(dump(spec / ".executor-state.db")["attempts"]) == 5


@functools.cache
def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    probe = subprocess.run(["strace", "-qq", "-e", "trace=none", "true"], capture_output=True)
    return probe.returncode == 0


needs_strace = pytest.mark.skipif(not _strace_works(), reason="needs strace with ptrace allowed")
KILL_POINTS = ("pwrite64", "write", "fsync", "fdatasync", "ftruncate", "unlink", "rename")


def _calls(cwd: Path, log: Path) -> dict[str, int]:
    """How many times one migration makes each syscall of KILL_POINTS."""
    subprocess.run(
        ["strace", "-f", "-qq", "-o", str(log), "-e", f"trace={','.join(KILL_POINTS)}",
         sys.executable, "-B", "-c", OPEN],
        cwd=cwd, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    text = log.read_text()
    return {name: len(re.findall(rf"\b{name}\(", text)) for name in KILL_POINTS}


@needs_strace
def test_killed_at_every_write_fsync_unlink_and_rename_the_next_open_is_correct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "count"
    (work / "spec").mkdir(parents=True)
    (work / "spec" / ".executor-state.json").write_bytes(ORIGINAL)
    calls = _calls(work, tmp_path / "strace.log")
    assert_migrated(work / "spec")
    assert calls["rename"] == 2 and calls["fsync"] + calls["fdatasync"] >= 3, calls
    killed = 0
    for name, count in calls.items():
        for nth in range(1, count + 1):
            cwd = tmp_path / f"{name}-{nth}"
            (cwd / "spec").mkdir(parents=True)
            (cwd / "spec" / ".executor-state.json").write_bytes(ORIGINAL)
            p = subprocess.run(
                ["strace", "-f", "-qq", "-e", "signal=none", "-e", f"trace={name}",
                 "-e", f"inject={name}:signal=KILL:when={nth}",
                 sys.executable, "-B", "-c", OPEN],
                cwd=cwd, capture_output=True, timeout=120,
            )  # fmt: skip
            assert p.returncode == -9 or p.returncode == 137, (name, nth, p.stderr[-500:])
            killed += 1
            monkeypatch.chdir(cwd)  # the next open, in this process
            ExecutorState(ExecutorConfig()).close()
            assert_migrated(cwd / "spec")
    assert killed >= 10


RACER = textwrap.dedent("""
    import sys
    print("ready", flush=True)
    sys.stdin.readline()
    from incidents.executor import ExecutorConfig, ExecutorState
    state = ExecutorState(ExecutorConfig())
    print(len(state.task_ids()), bool(state.migration and state.migration.created), flush=True)
    """)


def test_two_processes_opening_one_json_convert_it_once(spec: Path, tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER], cwd=tmp_path, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]  # fmt: skip
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(out.split())
    assert sorted(results) == [["3", "False"], ["3", "True"]]  # one converted, both see it
    assert_migrated(spec)
    assert json.loads(json.dumps(dump(spec / ".executor-state.db")["imported"])) != []


# --- another program's database at the state file's path: never replaced ---------------


def _other_db(path: Path) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute("create table important(x)")
    conn.execute("insert into important values ('keep me')")
    conn.commit()
    conn.close()
    return path.read_bytes()


def test_a_json_beside_another_programs_database_is_refused_and_both_kept(spec: Path) -> None:
    db = spec / ".executor-state.db"
    before = _other_db(db)
    with pytest.raises(StateFileError, match=r"\.executor-state\.db: .*important"):
        ExecutorState(ExecutorConfig())
    assert db.read_bytes() == before
    assert (spec / ".executor-state.json").read_bytes() == ORIGINAL
    assert sorted(p.name for p in spec.iterdir()) == [".executor-state.db", ".executor-state.json"]


def test_an_unfinished_file_of_ours_is_finished_one_with_rows_is_refused(
    spec: Path, tmp_path: Path
) -> None:
    """Executor tables only, empty, no schema_version: a creator killed mid-way, finished.
    A `tasks` table holding rows without schema_version was never ours: refused."""
    conn = sqlite3.connect(spec / ".executor-state.db")
    conn.execute("CREATE TABLE executor_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.commit()
    conn.close()
    ExecutorState(ExecutorConfig()).close()
    assert_migrated(spec)

    other = tmp_path / "other"
    other.mkdir()
    (other / ".executor-state.json").write_bytes(ORIGINAL)
    db = other / ".executor-state.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE tasks (task_id TEXT PRIMARY KEY, status TEXT)")
    conn.execute("INSERT INTO tasks VALUES ('1', 'someone else')")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with pytest.raises(StateFileError, match="`tasks` table holds rows.*not an executor state"):
        ExecutorState(ExecutorConfig(state_file=str(db)))
    assert db.read_bytes() == before
    assert (other / ".executor-state.json").read_bytes() == ORIGINAL


def test_import_legacy_into_a_reports_roots_mirror_is_refused(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    subprocess.run(
        [sys.executable, "-m", "incidents", "capture", "--step", "build", "--message", "boom"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run([sys.executable, "-m", "incidents", "status"], cwd=tmp_path, check=True,
                   capture_output=True)  # fmt: skip
    mirror = reports / ".state" / "mirror.sqlite3"
    assert mirror.is_file()
    before = mirror.read_bytes()
    leg = tmp_path / "leg.json"
    leg.write_bytes(ORIGINAL)
    p = subprocess.run(
        [sys.executable, "-m", "incidents", "import-legacy", str(leg), "--state-file", str(mirror)],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert "mirror.sqlite3" in p.stderr and "not an executor state file" in p.stderr
    assert mirror.read_bytes() == before
    assert leg.read_bytes() == ORIGINAL and not (tmp_path / "leg.json.bak").exists()
