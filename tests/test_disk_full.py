"""Full and read-only disks (issue 15, deliver 4): a write that fails for ENOSPC or EROFS is
one line naming the path and the cause, exit 1, no crash log; a failed capture leaves no
staging folder; status, review --stdout and doctor read a read-only root; watch says its
ticks failed. A real 2 MiB tmpfs is mounted (root only; skipped with the reason otherwise)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import Cli, incidents


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A 2 MiB tmpfs holding the reports root (INCIDENTS_ROOT)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (run the suite as root to test full disks)")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    monkeypatch.setenv("INCIDENTS_ROOT", str(mount / "reports"))
    try:
        yield mount
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(mount)], capture_output=True)
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount: Path) -> None:
    """Take every free byte of the filesystem."""
    fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    assert os.statvfs(mount).f_bavail == 0


def _remount_ro(mount: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)


def _one_clean_line(r_err: str, cause: str) -> None:
    lines = r_err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("incidents: cannot write "), r_err
    assert f"({cause})" in lines[0] and "internal error" not in lines[0], r_err


def test_a_full_disk_is_one_line_exit_1_no_crash_log_and_no_staging_leftover(
    small: Path, cli: Cli, tmp_path: Path
) -> None:
    first = cli("capture", "--step", "s", "--message", "before the disk filled")
    assert first.code == 0, first.err
    incident_id = first.out.strip()
    root = Root(small / "reports")
    _fill(small)
    log = tmp_path / "big.log"
    log.write_text("line of output\n" * 5000)
    r = cli("capture", "--step", "t", "--message", "boom", "--log-file", str(log), "--no-dedupe")
    assert r.code == 1
    _one_clean_line(r.err, "ENOSPC")
    assert str(root.staging) in r.err, "the line names the file that could not be written"
    assert os.listdir(root.staging) == [], "a failed capture left its staging folder"
    for args in (("pause", "--reason", "disk full"),
                 ("archive", incident_id, "--resolved", "--reason", "fixed by hand")):  # fmt: skip
        r = cli(*args)
        assert r.code == 1, (args, r.err)
        _one_clean_line(r.err, "ENOSPC")
    assert not (tmp_path / "crash").exists(), "a full disk wrote a crash log"
    assert (root.inbox / incident_id).is_dir(), "nothing is lost"
    # reads still answer on a full disk
    for read in (("status", incident_id), ("status", incident_id, "--json"), ("status",)):
        r = cli(*read)
        assert r.code == 0, (read, r.err)
        assert incident_id in r.out, read


def test_a_read_only_root_is_read_by_status_review_and_doctor(
    small: Path, cli: Cli, tmp_path: Path
) -> None:
    incident_id = cli("capture", "--step", "s", "--message", "captured before ro").out.strip()
    assert cli("status").code == 0  # the mirror exists
    root = Root(small / "reports")
    _remount_ro(small)
    with pytest.raises(OSError) as raised:
        (small / "probe").write_text("x")
    assert raised.value.errno == errno.EROFS
    r = cli("capture", "--step", "t", "--message", "boom")
    assert r.code == 1
    _one_clean_line(r.err, "EROFS")
    r = cli("status")
    assert r.code == 0, r.err
    assert incident_id in r.out and "read-only filesystem: listed from the folders" in r.err
    r = cli("status", "--all", "--json")
    assert r.code == 0 and [x["incident_id"] for x in r.json()["incidents"]] == [incident_id]
    r = cli("review", "--stdout")
    assert r.code == 0 and r.out.startswith("<!DOCTYPE html>"), r.err
    r = cli("doctor")
    assert r.code == 1 and "Traceback" not in r.out + r.err
    assert f"FAIL read-only: {root.path} is on a read-only filesystem" in r.out
    assert "WARN database: not opened: the root is read-only" in r.out
    done = incidents("watch", "--log-json", "--once", cwd=tmp_path)  # INCIDENTS_ROOT: small
    assert done.returncode == 1, done.stderr
    _one_clean_line(done.stderr, "EROFS")
    assert not (tmp_path / "crash").exists()


def test_reindex_and_doctor_on_a_full_disk_say_the_disk_is_full(
    small: Path, cli: Cli, tmp_path: Path
) -> None:
    """Issue 15 review: `reindex` exited 2 with "cannot open the mirror database ...: disk
    I/O error" and `doctor` said "FAIL database ... disk I/O error", fix: reindex. SQLite
    gives no errno: statvfs of the folder tells the disk is full."""
    incident_id = cli("capture", "--step", "s", "--message", "before the disk filled").out.strip()
    assert cli("status").code == 0  # the mirror exists
    root = Root(small / "reports")
    _fill(small)
    r = cli("reindex")
    assert r.code == 1, r.err
    _one_clean_line(r.err, "ENOSPC")
    assert str(root.db_path.parent) in r.err
    assert not (tmp_path / "crash").exists()
    r = cli("doctor")
    assert r.code == 1 and "Traceback" not in r.out + r.err
    lines = r.out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("FAIL database:"))
    assert "the disk is full" in lines[at] and "(ENOSPC)" in lines[at], r.out
    fix = lines[at + 1]
    assert "free space" in fix and "incidents reindex" not in fix, fix
    assert (root.inbox / incident_id).is_dir()


def test_reindex_on_a_read_only_root_says_read_only(small: Path, cli: Cli) -> None:
    """Issue 15 review: "unable to open database file", exit 2, on EROFS."""
    cli("capture", "--step", "s", "--message", "captured before ro")
    assert cli("status").code == 0
    _remount_ro(small)
    r = cli("reindex")
    assert r.code == 1, r.err
    _one_clean_line(r.err, "EROFS")
