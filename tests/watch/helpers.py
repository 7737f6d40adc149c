"""Helpers for the watcher tests: real bundles, a real `incidents watch` subprocess."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from incidents.cli import main
from incidents.layout import Root
from tests.helpers import incidents

FAST_TOML = """\
[checks]
tools = ["ruff", "ruff-format"]
cache = false

[policy]
retry_base_s = 0.2
retry_max_s = 0.5

[watch]
poll_s = 1.0
stable_s = 0.5
reject_grace_s = 2.0
"""


def workspace(tmp: Path, toml: str = FAST_TOML) -> Path:
    (tmp / "incidents.toml").write_text(toml)
    return tmp


def capture_step(tmp: Path, name: str, *, dirty: bool = False, verify: str | None = None) -> str:
    """A real capture (in-process, no `cli` fixture needed) of a failing `step_<name>` in a
    workdir of its own, `tmp/work/<name>`, with tmp's scripts copied in: its target is
    `<name>.py`, or with `verify` a command to run there instead."""
    # each incident has its own workdir: the autofix refuses changes to files outside its
    # targets, and a neighbour's autofix running in parallel in a shared workdir is one
    work = tmp / "work" / name
    work.mkdir(parents=True)
    for script in tmp.glob("*.py"):
        shutil.copy(script, work / script.name)
    args = ["capture", "--step", f"step_{name}", "--message", f"ruff failed on {name}.py",
            "--workdir", str(work), "--no-dedupe"]  # fmt: skip
    if verify is None:
        body = f"import os\nX_{name} = 1\n" if dirty else f"X_{name} = 1\n"
        (work / f"{name}.py").write_text(body)
        args += ["--python-file", f"{name}.py"]
    else:
        args += ["--verify", verify]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return out.getvalue().strip().splitlines()[-1]


def start_watch(tmp: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "INCIDENTS_ROOT": str(tmp / "reports")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "incidents", "watch", "--log-json", *args],
        cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # Ready once it handles SIGTERM (its handlers are installed after the root's folders
    # exist): on a loaded machine a fixed sleep is not enough, and a SIGTERM that comes
    # before the handler kills it instead of stopping it.
    wait_until(lambda: proc.poll() is not None or _catches_sigterm(proc.pid), 60, step=0.02)
    return proc


def _catches_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def run_watch(tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INCIDENTS_ROOT": str(tmp / "reports")}
    return incidents("watch", "--log-json", *args, env=env, cwd=tmp, timeout=timeout)


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode


def places(root: Root) -> dict[str, list[str]]:
    """Where each incident id is, across the inbox, the archive and error_rejected/."""
    found: dict[str, list[str]] = {}
    for where in ("error_inbox", "error_archive/resolved", "error_archive/escalated",
                  "error_rejected"):  # fmt: skip
        base = root.path / where
        if base.is_dir():
            for name in os.listdir(base):
                if not name.startswith("."):
                    found.setdefault(name, []).append(where)
    return found


def wait_until(predicate: Callable[[], object], timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def closed(root: Root, ids: list[str]) -> bool:
    p = places(root)
    return all(p.get(i, [""])[0].startswith("error_archive") for i in ids)


def mirror_rows(root: Root) -> dict[str, str]:
    conn = sqlite3.connect(root.db_path)
    try:
        return {r[0]: r[1] for r in conn.execute("SELECT incident_id, bucket FROM incidents")}
    finally:
        conn.close()


def transitions(root: Root) -> list[tuple[str, str]]:
    conn = sqlite3.connect(root.db_path)
    try:
        rows = conn.execute(
            "SELECT incident_id, payload_json FROM events WHERE event_type = 'state_transition'"
        ).fetchall()
    finally:
        conn.close()
    return [(i, json.loads(p)["from_state"] + ">" + json.loads(p)["to_state"]) for i, p in rows]
