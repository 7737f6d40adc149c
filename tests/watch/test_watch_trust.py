"""The watcher judges what reaches the inbox as capture judges its inputs, and believes only
a state.json its step service sealed: real bundles written by hand, a real `incidents
watch --until-idle` subprocess."""

from __future__ import annotations

import time
from pathlib import Path

from incidents.layout import Root
from incidents.models.pipeline import State
from tests.bundles import drop, planted_state, rejected_reason
from tests.helpers import BROKEN, MESSY
from tests.watch.helpers import FAST_TOML, capture_step, places, run_watch, workspace


def test_the_watcher_sets_aside_planted_states_and_outside_targets(
    tmp_path: Path, root: Root
) -> None:
    workspace(tmp_path, FAST_TOML)
    good = capture_step(tmp_path, "good", dirty=True)
    ws = tmp_path / "by_hand"
    ws.mkdir()
    (ws / "broken.py").write_text(BROKEN)
    victim = tmp_path / "victim.py"
    victim.write_text(MESSY)
    planted = drop(root, "planted", ws, python_files=["broken.py"])
    (planted / "state.json").write_text(planted_state(planted.name, State.S_SUCCESS, ["broken.py"]))
    outside = drop(root, "outside", ws, python_files=["../victim.py"])
    time.sleep(1.0)  # hand-written folders are taken once quiet for stable_s
    done = run_watch(tmp_path, "--until-idle")
    assert done.returncode == 0, done.stderr
    assert places(root) == {
        good: ["error_archive/resolved"],
        planted.name: ["error_rejected"],
        outside.name: ["error_rejected"],
    }
    assert "state.json: seal: not written by the step service" in rejected_reason(
        root, planted.name
    )
    assert "incident.json: python_files '../victim.py': a '..' component" in rejected_reason(
        root, outside.name
    )
    assert victim.read_text() == MESSY
