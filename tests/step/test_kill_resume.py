"""SIGKILL the step process at random points; the end result equals an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import MESSY, incidents
from tests.stand_ins import stand_in

CONFIG = '[checks]\ntools = ["ruff", "ruff-format"]\n'


def capture_messy(ws: Path, env: dict[str, str]) -> str:
    """A real `incidents capture` process for `ws/messy.py`, which autofix can resolve."""
    ws.mkdir()
    (ws / "messy.py").write_text(MESSY)
    p = incidents("capture", "--step", "lint", "--message", "ruff failed",
                  "--python-file", "messy.py", "--workdir", str(ws), "--no-dedupe",
                  env=env, check=True)  # fmt: skip
    return p.stdout.strip()


def closed(root: Root, incident_id: str) -> Path | None:
    for bucket in ("resolved", "escalated"):
        if (root.bucket(bucket) / incident_id).is_dir():
            return root.bucket(bucket) / incident_id
    return None


def outcome(root: Root, incident_id: str, ws: Path) -> dict[str, object]:
    folder = closed(root, incident_id)
    assert folder is not None and not (root.inbox / incident_id).exists()
    state = json.loads((folder / "state.json").read_text())
    result = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    runs = sorted(p.name for p in root.runs_dir(incident_id).iterdir())
    return {
        "bucket": folder.parent.name,
        "state": state["current_state"],
        "final_status": state["final_status"],
        "steps": state["step"],
        "labels": state["report_labels"],
        "repeats": state["same_error_repeats"],
        "result": (result["final_status"], result["loops_used"], result["same_error_repeats"]),
        "runs": runs,
        "fixed": (ws / "messy.py").read_text(),
        "status": (folder / "status.txt").read_text(),
    }


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(root: Root, tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text(CONFIG)
    env = {**os.environ, "INCIDENTS_ROOT": str(root.path),
           "INCIDENTS_CONFIG": str(tmp_path / "incidents.toml")}  # fmt: skip
    drive = [sys.executable, "-m", "incidents", "drive"]

    reference_id = capture_messy(tmp_path / "ref", env)
    t0 = time.monotonic()
    incidents("drive", reference_id, env=env, check=True)
    full = time.monotonic() - t0
    expected = outcome(root, reference_id, tmp_path / "ref")
    assert expected["bucket"] == "resolved"

    rng = random.Random(20261123)
    kills, n = 0, 0
    while kills < 30:
        n += 1
        ws = tmp_path / f"ws{n}"
        incident_id = capture_messy(ws, env)
        while closed(root, incident_id) is None:
            proc = subprocess.Popen([*drive, incident_id], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            time.sleep(rng.uniform(0.05, full))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
        assert outcome(root, incident_id, ws) == expected, f"after {kills} kills"
    # nothing half-done is left behind
    assert os.listdir(root.inbox) == []
    assert os.listdir(root.state / "pending") == []
    with __import__("sqlite3").connect(root.db_path) as conn:
        dupes = conn.execute(
            "SELECT ws_id, label, count(*) FROM step_attempts GROUP BY ws_id, step_name, label "
            "HAVING count(*) > 1"
        ).fetchall()
    assert dupes == []


def test_a_fixer_left_running_by_a_killed_tick_is_killed_before_the_redo(
    root: Root, tmp_path: Path
) -> None:
    """The tick is SIGKILLed while its fixer runs; the fixer, in a session of its own, lives
    on. The resumed tick must not run a second fixer beside it on the same files."""
    bin_dir, marks = tmp_path / "bin", tmp_path / "marks"  # outside the workdir: a fixer's
    bin_dir.mkdir()  # files beside its targets are reverted as violations
    marks.mkdir()
    # a token, not the pid: under bubblewrap each run has a PID namespace of its own
    stand_in(bin_dir, "aider",
             f"m = pathlib.Path({str(marks)!r}); run = os.urandom(8).hex()\n"
             "(m / f'started.{run}').write_text('')\n"
             "time.sleep(3)\n"
             "p = pathlib.Path('typed.py'); p.write_text(p.read_text().replace('\"one\"', '1'))\n"
             "(m / f'done.{run}').write_text('')")  # fmt: skip
    (tmp_path / "incidents.toml").write_text(  # marks: writable for the fixer in the sandbox
        f'[checks]\ntools = ["mypy"]\n[tiers.aider]\nmode = "on"\nwritable = ["{marks}"]\n'
        '[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
    )
    env = {**os.environ, "INCIDENTS_ROOT": str(root.path), "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "INCIDENTS_CONFIG": str(tmp_path / "incidents.toml")}  # fmt: skip
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "typed.py").write_text('def first() -> int:\n    return "one"\n')
    incident_id = incidents(
        "capture", "--step", "types", "--message", "m",
        "--python-file", "typed.py", "--workdir", str(ws), "--no-dedupe", env=env, check=True,
    ).stdout.strip()  # fmt: skip
    drive = [sys.executable, "-m", "incidents", "drive", incident_id]
    first = subprocess.Popen(drive, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list(marks.glob("started.*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    [started] = marks.glob("started.*")
    first.send_signal(signal.SIGKILL)
    first.wait()
    orphan = started.name.split(".")[1]
    again = incidents("drive", incident_id, env=env)
    assert again.returncode == 0, again.stderr
    assert "-> S_SUCCESS" in again.stdout, again.stdout
    done = sorted(p.name for p in marks.glob("done.*"))
    assert done and f"done.{orphan}" not in done, "the orphaned fixer finished beside the redo"
    assert len(done) == 1 and len(list(marks.glob("started.*"))) == 2
    assert (
        not Path(f"/proc/{orphan}").exists()
        or "Z" in Path(f"/proc/{orphan}/stat").read_text().rpartition(")")[2].split()[:1]
    )


def _parent(pid: str) -> str | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("PPid:"):
            return line.split()[1]
    return None


def _running_autofix(ancestor: int) -> bool:
    """Whether a `ruff ... --fix` started by `ancestor` (a child, grandchild, ...) runs now.
    Only its own descendants count: other tests, or other suites on the machine, run ruff
    --fix too, and a kill taken for theirs lands before this tick's autofix started."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not (any(b"ruff" in part for part in cmd[:1]) and b"--fix" in cmd):
            continue
        pid: str | None = name
        for _ in range(16):
            pid = _parent(pid) if pid else None
            if pid is None or pid in ("0", "1"):
                break
            if pid == str(ancestor):
                return True
    return False


