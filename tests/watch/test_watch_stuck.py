"""A stuck watcher (SIGSTOP past its lease): another takes the incident over once the lease
expires, finishes it, and the stuck one's late commit is refused (fencing)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path

from incidents import leases
from incidents.layout import Root
from tests.watch.helpers import (
    FAST_TOML,
    capture_step,
    closed,
    places,
    start_watch,
    stop,
    transitions,
    wait_until,
    workspace,
)

# The first run of the check (the stuck watcher's) leaves a mark and holds until the test
# lets it go, so the test never races it; every later run (the taker's) passes at once.
GATED_CHECK = """\
import os, pathlib, time
try:
    os.close(os.open('check-started', os.O_CREAT | os.O_EXCL | os.O_WRONLY))
except FileExistsError:
    pass
else:
    deadline = time.monotonic() + 300
    while not pathlib.Path('go').exists() and time.monotonic() < deadline:
        time.sleep(0.05)
print('downloaded')
"""


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            # the command name, in parentheses, may hold spaces: the ppid follows it
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def freeze(pid: int) -> list[int]:
    """SIGSTOP `pid` and every process under it (its workers, their commands), top down:
    a stopped process starts no new one, so one pass over the tree reaches them all."""
    stopped, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            os.kill(p, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        stopped.append(p)
        todo += _children(p)
    return stopped


def thaw(pids: list[int]) -> None:
    for p in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGCONT)


def events(text: str, incident_id: str) -> list[dict[str, object]]:
    docs = [json.loads(ln) for ln in text.splitlines() if ln.startswith("{")]
    return [d for d in docs if d.get("id") == incident_id]


def test_a_stuck_watcher_is_taken_over_and_its_late_commit_refused(tmp_path: Path) -> None:
    workspace(tmp_path, FAST_TOML.replace("[policy]\n", "[policy]\nlease_ttl_s = 1.5\n"))
    (tmp_path / "gated.py").write_text(GATED_CHECK)
    root = Root(tmp_path / "reports")
    incident_id = capture_step(tmp_path, "dl", verify=f"{sys.executable} gated.py")
    runs = root.runs_dir(incident_id)
    work = tmp_path / "work" / "dl"

    a = start_watch(tmp_path, "--workers", "1", "--poll", "0.5")
    b = None
    frozen: list[int] = []
    try:
        # A's worker holds the lease and is inside the check, which waits for `go`
        assert wait_until(lambda: (work / "check-started").exists(), 120)
        frozen = freeze(a.pid)
        assert len(frozen) >= 3, frozen  # the watcher, its worker, the check command
        held = leases.read(root, incident_id)
        assert held is not None and held.pid != a.pid and held.pid in frozen, held
        b = start_watch(tmp_path, "--workers", "1", "--poll", "0.5")
        # B takes the lease over once A's expires, re-runs the begun step and closes it
        assert wait_until(lambda: closed(root, [incident_id]), 120), places(root)
        (work / "go").touch()
        thaw(frozen)
        frozen = []
        # A's first stop lets its running pickup finish: the check returns, the commit is tried
        rc_a = stop(a, timeout=120)
    finally:
        thaw(frozen)
        if a.poll() is None:
            stop(a)
        if b is not None:
            assert stop(b) == 0
    err_a = a.stderr.read() if a.stderr else ""
    err_b = b.stderr.read() if b and b.stderr else ""
    lost = [e for e in events(err_a, incident_id) if e["event"] == "lost"]
    assert lost, f"A's late commit was not refused: {err_a[-2000:]}"
    assert rc_a == 0, err_a[-2000:]
    assert f"generation {held.generation} " in str(lost[0]["detail"]), lost
    # B's pickup took over a lease never released, and only after it expired
    done = [e for e in events(err_b, incident_id) if e["event"] == "terminal"]
    assert len(done) == 1 and done[0]["recovered"] is True, err_b[-2000:]
    assert float(str(done[0]["ts"])) >= held.expires_at, (done, held)
    # one close, every step once
    assert places(root)[incident_id] == ["error_archive/resolved"]
    mine = [t for i, t in transitions(root) if i == incident_id]
    assert len(mine) == len(set(mine)), mine
    ctx = json.loads((root.bucket("resolved") / incident_id / "state.json").read_text())
    assert ctx["current_state"] == "S_SUCCESS" and ctx["pending"] is None
    assert ctx["report_labels"] == ["0"]
    assert sorted(p.name for p in runs.iterdir() if p.name.startswith("error_report")) == [
        "error_report_attempt_0.json"
    ]
