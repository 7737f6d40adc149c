"""The step service is the only writer of the machine's files: `state.json`,
`ai_attempts.json`, `run_result.json`, and the moves between inbox and archive. Every path
that changes an incident (ticks, the hand-off, a human's requeue and resolve, `archive`,
the watcher's poison rule) is driven for real under an audit hook that names the module
making each write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DRIVER = Path(__file__).with_name("one_writer_driver.py")
CONFIG = (
    '[checks]\ntools = ["ruff"]\n[tiers.aider]\nmode = "handoff"\n'
    '[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)


def test_only_the_step_service_writes_state_attempts_results_and_moves(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "incidents.toml").write_text(CONFIG)
    env = {**os.environ, "INCIDENTS_CONFIG": str(tmp_path / "incidents.toml"),
           "INCIDENTS_ROOT": str(tmp_path / "reports")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(DRIVER), str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["places"] == ["resolved", "resolved", "escalated", "escalated"]
    assert result["poison"] == "terminal"
    # the hook saw the real writes: every guarded kind, many times
    assert result["seen"]["state.json"] >= 10 and result["seen"]["ai_attempts.json"] >= 3
    assert result["seen"]["run_result.json"] >= 5 and result["seen"]["move"] >= 7
    # and the only writes from outside the step service are the driver's two controls
    assert result["violations"] == [
        {"kind": "state.json", "path": str(tmp_path / "reports/error_inbox/scratch/state.json"),
         "writer": "__main__"},
        {"kind": "move", "writer": "__main__",
         "path": f"{tmp_path}/reports/error_inbox/scratch -> {tmp_path}/reports/error_archive/resolved/scratch"},
    ], result["violations"]  # fmt: skip
