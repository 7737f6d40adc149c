"""Issue 15: nothing stays in the inbox forever, and `watch` says when ticks failed. Real
bundles written by hand, a real `incidents watch --once` subprocess."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from incidents.layout import Root
from tests.bundles import drop, rejected_reason
from tests.watch.helpers import FAST_TOML, places, run_watch, workspace


def test_one_pass_sets_aside_bundles_that_break_the_file_rules(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path, FAST_TOML.replace("reject_grace_s = 2.0", "reject_grace_s = 3600"))
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    folder_doc = drop(root, "folderdoc", ws)
    (folder_doc / "incident.json").unlink()
    (folder_doc / "incident.json").mkdir()
    status_link = drop(root, "statuslink", ws)
    (status_link / "status.txt").unlink()
    (status_link / "status.txt").symlink_to(outside)
    big_status = drop(root, "bigstatus", ws)
    (big_status / "status.txt").write_bytes(b"new\n" * (5 << 20))
    fifo = drop(root, "fifo", ws)
    os.mkfifo(fifo / "log_tail.txt")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    linked = root.inbox / "incident_20261124_000000_linked_0123456789ab"
    linked.symlink_to(elsewhere)
    newline = root.inbox / "incident_20261124_000000_new\nline_0123456789ab"
    newline.mkdir()
    time.sleep(1.0)  # hand-written folders are taken once quiet for stable_s
    done = run_watch(tmp_path, "--once", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    everything = [folder_doc, status_link, big_status, fifo, linked, newline]
    # a name that cannot be shown on one line is set aside under one that can
    aside = [n for n in os.listdir(root.rejected) if n.startswith("unprintable-name-")]
    assert len(aside) == 1
    assert places(root) == {
        **{f.name: ["error_rejected"] for f in everything if f is not newline},
        aside[0]: ["error_rejected"],
    }
    stopped = [json.loads(x) for x in done.stderr.splitlines() if '"watch_stopped"' in x]
    assert stopped and stopped[-1].get("rejected") == len(everything), stopped
    assert (
        "a symbolic link, not a bundle folder"
        in (root.rejected / linked.name / "reason.txt").read_text()
    )
    why = (root.rejected / aside[0] / "reason.txt").read_text()
    assert "not a valid incident id" in why and why.count("\n") == 1
    assert "new\\nline" in why  # the name it had, escaped
    assert elsewhere.is_dir(), "nothing is deleted"
    assert "incident.json: is a folder" in rejected_reason(root, folder_doc.name)
    assert "status.txt: is a symbolic link" in rejected_reason(root, status_link.name)
    assert "status.txt: is 20971520 bytes, over its cap of 64" in rejected_reason(
        root, big_status.name
    )
    assert "log_tail.txt: is a FIFO" in rejected_reason(root, fifo.name)


def test_failed_ticks_fail_the_run_and_three_failed_loads_set_the_bundle_aside(
    tmp_path: Path, root: Root
) -> None:
    """A bundle whose every load fails (here: its lock file cannot be opened) made `watch
    --once` exit 0 and stayed in the inbox for ever."""
    workspace(tmp_path, FAST_TOML)
    ws = tmp_path / "ws"
    ws.mkdir()
    stuck = drop(root, "stuck", ws)
    root.ensure()
    (root.locks / f"{stuck.name}.lock").mkdir()
    time.sleep(1.0)
    for attempt in (1, 2):
        done = run_watch(tmp_path, "--once", timeout=120)
        assert done.returncode == 1, (attempt, done.stderr)
        assert "1 failed pickup(s)" in done.stderr
        stopped = [json.loads(x) for x in done.stderr.splitlines() if '"watch_stopped"' in x]
        assert stopped and stopped[-1]["failures"] == 1 and stopped[-1]["level"] == "error"
        assert (root.inbox / stuck.name).is_dir()
    done = run_watch(tmp_path, "--once", timeout=120)  # the third failed load sets it aside
    assert done.returncode == 0, done.stderr
    assert "failed to load on 3 passes" in rejected_reason(root, stuck.name)
    assert run_watch(tmp_path, "--once", timeout=120).returncode == 0