@pytest.mark.timeout(300)
def test_an_autofix_killed_while_it_rewrote_a_target_is_redone_on_the_file_as_it_was(
    root: Root, tmp_path: Path
) -> None:
    """The tick is killed while ruff --fix runs, and the target is left torn (here:
    truncated, as a write cut short leaves it). An empty file passes every check, so a
    redo on what the killed run left would resolve the incident with the code gone; the
    redo puts the targets back as they were before that autofix, then runs it again."""
    (tmp_path / "incidents.toml").write_text(CONFIG)
    env = {**os.environ, "INCIDENTS_ROOT": str(root.path),
           "INCIDENTS_CONFIG": str(tmp_path / "incidents.toml")}  # fmt: skip
    reference_id = capture_messy(tmp_path / "ref", env)
    incidents("drive", reference_id, env=env, check=True)
    expected = (tmp_path / "ref" / "messy.py").read_text()
    assert expected.strip() and expected != MESSY
    for n in range(20):  # until one kill lands while the autofix runs
        ws = tmp_path / f"ws{n}"
        incident_id = capture_messy(ws, env)
        proc = subprocess.Popen([sys.executable, "-m", "incidents", "drive", incident_id],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        caught = False
        while proc.poll() is None:
            if _running_autofix(proc.pid):
                proc.send_signal(signal.SIGKILL)
                caught = True
                break
        proc.wait()
        if not caught or closed(root, incident_id) is not None:
            continue
        (ws / "messy.py").write_bytes(b"")  # the torn write
        incidents("drive", incident_id, env=env, check=True)
        assert outcome(root, incident_id, ws)["bucket"] == "resolved"
        assert (ws / "messy.py").read_text() == expected, "resolved with the code gone"
        return
    pytest.skip("no kill landed while the autofix ran (20 tries)")
