"""SIGKILL soak: the watcher killed at random moments while 100 incidents are in flight,
restarted each time; all close, none lost, none archived twice, mirror equals folders."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from incidents.doctor import folder_buckets
from incidents.layout import Root
from tests.watch.helpers import (
    capture_step,
    mirror_rows,
    places,
    run_watch,
    start_watch,
    workspace,
)

KILLS = 20


@pytest.mark.slow
def test_sigkill_soak(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    ids = [capture_step(tmp_path, f"k{i}", dirty=i % 3 == 0) for i in range(100)]
    rng = random.Random(7)
    for _ in range(KILLS):
        watcher = start_watch(tmp_path, "--workers", "2", "--poll", "0.5")
        time.sleep(rng.uniform(0.4, 1.2))
        watcher.send_signal(signal.SIGKILL)
        watcher.wait()
    done = run_watch(tmp_path, "--until-idle", "--workers", "2", timeout=180)
    assert done.returncode == 0, done.stderr
    where = places(root)
    assert sorted(where) == sorted(ids)  # none lost, nothing new
    assert all(len(w) == 1 and w[0].startswith("error_archive") for w in where.values()), where
    assert mirror_rows(root) == folder_buckets(root)
    for i in ids:
        assert (root.path / "error_runs" / i / "run_result.json").exists()
    resolved = sum(w == ["error_archive/resolved"] for w in where.values())
    assert resolved >= 90  # a few may be quarantined as poison (killed 3 times mid-tick)
