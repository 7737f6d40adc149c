"""The live mirror equals a rebuilt one after the sequences an independent review found it
did not (issue 15, deliver 3): a human requeue then an archive, a database file older than
the folders put back in place, a bundle set aside from a run it shares with another, and
a mirror write that failed. Real processes on a real root; every table compared."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import BROKEN, CLEAN, incidents
from tests.mirror.test_derived import CONFIG, capture, env_for, tables

# real processes write the root's SQLite file and the tests read it: SQLite's tests
pytestmark = pytest.mark.parametrize("backend", ["sqlite"])


def same_as_rebuilt(tmp: Path, root: Root, env: dict[str, str]) -> None:
    """What a reader sees (every reader catches up first) is what `reindex` builds."""
    p = incidents("status", "--all", env=env)
    assert p.returncode == 0, p.stderr
    live = tmp / f"live-{time.monotonic_ns()}.db"
    with sqlite3.connect(root.db_path) as src, sqlite3.connect(live) as dst:
        src.backup(dst)
    before = tables(live)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    p = incidents("reindex", env=env)
    assert p.returncode == 0, p.stderr
    after = tables(root.db_path)
    for name in sorted(before):
        lost = [r for r in before[name] if r not in after[name]]
        gained = [r for r in after[name] if r not in before[name]]
        assert not lost and not gained, f"{name}: live only {lost[:2]}, rebuilt only {gained[:2]}"


def setup(tmp: Path) -> dict[str, str]:
    (tmp / "incidents.toml").write_text(CONFIG)
    return env_for(tmp)


def test_a_requeue_then_an_archive(tmp_path: Path, root: Root) -> None:
    env = setup(tmp_path)
    incident_id = capture(tmp_path, env, "rq", BROKEN, dedupe=False)
    assert incidents("drive", incident_id, env=env).returncode == 0
    assert (root.bucket("escalated") / incident_id).is_dir()
    p = incidents("resolve-escalation", incident_id, "--guidance", "look again", "--requeue",
                  env=env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    same_as_rebuilt(tmp_path, root, env)
    p = incidents("resolve-escalation", incident_id, "--guidance", "g2", "--requeue", env=env)
    p = incidents("archive", incident_id, "--escalated", "--reason", "by hand", env=env)
    assert p.returncode == 0, p.stderr
    same_as_rebuilt(tmp_path, root, env)


def test_a_database_older_than_the_folders_put_back(tmp_path: Path, root: Root) -> None:
    env = setup(tmp_path)
    ids = [capture(tmp_path, env, f"old{i}", BROKEN, dedupe=False) for i in range(2)]
    assert incidents("status", env=env).returncode == 0
    old = tmp_path / "old.db"
    src, dst = sqlite3.connect(root.db_path), sqlite3.connect(old)
    src.backup(dst)
    dst.close()
    src.close()
    for incident_id in ids:
        assert incidents("drive", incident_id, env=env).returncode == 0
    for suffix in ("-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(old, root.db_path)
    p = incidents("status", "--all", "--json", env=env)
    assert p.returncode == 0, p.stderr
    shown = {d["incident_id"]: d for d in json.loads(p.stdout)["incidents"]}
    assert {shown[i]["bucket"] for i in ids} == {"escalated"}
    same_as_rebuilt(tmp_path, root, env)


def test_a_bundle_set_aside_from_a_run_it_shares(tmp_path: Path, root: Root) -> None:
    env = setup(tmp_path)
    ws = tmp_path / "work" / "shared"
    ws.mkdir(parents=True)
    (ws / "f.py").write_text(CLEAN)
    ids = []
    for step in ("download", "lint"):
        p = incidents("capture", "--run-id", "run_shared_1", "--step", step, "--message",
                      f"{step} failed", "--workdir", str(ws), "--no-dedupe", env=env)  # fmt: skip
        assert p.returncode == 0, p.stderr
        ids.append(p.stdout.strip())
        time.sleep(0.01)
    assert incidents("status", env=env).returncode == 0
    (root.inbox / ids[0] / "context.json").write_text("[]\n")
    incidents("drive", ids[0], env=env)
    assert (root.rejected / ids[0]).is_dir()
    same_as_rebuilt(tmp_path, root, env)


def test_a_mirror_write_that_failed_is_caught_up_later(tmp_path: Path, root: Root) -> None:
    """The step commits to its folder; the mirror is locked past its busy timeout, so its
    rows are not written (a warning). The hint it leaves makes the next status right."""
    env = setup(tmp_path)
    incident_id = capture(tmp_path, env, "locked", CLEAN, dedupe=False)
    assert incidents("status", env=env).returncode == 0
    hold = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(8)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold, str(root.db_path)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        p = incidents("step", incident_id, env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        assert "mirror not updated" in p.stderr, p.stderr
        assert (root.state / "dirty" / incident_id).exists()
    finally:
        holder.wait(timeout=30)
    status = json.loads((root.inbox / incident_id / "incident.json").read_text())["status"]
    p = incidents("status", "--json", env=env)
    rows = {d["incident_id"]: d for d in json.loads(p.stdout)["incidents"]}
    assert rows[incident_id]["status"] == status != "new"
    same_as_rebuilt(tmp_path, root, env)


def test_a_backup_of_the_database_moved_into_place_is_rebuilt(tmp_path: Path, root: Root) -> None:
    """A copy made before a human decision, moved over the database (a new file): its mark
    was written in another file, so the first reader rebuilds it. (The decision moved an
    escalated incident to resolved: no inbox listing would tell a catch-up.)"""
    env = setup(tmp_path)
    incident_id = capture(tmp_path, env, "bk", BROKEN, dedupe=False)
    assert incidents("drive", incident_id, env=env).returncode == 0
    assert incidents("status", env=env).returncode == 0
    backup = tmp_path / "backup.db"
    src, dst = sqlite3.connect(root.db_path), sqlite3.connect(backup)
    src.backup(dst)
    dst.close()
    src.close()
    p = incidents("resolve-escalation", incident_id, "--guidance", "fixed upstream", env=env)
    assert p.returncode == 0, p.stderr
    for suffix in ("-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    os.replace(backup, root.db_path)
    p = incidents("status", "--all", "--json", env=env)
    rows = {d["incident_id"]: d for d in json.loads(p.stdout)["incidents"]}
    assert rows[incident_id]["bucket"] == "resolved"
    same_as_rebuilt(tmp_path, root, env)
