"""The watcher on real observers and real subprocesses: pickup, two watchers, signals,
hand-copied bundles, poison incidents, the pause flag."""

from __future__ import annotations

import collections
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from incidents import pause
from incidents.layout import Root
from incidents.watch.intake import Examined, Verdict, examine
from tests.watch.helpers import (
    FAST_TOML,
    capture_step,
    closed,
    mirror_rows,
    places,
    run_watch,
    start_watch,
    stop,
    transitions,
    wait_until,
    workspace,
)


def test_until_idle_closes_clean_and_fixable(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    ids = [capture_step(tmp_path, "clean"), capture_step(tmp_path, "dirty", dirty=True)]
    done = run_watch(tmp_path, "--until-idle", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert {i: places(root)[i] for i in ids} == {i: ["error_archive/resolved"] for i in ids}
    assert '"event": "terminal"' in done.stderr
    assert mirror_rows(root) == {i: "resolved" for i in ids}
    # an archived incident's lease record goes with it; its lock file stays
    assert [p.name for p in (root.state / "leases").iterdir() if p.suffix == ".json"] == []
    assert (root.state / "pending").is_dir() and list((root.state / "pending").iterdir()) == []


@pytest.mark.slow
def test_200_incidents_dropped_while_watching_all_close(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    watcher = start_watch(tmp_path, "--workers", "2")
    try:
        ids = [capture_step(tmp_path, f"m{i}", dirty=i % 4 == 0) for i in range(200)]
        assert wait_until(lambda: closed(root, ids), timeout=150), collections.Counter(
            w for i in ids for w in places(root).get(i, ["lost"])
        )
    finally:
        code = stop(watcher)
    assert code == 0, watcher.stderr.read() if watcher.stderr else ""
    assert all(places(root)[i] == ["error_archive/resolved"] for i in ids)


def test_two_watchers_run_every_step_exactly_once(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    a = start_watch(tmp_path, "--workers", "2", "--poll", "0.3")
    b = start_watch(tmp_path, "--workers", "2", "--poll", "0.3")
    try:
        ids = [capture_step(tmp_path, f"t{i}", dirty=i % 2 == 0) for i in range(60)]
        assert wait_until(lambda: closed(root, ids), timeout=120)
    finally:
        assert stop(a) == 0
        assert stop(b) == 0
    seen = transitions(root)
    repeats = [k for k, n in collections.Counter(seen).items() if n > 1]
    assert repeats == []
    for i in ids:
        runs = sorted(p.name for p in (root.path / "error_runs" / i).iterdir())
        attempts = [n for n in runs if n.startswith("attempt_")]
        assert attempts == (
            ["attempt_01.json"] if int(i.split("_t")[1][:2].rstrip("_")) % 2 == 0 else []
        ), runs
    both = {
        line.split('"id": "')[1].split('"')[0]
        for p in (a, b)
        for line in (p.stderr.read() if p.stderr else "").splitlines()
        if '"event": "terminal"' in line
    }
    assert both == set(ids)


def test_first_signal_lets_the_running_tick_finish(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(1.5)\n")
    ids = [capture_step(tmp_path, f"s{i}", verify=f"{sys.executable} slow.py") for i in range(3)]
    watcher = start_watch(tmp_path, "--workers", "1")
    runs = root.path / "error_runs"
    assert wait_until(lambda: any(runs.glob("*/plan*")) or any(root.inbox.glob("*/state.json")), 20)
    time.sleep(0.5)
    started = time.monotonic()
    assert stop(watcher, signal.SIGTERM) == 0
    assert time.monotonic() - started < 15
    err = watcher.stderr.read() if watcher.stderr else ""
    assert '"event": "stopping"' in err
    for i in ids:  # no step left begun: the running tick finished
        state = root.inbox / i / "state.json"
        if state.exists():
            assert '"pending": null' in state.read_text().replace(
                '"pending":null', '"pending": null'
            )


def test_second_signal_stops_at_once_and_state_resumes(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(3)\n")
    ids = [capture_step(tmp_path, f"q{i}", verify=f"{sys.executable} slow.py") for i in range(2)]
    watcher = start_watch(tmp_path, "--workers", "1")
    assert wait_until(lambda: any(root.inbox.glob("*/state.json")), 20)
    time.sleep(0.3)
    watcher.send_signal(signal.SIGINT)
    time.sleep(0.2)
    started = time.monotonic()
    assert stop(watcher, signal.SIGINT, timeout=10) == 130
    assert time.monotonic() - started < 2
    done = run_watch(tmp_path, "--until-idle")
    assert done.returncode == 0, done.stderr
    assert all(places(root)[i][0].startswith("error_archive") for i in ids)


def test_hand_copied_bundle_waits_until_complete(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    source_id = capture_step(tmp_path, "hand")
    source = tmp_path / "copy_of_bundle"
    shutil.move(str(root.inbox / source_id), source)
    watcher = start_watch(tmp_path, "--workers", "1", "--poll", "0.3")
    try:
        time.sleep(1.0)  # the watcher is up
        target = root.inbox / source_id
        target.mkdir()
        for f in sorted(source.iterdir(), key=lambda p: (p.name != "incident.json", p.name)):
            shutil.copyfile(f, target / f.name)  # incident.json first, then the rest, slowly
            time.sleep(0.3)
            assert not (target / "state.json").exists(), "worked before the copy was complete"
        assert wait_until(lambda: closed(root, [source_id]), 30)
    finally:
        assert stop(watcher) == 0


def test_folder_that_never_becomes_valid_is_rejected_with_a_reason(
    tmp_path: Path, root: Root
) -> None:
    workspace(tmp_path)
    watcher = start_watch(tmp_path, "--workers", "1", "--poll", "0.3")
    try:
        time.sleep(1.0)
        junk = root.inbox / "incident_junk_by_hand"
        junk.mkdir()
        (junk / "incident.json").write_text("{ not json")
        (junk / "notes.txt").write_text("kept, never deleted\n")
        rejected = root.rejected / "incident_junk_by_hand"
        assert wait_until(rejected.exists, 20)
    finally:
        assert stop(watcher) == 0
    assert (rejected / "notes.txt").read_text() == "kept, never deleted\n"
    assert "incomplete bundle" in (rejected / "reason.txt").read_text()
    assert not junk.exists()


def test_poison_incident_is_quarantined_after_three_recoveries(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    (tmp_path / "boom.py").write_text("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    poison = capture_step(tmp_path, "poison", verify=f"{sys.executable} boom.py")
    others = [capture_step(tmp_path, f"ok{i}") for i in range(4)]
    done = run_watch(tmp_path, "--until-idle", "--workers", "1", timeout=120)
    assert done.returncode == 0, done.stderr
    assert places(root)[poison] == ["error_archive/escalated"]
    assert all(places(root)[i] == ["error_archive/resolved"] for i in others)
    assert done.stderr.count('"event": "worker_died"') == 3
    assert (root.state / "recoveries" / poison).read_text() == "3"
    reason = (root.path / "error_runs" / poison / "run_result.json").read_text()
    assert "poison incident" in reason


def test_pause_flag_is_honoured(tmp_path: Path, root: Root) -> None:
    workspace(tmp_path)
    root.ensure()
    pause.pause(root, "too many escalations")
    ids = [capture_step(tmp_path, "paused")]
    done = run_watch(tmp_path, "--once")
    assert done.returncode == 0
    assert places(root)[ids[0]] == ["error_inbox"]
    assert '"event": "paused"' in done.stderr
    pause.resume(root)
    assert run_watch(tmp_path, "--once").returncode == 0
    assert places(root)[ids[0]] == ["error_archive/resolved"]


GRACE_0 = FAST_TOML.replace("reject_grace_s = 2.0", "reject_grace_s = 0.0")


def killed_mid_write(folder: Path, name: str) -> Path:
    """A real writer killed mid-write: it creates its atomic-write temp file for `name`
    in `folder` (as `fsutil.atomic_write_bytes` does), then is SIGKILLed."""
    code = ("import os, signal, sys\nfrom incidents import fsutil\n"
            "tmp = os.path.join(sys.argv[1], f'.{sys.argv[2]}.{os.getpid()}.{os.urandom(4).hex()}.tmp')\n"
            "fsutil.write_new_file(tmp, b'half of a new log tail')\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")  # fmt: skip
    p = subprocess.run([sys.executable, "-c", code, str(folder), name], check=False)
    assert p.returncode == -signal.SIGKILL
    [tmp] = folder.glob(f".{name}.*.tmp")
    return tmp


def backdate(folder: Path, seconds: float = 30.0) -> None:
    """Make a bundle look long quiet (past `stable_s`) without sleeping."""
    when = time.time() - seconds
    for p in [*folder.iterdir(), folder]:
        os.utime(p, (when, when), follow_symlinks=False)


def test_a_temp_file_left_by_a_killed_writer_does_not_get_a_valid_bundle_rejected(
    tmp_path: Path, root: Root
) -> None:
    workspace(tmp_path, GRACE_0)
    incident_id = capture_step(tmp_path, "leftover")
    tmp = killed_mid_write(root.inbox / incident_id, "log_tail.txt")
    backdate(root.inbox / incident_id)
    done = run_watch(tmp_path, "--once")
    assert done.returncode == 0, done.stderr
    assert places(root)[incident_id] == ["error_archive/resolved"], done.stderr
    assert not (root.path / "error_archive" / "resolved" / incident_id / tmp.name).exists()


def test_a_hand_copy_temp_file_still_keeps_a_bundle_from_being_taken(
    tmp_path: Path, root: Root
) -> None:
    workspace(tmp_path, GRACE_0)
    incident_id = capture_step(tmp_path, "rsync")
    (root.inbox / incident_id / ".status.txt.Xq3d9A").write_text("new\n")  # rsync's shape
    backdate(root.inbox / incident_id)
    done = run_watch(tmp_path, "--once")
    assert done.returncode == 0, done.stderr
    assert places(root)[incident_id] == ["error_rejected"]
    rejected = root.rejected / incident_id
    assert (rejected / ".status.txt.Xq3d9A").exists()
    assert "hidden temp file" in (rejected / "reason.txt").read_text()


HOLD_LOCK = """\
import sys
from pathlib import Path
from incidents import store
from incidents.layout import Root
with store.incident_lock(Root(Path(sys.argv[1])), sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()
"""


def _examine(root: Root, incident_id: str) -> Examined:
    now = time.time_ns()
    return examine(root.inbox / incident_id, now_ns=now, whole_ns=None,
                   stable_s=5.0, grace_s=0.0, root=root)  # fmt: skip


def test_a_temp_file_of_a_live_pid_is_removed_only_when_old_and_unlocked(
    tmp_path: Path, root: Root
) -> None:
    """A live pid may be reused: an old temp file is a leftover when no writer holds the
    incident's lock (every writer of ours does), and kept while one does."""
    incident_id = capture_step(tmp_path, "live")
    folder = root.inbox / incident_id
    tmp = folder / f".log_tail.txt.{os.getpid()}.0123abcd.tmp"
    tmp.write_bytes(b"being written")
    assert _examine(root, incident_id).verdict is Verdict.WAIT  # fresh: a write in progress
    assert tmp.exists()
    backdate(folder)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(root.path), incident_id],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        seen = _examine(root, incident_id)
        assert seen.verdict is Verdict.REJECT and "hidden temp file" in seen.reason
        assert tmp.exists()
    finally:
        holder.communicate("")
    assert _examine(root, incident_id).verdict is Verdict.READY
    assert not tmp.exists()


@pytest.mark.parametrize("workers", ["1", "2"])  # one worker process, several
def test_second_signal_takes_the_running_commands_down(
    tmp_path: Path, root: Root, workers: str
) -> None:
    """A command run by a worker is in a session of its own: without the watcher killing it,
    it would outlive the watcher and run again, twice at once, after a restart."""
    workspace(tmp_path)
    (tmp_path / "slow.py").write_text(
        "import os, pathlib, time\n"
        "pathlib.Path(f'pid.{os.getpid()}').write_text('')\ntime.sleep(60)\n"
    )
    capture_step(tmp_path, "long", verify=f"{sys.executable} slow.py")
    watcher = start_watch(tmp_path, "--workers", workers)
    work = tmp_path / "work" / "long"
    assert wait_until(lambda: any(work.glob("pid.*")), 30)
    [marker] = work.glob("pid.*")
    pid = int(marker.name.split(".")[1])
    watcher.send_signal(signal.SIGINT)
    time.sleep(0.2)
    assert stop(watcher, signal.SIGINT, timeout=10) == 130
    assert wait_until(lambda: not alive(pid), 5), f"verification command {pid} outlived the watcher"


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_an_occurrence_captured_while_the_incident_is_worked_is_kept(
    tmp_path: Path, root: Root
) -> None:
    """A pickup carries the incident from tick to tick; a capture of the same failure in
    the meantime (here: by the verification command itself) must still count."""
    import contextlib
    import io
    import json

    from incidents.cli import main

    workspace(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    again = [sys.executable, "-m", "incidents", "capture", "--root", str(root.path),
             "--step", "sync", "--message", "sync failed: quota", "--workdir", str(work)]  # fmt: skip
    (work / "again.py").write_text(
        f"import subprocess\nsubprocess.run({again!r}, check=True, capture_output=True)\n"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*again[3:], "--verify", f"{sys.executable} again.py"]) == 0
    incident_id = out.getvalue().strip().splitlines()[-1]
    done = run_watch(tmp_path, "--until-idle", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert places(root)[incident_id] == ["error_archive/resolved"]
    doc = json.loads((root.bucket("resolved") / incident_id / "incident.json").read_text())
    assert doc["occurrences"] == 2 and doc["status"] == "resolved"
