"""Invariant I5 end to end: the mirror is a function of the folders.

Real processes on a real root: captures and repeats, a hand-off (claim, submit), the
watcher (SIGKILLed mid-run) with a stand-in fixer, human decisions (requeue, resolve),
pause/resume, archive; then the live database is compared, table by table and
row by row, with the one `reindex` builds after the file is deleted.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import BROKEN, CLEAN, FIXED, MESSY, incidents
from tests.stand_ins import stand_in
from tests.watch.helpers import closed, places, stop, wait_until

CONFIG = """\
[checks]
tools = ["ruff"]
cache = false
[policy]
signature_budget = 1
escalation_threshold = 0
[tiers.aider]
mode = "on"
[tiers.codex]
mode = "off"
[tiers.claude]
mode = "off"
[watch]
poll_s = 0.5
stable_s = 0.2
"""
# the stand-in fixer mends f.py only once a human's guidance reaches its prompt: the first
# climb escalates, a requeue with the guidance resolves
AIDER = """
prompt = pathlib.Path(sys.argv[sys.argv.index("--message-file") + 1]).read_text()
if "close the parenthesis" in prompt:
    pathlib.Path("f.py").write_text("def f() -> None:\\n    pass\\n")
"""

# Columns left out of the comparison, each for a reason:
# - `id` of events, step_attempts and escalations: an autoincrement row id. The live mirror
#   numbers rows in the order the processes wrote them (incidents interleaved), a rebuild
#   in the order it reads the folders; the stable identity of an event is its key
#   (`event_key`, compared), of a step attempt (ws_id, step_name, label), of an escalation
#   (incident_id, ts).
# - the tables `meta` (when the mirror was rebuilt or exported: about the database file,
#   not the incidents) and `event_files` (how far this database has read each events.jsonl).
# - `sqlite_sequence`: the highest event id ever given (events.id is AUTOINCREMENT, so the
#   id of an event deleted with an incident set aside is not given again); like the ids.
IGNORED = {"events": {"id"}, "step_attempts": {"id"}, "escalations": {"id"}}
# real processes write the root's SQLite file and the tests read it: SQLite's tests (the
# rebuild-equals-live check runs on PostgreSQL in test_rebuild.py, in-process)
pytestmark = pytest.mark.parametrize("backend", ["sqlite"])

BOOKKEEPING = {
    "meta",
    "event_files",
    "hosts",
    "sqlite_sequence",
}  # hosts: when each host last reported


def tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        found: dict[str, list[tuple[Any, ...]]] = {}
        for name in names:
            if name in BOOKKEEPING:
                continue
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({name})")]
            kept = [c for c in columns if c not in IGNORED.get(name, set())]
            rows = conn.execute(f"SELECT {', '.join(kept)} FROM {name}").fetchall()
            found[name] = sorted(rows, key=repr)
        return found
    finally:
        conn.close()


def env_for(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    stand_in(bin_dir, "aider", AIDER)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "INCIDENTS_ROOT": str(tmp / "reports"),
        "INCIDENTS_CONFIG": str(tmp / "incidents.toml"),
    }


def capture(tmp: Path, env: dict[str, str], name: str, content: str, *, dedupe: bool) -> str:
    ws = tmp / "work" / name
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "f.py").write_text(content)
    args = ["capture", "--step", f"step_{name}", "--message", "f.py failed its checks",
            "--python-file", "f.py", "--workdir", str(ws)]  # fmt: skip
    p = incidents(*args, *([] if dedupe else ["--no-dedupe"]), env=env, cwd=tmp)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def watch(tmp: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "incidents", "watch", *args],
        cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def until_idle(tmp: Path, env: dict[str, str]) -> None:
    p = incidents("watch", "--until-idle", "--workers", "2", env=env, cwd=tmp, timeout=300)
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_a_randomized_run_then_reindex_gives_every_table_row_by_row(
    tmp_path: Path, root: Root
) -> None:
    (tmp_path / "incidents.toml").write_text(CONFIG)
    env = env_for(tmp_path)
    rng = random.Random(1515)
    kinds = {"broken": BROKEN, "messy": MESSY, "clean": CLEAN}
    ids: list[str] = []
    for i in range(18):
        kind = rng.choice(sorted(kinds))
        ids.append(capture(tmp_path, env, f"r{i}_{kind}", kinds[kind], dedupe=False))
    # repeats fold into an open incident (occurrence events)
    repeat = capture(tmp_path, env, "rep", BROKEN, dedupe=True)
    assert capture(tmp_path, env, "rep", BROKEN, dedupe=True) == repeat
    ids.append(repeat)
    # one archived by hand before anything works on it
    by_hand = capture(tmp_path, env, "by_hand", CLEAN, dedupe=False)
    p = incidents("archive", by_hand, "--resolved", "--reason", "a duplicate", env=env)
    assert p.returncode == 0, p.stderr
    # it comes back: a recurrence (a hand close verified no fix); a merge and a split move
    # incidents' groups
    regressed = capture(tmp_path, env, "by_hand", CLEAN, dedupe=True)
    ids.append(regressed)
    for args in (["merge", ids[0], ids[1]], ["merge", ids[0], by_hand], ["split", ids[2]]):
        p = incidents("group", *args, "--reason", "decided by a person", env=env)
        assert p.returncode == 0, p.stderr
    # one handed off to an outside agent (aider's tier in handoff mode when it began):
    # next, claim, submit; the watcher does the recheck
    (tmp_path / "handoff.toml").write_text(CONFIG.replace('mode = "on"', 'mode = "handoff"'))
    handed = capture(tmp_path, env, "handed", BROKEN, dedupe=False)
    ids.append(handed)
    env_handoff = {**env, "INCIDENTS_CONFIG": str(tmp_path / "handoff.toml")}
    assert "AWAIT_HANDOFF" in incidents("drive", handed, env=env_handoff).stdout
    claim = incidents("claim", handed, "--agent", "skill", "--lease", "30m", env=env_handoff)
    assert claim.returncode == 0, claim.stderr
    (tmp_path / "work" / "handed" / "f.py").write_text(FIXED)
    p = incidents("submit", handed, "--notes", "closed it", "--agent", "skill", env=env_handoff)
    assert p.returncode == 0, p.stderr
    assert incidents("pause", "--reason", "maintenance", env=env).returncode == 0
    assert incidents("resume", env=env).returncode == 0
    # two the watcher sets aside, one after a step worked on it (events, a workstream, step
    # attempts in the mirror): a link where log_tail.txt was, an incident.json that is a list
    worked = capture(tmp_path, env, "worked", BROKEN, dedupe=False)
    assert "AWAIT_HANDOFF" in incidents("drive", worked, env=env_handoff).stdout
    outside = tmp_path / "outside.txt"
    outside.write_text("not the bundle's\n")
    (root.inbox / worked / "log_tail.txt").unlink(missing_ok=True)
    (root.inbox / worked / "log_tail.txt").symlink_to(outside)
    typed = capture(tmp_path, env, "typed", CLEAN, dedupe=False)
    (root.inbox / typed / "incident.json").write_text("[1, 2]\n")

    for _ in range(4):  # the watcher SIGKILLed at random moments, then restarted
        proc = watch(tmp_path, env, "--workers", "2", "--poll", "0.3")
        time.sleep(rng.uniform(0.6, 2.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    until_idle(tmp_path, env)
    assert closed(root, ids)
    assert places(root)[worked] == ["error_rejected"] and places(root)[typed] == ["error_rejected"]

    escalated = sorted(i for i, w in places(root).items() if w == ["error_archive/escalated"])
    assert len(escalated) >= 3, places(root)
    for n, incident_id in enumerate(escalated):
        args = ["resolve-escalation", incident_id, "--guidance", "close the parenthesis"]
        p = incidents(*args, *(["--requeue"] if n % 2 == 0 else []), env=env)
        assert p.returncode == 0, p.stderr
    proc = watch(tmp_path, env, "--workers", "2", "--poll", "0.3")
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    until_idle(tmp_path, env)
    assert closed(root, ids)

    live = tmp_path / "live.db"
    with sqlite3.connect(root.db_path) as src, sqlite3.connect(live) as dst:
        src.backup(dst)
    before = tables(live)
    assert len(before["events"]) > 100 and len(before["step_attempts"]) > 20
    assert len(before["escalations"]) >= 3 and before["errors"]
    grouped = {r[0]: r for r in before["incidents"]}
    assert any("merge" in str(r) for r in grouped.values())
    assert any("split:" in str(r) for r in grouped.values())
    _, folder = root.locate(regressed)
    assert json.loads((folder / "incident.json").read_text())["recurrence_of"] == by_hand
    assert by_hand not in str(grouped[regressed])  # linked, not counted as its regression
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    p = incidents("reindex", env=env)
    assert p.returncode == 0, p.stderr
    after = tables(root.db_path)
    assert set(after) == set(before)
    for name in sorted(before):
        lost = [r for r in before[name] if r not in after[name]]
        gained = [r for r in after[name] if r not in before[name]]
        assert (
            after[name] == before[name]
        ), f"{name}: live only {lost[:3]}, rebuilt only {gained[:3]}"


def test_a_pickup_killed_between_its_commit_and_the_mirror_keeps_its_events(
    tmp_path: Path, root: Root
) -> None:
    """SIGKILL just after a tick's commit (state.json renamed), before the mirror is
    written: the next pickup's sync reads the lines the killed tick wrote."""
    (tmp_path / "incidents.toml").write_text(CONFIG)
    env = env_for(tmp_path)
    reference = capture(tmp_path, env, "ref", MESSY, dedupe=False)
    assert incidents("drive", reference, env=env).returncode == 0
    killed = capture(tmp_path, env, "killed", MESSY, dedupe=False)
    driver = Path(__file__).parents[1] / "step" / "kill_driver.py"
    p = subprocess.run(
        [sys.executable, str(driver), "2", "after", "drive", killed],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == -signal.SIGKILL
    assert incidents("drive", killed, env=env).returncode == 0

    def kinds(incident_id: str) -> list[tuple[str, str]]:
        with sqlite3.connect(root.db_path) as conn:
            rows = conn.execute(
                "SELECT event_type, payload_json FROM events WHERE incident_id = ? ORDER BY id",
                (incident_id,),
            ).fetchall()
        return [(t, json.loads(p).get("to_state", "")) for t, p in rows if t != "stale_artifacts"]

    assert kinds(killed) == kinds(reference)
    assert ("state_transition", "S0_BASELINE_CHECK") in kinds(killed)


def test_deleting_the_database_under_a_running_watcher(tmp_path: Path, root: Root) -> None:
    """The watcher finds its kept connection's file gone: the new file is rebuilt from the
    folders before anything is written to it, and `status` lists every incident."""
    (tmp_path / "incidents.toml").write_text(CONFIG)
    env = env_for(tmp_path)
    first = [capture(tmp_path, env, f"a{i}", CLEAN, dedupe=False) for i in range(6)]
    proc = watch(tmp_path, env, "--workers", "1", "--poll", "0.3")
    try:
        assert wait_until(lambda: closed(root, first), 90)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
        later = capture(tmp_path, env, "later", CLEAN, dedupe=False)
        assert wait_until(lambda: closed(root, [later]), 90)
        time.sleep(0.5)
    finally:
        stop(proc)
    # the database the watcher recreated, before any other process rebuilds it
    with sqlite3.connect(root.db_path) as conn:
        rows = {r[0] for r in conn.execute("SELECT incident_id FROM incidents")}
        events = {r[0] for r in conn.execute("SELECT DISTINCT incident_id FROM events")}
    assert rows == {*first, later}
    assert set(first) <= events
    p = incidents("status", "--all", "--json", env=env)
    assert p.returncode == 0, p.stderr
    listed = {d["incident_id"] for d in json.loads(p.stdout)["incidents"]}
    assert listed == {*first, later}


def test_status_rebuilds_an_empty_database_left_by_another_process(
    tmp_path: Path, root: Root
) -> None:
    """A database some process created empty (deleted under it) is rebuilt before status
    answers: never an empty list for a root that has bundles."""
    env, ids = _closed_root_without_hints(tmp_path, root)
    # what a writer does on its side of the real work: opens (creating) the file
    assert incidents("pause", "--reason", "x", env=env).returncode == 0
    p = incidents("status", "--all", "--json", env=env)
    assert p.returncode == 0, p.stderr
    assert {d["incident_id"] for d in json.loads(p.stdout)["incidents"]} == set(ids)


def _closed_root_without_hints(tmp_path: Path, root: Root) -> tuple[dict[str, str], list[str]]:
    """Closed incidents (no longer in the inbox listing a catch-up compares), no capture
    hints, and no database: only the folders tell."""
    (tmp_path / "incidents.toml").write_text(CONFIG)
    env = env_for(tmp_path)
    ids = [capture(tmp_path, env, f"z{i}", CLEAN, dedupe=False) for i in range(2)]
    for incident_id in ids:
        assert incidents("drive", incident_id, env=env).returncode == 0
    assert closed(root, ids)
    shutil.rmtree(root.state / "dirty")  # no hints: only the folders tell
    (root.state / "dirty").mkdir(mode=0o700)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    return env, ids


def _listed(env: dict[str, str]) -> set[str]:
    p = incidents("status", "--all", "--json", env=env)
    assert p.returncode == 0, p.stderr
    return {d["incident_id"] for d in json.loads(p.stdout)["incidents"]}


def test_status_rebuilds_a_zero_byte_database_file(tmp_path: Path, root: Root) -> None:
    """A zero-byte file where the database was (truncated, or put there by hand) is not an
    empty root: SQLite opens it as an empty database, and status rebuilds it first."""
    env, ids = _closed_root_without_hints(tmp_path, root)
    fd = os.open(root.db_path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    assert _listed(env) == set(ids)


def test_status_rebuilds_a_database_whose_creator_was_killed(tmp_path: Path, root: Root) -> None:
    """The process that created the file was killed after the schema, before anything else
    was written: every table, no rows, no marks (the state is made here by killing a
    process right after `connect` and clearing `meta`, which an older version's creator
    killed between its migration and its marker left). Only a rebuild's own mark says a
    database is derived, so status rebuilds it."""
    env, ids = _closed_root_without_hints(tmp_path, root)
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from incidents.mirror import connect\n"
        "connect(Path(sys.argv[1])).execute('DELETE FROM meta')\n"
        "os.kill(os.getpid(), 9)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(root.db_path)], env=env, timeout=60)
    assert p.returncode == -signal.SIGKILL
    with sqlite3.connect(root.db_path) as conn:
        assert conn.execute("SELECT count(*) FROM incidents").fetchone() == (0,)
    assert _listed(env) == set(ids)
