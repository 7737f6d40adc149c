"""When is an inbox folder taken, when set aside: hand copies that arrive file by file and
folders that never become valid, on real folders and real `incidents watch` subprocesses."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from incidents.layout import Root
from incidents.watch.intake import Examined, Verdict, examine
from tests.watch.helpers import (
    FAST_TOML,
    capture_step,
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
    worked = capture_step(tmp_path, "byhand")
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


def test_cron_runs_reject_invalid_folders_once_their_grace_has_passed(
    tmp_path: Path, root: Root
) -> None:
    """`--until-idle` and `--once` start afresh each time: the grace is read from the disk
    (when the folder last changed), so a later run sets the folders aside with a reason."""
    workspace(tmp_path, FAST_TOML.replace("reject_grace_s = 2.0", "reject_grace_s = 3.0"))
    root.ensure()
    no_status = root.inbox / "incident_no_status"
    no_status.mkdir()
    (no_status / "incident.json").write_text('{"incident_id": "incident_no_status"}')
    garbage = root.inbox / "incident_garbage"
    garbage.mkdir()
    (garbage / "incident.json").write_text("{ not json")
    (garbage / "status.txt").write_text("new\n")
    first = run_watch(tmp_path, "--until-idle")
    assert first.returncode == 0, first.stderr
    assert places(root) == {
        "incident_no_status": ["error_inbox"],
        "incident_garbage": ["error_inbox"],
    }, "rejected before its grace"
    time.sleep(4.0)
    second = run_watch(tmp_path, "--until-idle")
    assert second.returncode == 0, second.stderr
    assert places(root) == {
        "incident_no_status": ["error_rejected"],
        "incident_garbage": ["error_rejected"],
    }
    assert "missing status.txt" in (root.rejected / "incident_no_status" / "reason.txt").read_text()
    assert (root.rejected / "incident_garbage" / "incident.json").read_text() == "{ not json"
    assert "does not parse" in (root.rejected / "incident_garbage" / "reason.txt").read_text()


def test_once_rejects_a_folder_whose_grace_passed_before_it_started(
    tmp_path: Path, root: Root
) -> None:
    workspace(tmp_path, FAST_TOML.replace("reject_grace_s = 2.0", "reject_grace_s = 1.0"))
    root.ensure()
    empty = root.inbox / "incident_empty_by_hand"
    empty.mkdir()
    time.sleep(1.5)
    done = run_watch(tmp_path, "--once")
    assert done.returncode == 0, done.stderr
    assert places(root) == {"incident_empty_by_hand": ["error_rejected"]}
    assert "missing incident.json" in (root.rejected / empty.name / "reason.txt").read_text()


def test_the_grace_counts_from_arrival_for_a_copy_that_keeps_old_mtimes(root: Root) -> None:
    """`cp -a`, `tar x` and `mv` keep the source's mtimes: the inode change time still says
    the folder has just arrived, so it gets its whole grace, counted from the disk."""
    root.ensure()
    folder = root.inbox / "incident_copied_with_times"
    folder.mkdir()
    (folder / "incident.json").write_text('{"incident_id": "incident_copied_with_times"}')
    old = time.time() - 3600
    for p in [*folder.iterdir(), folder]:
        os.utime(p, (old, old), follow_symlinks=False)

    def seen_at(now_ns: int) -> Examined:
        return examine(folder, now_ns=now_ns, whole_ns=None, stable_s=0.5, grace_s=60.0)

    now = time.time_ns()
    assert seen_at(now).verdict is Verdict.WAIT
    later = seen_at(now + 61 * 10**9)
    assert later.verdict is Verdict.REJECT and "missing status.txt" in later.reason
    assert folder.is_dir()  # examine only judges; the watcher moves it


def test_an_incident_json_of_another_json_type_is_set_aside_at_once(root: Root) -> None:
    """A whole JSON list (or number, or string) is no copy in progress, since a part of an
    object never parses as one: rejected in the pass that sees it, not after the grace."""
    root.ensure()
    for n, text in enumerate(("[1, 2]\n", "42\n", '"incident"\n')):
        folder = root.inbox / f"incident_20261125_000000_typed_{n:012x}"
        folder.mkdir()
        (folder / "incident.json").write_text(text)
        (folder / "status.txt").write_text("new\n")
        seen = examine(folder, now_ns=time.time_ns(), whole_ns=None, stable_s=0.5, grace_s=3600)
        assert seen.verdict is Verdict.REJECT, seen
        assert "incident.json is a JSON" in seen.reason and "not an object" in seen.reason
    # a part of an object still waits for the rest of the copy
    folder = root.inbox / "incident_20261125_000000_typed_partial00000"
    folder.mkdir()
    (folder / "incident.json").write_text('{"incident_id": "incident_2026')
    (folder / "status.txt").write_text("new\n")
    seen = examine(folder, now_ns=time.time_ns(), whole_ns=None, stable_s=0.5, grace_s=3600)
    assert seen.verdict is Verdict.WAIT, seen
