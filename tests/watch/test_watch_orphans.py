"""Workers die with their watcher (issue 15, deliver 7): after a SIGKILL of the watcher's
main process no worker is left after one second, whenever the kill lands: while the
workers start (they import the step service for a while) or once they are serving. A real
`incidents watch` process, its workers found and checked in /proc."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.watch.helpers import FAST_TOML, capture_step, start_watch, wait_until, workspace

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc and prctl are Linux's")


def _workers_of(pid: int) -> list[int]:
    """The live worker processes (multiprocessing's spawn children) whose parent is `pid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[1]) == pid and b"spawn_main" in cmdline:
            found.append(int(name))
    return found


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("when", ["starting", "serving"])
def test_no_worker_outlives_a_sigkilled_watcher_by_a_second(tmp_path: Path, when: str) -> None:
    workspace(tmp_path, FAST_TOML)
    proc = start_watch(tmp_path, "--workers", "3")
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while len(workers) < 3 and time.monotonic() < deadline:
            workers = _workers_of(proc.pid)
            time.sleep(0.005)
        assert len(workers) == 3, "the watcher's workers never started"
        if when == "serving":
            time.sleep(4.0)  # well past their start
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        time.sleep(1.0)
        left = [pid for pid in workers if _alive(pid)]
        assert left == [], f"workers {left} outlived their watcher ({when}) by a second"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in workers:
            if _alive(pid):  # do not leave them behind for the next test
                os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(120)
def test_a_check_process_does_not_outlive_its_sigkilled_watcher_by_a_second(
    tmp_path: Path, root: Root
) -> None:
    """The chain watcher -> worker -> a check's process: SIGKILL of the watcher kills the
    worker (its death signal), and the worker's death kills the command it was running
    (the same request, made for every process `proc.run` starts), instead of leaving it
    to run until its own timeout."""
    workspace(tmp_path, FAST_TOML)
    (tmp_path / "sleeper.py").write_text(
        "import os, pathlib, time\n"
        "pathlib.Path('sleeper.pid').write_text(str(os.getpid()))\n"
        "time.sleep(60)\n"
    )
    capture_step(tmp_path, "k", verify=f"{sys.executable} sleeper.py")
    pidfile = tmp_path / "work" / "k" / "sleeper.pid"
    proc = start_watch(tmp_path, "--workers", "1")
    sleeper = 0
    try:
        assert wait_until(lambda: pidfile.is_file() and pidfile.read_text().strip(), 60)
        sleeper = int(pidfile.read_text())
        assert _alive(sleeper)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        time.sleep(1.0)
        assert not _alive(sleeper), "the check's process outlived its watcher by a second"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if sleeper and _alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)
