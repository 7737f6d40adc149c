"""A worker killed while its fixer runs with detection only: the subreaper dies with it, and
whatever the fixer started in a session of its own (`setsid`) is orphaned outside the
process group the pidfile names. The next worker's `proc.kill_recorded` (what
`call_fixer` does first) kills those too: the run lists the fixer's descendants beside
the pidfile while it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from incidents import proc
from tests.stand_ins import stand_in

# The fixer starts a child in a new session that would rewrite the target much later,
# says its pid, and waits to be killed with its worker.
FIXER = """
import subprocess
late = "import time, pathlib, sys; time.sleep(30); pathlib.Path(sys.argv[1]).write_text('late')"
child = subprocess.Popen([sys.executable, "-c", late, os.path.abspath("a.py")],
                         start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
pathlib.Path(sys.argv[0]).with_name("child.pid").write_text(str(child.pid))
time.sleep(60)
"""

# The worker: run the fixer with detection and a pidfile, as call_fixer does.
WORKER = """
import sys
from pathlib import Path
from incidents.fixers import TierSettings, run_fixer, sandbox
ws, prompt, pidfile = map(Path, sys.argv[1:4])
run_fixer("aider", TierSettings(argv=["aider", "{files}"], timeout_s=120), prompt, ["a.py"], ws,
          pidfile=pidfile, containment=sandbox.Containment("none"))
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(path: Path, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def test_the_next_worker_kills_a_setsid_child_of_a_fixer_whose_worker_was_killed(
    bin_dir: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("fix a.py\n")
    pidfile = tmp_path / "running" / "incident.pid"
    pidfile.parent.mkdir()
    stand_in(bin_dir, "aider", FIXER)
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(ws), str(prompt), str(pidfile)],
        env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    child = 0
    try:
        child = int(wait_for(bin_dir / "child.pid"))
        time.sleep(1.0)  # the run lists the fixer's descendants every quarter second
        worker.send_signal(signal.SIGKILL)  # the worker dies mid-fixer
        worker.wait()
        assert alive(child), "the setsid child should have outlived its worker"
        assert proc.kill_recorded(pidfile)  # what the next worker's call_fixer does first
        assert not alive(child), "a setsid child of the fixer survived the next worker"
        assert os.listdir(pidfile.parent) == []  # the records are forgotten
        assert (ws / "a.py").read_text() == "x = 1\n"
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        if child and alive(child):
            os.kill(child, signal.SIGKILL)
