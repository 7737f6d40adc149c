"""A stuck watcher (SIGSTOP past its lease): another takes the incident over within lease +
poll, finishes it, and the stuck one's late commit is refused (fencing)."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

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

# it leaves a mark when it starts: the watcher journals no intent for a check
SLOW_CHECK = (
    "import pathlib, time\npathlib.Path('check-started').touch()\n"
    "time.sleep(3)\nprint('downloaded')\n"
)


def test_a_stuck_watcher_is_taken_over_and_its_late_commit_refused(tmp_path: Path) -> None:
    workspace(tmp_path, FAST_TOML.replace("[policy]\n", "[policy]\nlease_ttl_s = 1.5\n"))
    (tmp_path / "slow.py").write_text(SLOW_CHECK)
    root = Root(tmp_path / "reports")
    incident_id = capture_step(tmp_path, "dl", verify=f"{sys.executable} slow.py")
    runs = root.runs_dir(incident_id)

    a = start_watch(tmp_path, "--workers", "1", "--poll", "0.5")
    b = None
    try:
        # A is inside the slow baseline check (its verification command sleeps 3 s)
        assert wait_until(lambda: (tmp_path / "work" / "dl" / "check-started").exists(), 30)
        a.send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        b = start_watch(tmp_path, "--workers", "1", "--poll", "0.5")
        # B takes over once A's lease expires (1.5 s), re-runs the begun step, closes it
        assert wait_until(lambda: closed(root, [incident_id]), 60), places(root)
        took = time.monotonic() - stopped_at
        assert took < 1.5 + 0.5 + 3 + 10, took  # lease + poll + the check itself + start-up
        a.send_signal(signal.SIGCONT)
        time.sleep(4)  # A wakes up, finishes its check and tries to commit
    finally:
        a.send_signal(signal.SIGCONT)
        assert stop(a) == 0
        if b is not None:
            assert stop(b) == 0
    err_a = a.stderr.read() if a.stderr else ""
    lines = [json.loads(line) for line in err_a.splitlines() if line.startswith("{")]
    lost = [ln for ln in lines if ln.get("id") == incident_id and "lost" in json.dumps(ln)]
    assert lost, f"A's late commit was not refused: {err_a[-2000:]}"
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
