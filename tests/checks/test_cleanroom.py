"""The clean room's place: a private folder whose parent anybody may write to (like
`/dev/shm`); a config planted there is never read, the workdir's own still is. Real
pytest runs in a real copy; the room's parent is a folder of the test's own."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from incidents.checks import cleanroom
from incidents.checks.inputs import Inputs
from incidents.checks.profiles import BUILTIN_PROFILES

TEST = "def test_one() -> None:\n    assert True\n\n\ndef check_two() -> None:\n    assert True\n"
# hides every test: a run that read it collects nothing
PLANTED = "[pytest]\npython_files = nothing_*.py\n"


def run_in_room(parent: Path, ws: Path) -> subprocess.CompletedProcess[str]:
    tmp = tempfile.mkdtemp(prefix="incidents-check-", dir=parent)
    assert stat.S_IMODE(os.stat(tmp).st_mode) == 0o700
    profile = BUILTIN_PROFILES["pytest"]
    cwd, env = cleanroom.prepare(
        str(ws), tmp, Inputs(), ["test_one.py"], {}, profile.config_files, ""
    )
    assert cwd != str(ws)  # the copy
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={cwd}"]
    return subprocess.run(
        [*argv, "test_one.py"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("planted", ["pytest.ini", "tox.ini"])
def test_a_config_planted_above_the_room_is_not_read(tmp_path: Path, planted: str) -> None:
    parent = tmp_path / "shm"  # stands for /dev/shm: the room's parent's parent
    parent.mkdir()
    (parent / planted).write_text(PLANTED)  # both read as pytest's with a [pytest] section
    (parent / "conftest.py").write_text("raise SystemExit('planted conftest loaded')\n")
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True)
    (ws / "test_one.py").write_text(TEST)
    done = run_in_room(parent, ws)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_workdirs_own_config_above_it_is_still_read(tmp_path: Path) -> None:
    parent = tmp_path / "shm"
    parent.mkdir()
    (parent / "pytest.ini").write_text(PLANTED)
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True)
    (ws / "test_one.py").write_text(TEST)
    # the project's: both kinds of function are tests
    (tmp_path / "project" / "pytest.ini").write_text(
        "[pytest]\npython_functions = test_* check_*\n"
    )
    done = run_in_room(parent, ws)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
