"""A paused watcher logs the pause once, and its end once: not a line per check."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from incidents import pause
from incidents.layout import Root
from tests.watch.helpers import start_watch, stop, wait_until, workspace


def test_a_pause_is_logged_once_and_its_end_once(tmp_path: Path) -> None:
    root = Root(tmp_path / "reports").ensure()
    workspace(tmp_path)
    pause.pause(root, "deploy freeze")
    proc = start_watch(tmp_path)
    events: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("{"):
                events.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # the watcher checks the flag about once a second: several checks while paused
        time.sleep(3.5)
        pause.resume(root)
        assert wait_until(lambda: any(e["event"] == "pause_ended" for e in events), 60)
    finally:
        assert stop(proc) == 0
        reader.join(10)
    names = [e["event"] for e in events]
    assert names.count("paused") == 1, names
    [said] = [e for e in events if e["event"] == "paused"]
    assert said["reason"] == "deploy freeze" and said["since"]
    assert names.count("pause_ended") == 1 and names.index("paused") < names.index("pause_ended")
