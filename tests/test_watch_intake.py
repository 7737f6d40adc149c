"""When is an inbox folder taken, when set aside: hand copies that arrive file by file and
folders that never become valid, on real folders and real `incidents watch` subprocesses."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from incidents.layout import Root
from tests.test_watch_helpers import (
    FAST_TOML,
    capture,
    places,
    run_watch,
    start_watch,
    stop,
    wait_until,
    workspace,
)


def test_hand_copy_starting_with_state_json_waits_until_complete(
    tmp_path: Path, root: Root
) -> None:
    """A bundle a watcher worked before has state.json; copied by hand, file by file,
    state.json first, it is not taken before incident.json and status.txt are there."""
    workspace(tmp_path, FAST_TOML.replace("reject_grace_s = 2.0", "reject_grace_s = 60.0"))
    worked = capture(tmp_path, "byhand")
    assert run_watch(tmp_path, "--until-idle").returncode == 0
    source = tmp_path / "copy_of_bundle"
    shutil.move(str(root.bucket("resolved") / worked), source)
    assert (source / "state.json").is_file()
    watcher = start_watch(tmp_path, "--workers", "1", "--poll", "0.5")
    try:
        time.sleep(1.0)  # the watcher is up
        target = root.inbox / worked
        target.mkdir()
        shutil.copyfile(source / "state.json", target / "state.json")
        time.sleep(3.0)
        assert places(root)[worked] == ["error_inbox"], "taken before the copy was complete"
        for f in sorted(source.iterdir()):
            if f.is_dir():
                shutil.copytree(f, target / f.name)
            elif f.name != "state.json":
                shutil.copyfile(f, target / f.name)
        assert wait_until(lambda: places(root)[worked] != ["error_inbox"], 30)
    finally:
        assert stop(watcher) == 0
    assert places(root)[worked] == ["error_archive/resolved"]
