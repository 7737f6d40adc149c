"""`incidents status` and `incidents archive`, and the round trip through the scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from incidents import fsutil, store
from incidents.layout import Root
from incidents.models import RunResult
from tests.helpers import SCRIPTS, Cli, capture, run_script, tree


def test_round_trip_through_the_scripts(root: Root) -> None:
    p = run_script("error_capture.py", "--step", "amazon_download", "--message", "Network timeout")
    assert p.returncode == 0, p.stderr
    incident_id = p.stdout.strip()
    p = run_script("error_status.py")
    assert p.returncode == 0 and incident_id in p.stdout and "amazon_download" in p.stdout
    p = run_script("error_status.py", incident_id, "--json")
    assert json.loads(p.stdout)["incident"]["status"] == "new"
    p = run_script("error_archive.py", incident_id, "--resolved", "--reason", "retried by hand")
    assert p.returncode == 0, p.stderr
    assert (root.bucket("resolved") / incident_id / "incident.json").is_file()
    assert not (root.inbox / incident_id).exists()
    p = run_script("error_status.py")
    assert incident_id not in p.stdout
    p = run_script("error_status.py", "--all", "--json")
    [row] = json.loads(p.stdout)["incidents"]
    assert (row["incident_id"], row["bucket"], row["status"]) == (
        incident_id,
        "resolved",
        "resolved",
    )


def test_status_table_and_filters(cli: Cli) -> None:
    a = capture(cli, step="download", message="timeout one")
    b = capture(cli, step="lint", message="ruff failed")
    r = cli("status")
    assert r.code == 0
    header, *rows = r.out.splitlines()
    assert header.split() == ["ID", "STATUS", "STEP", "CLASS", "AGE", "SEEN"]
    assert {row.split()[0] for row in rows} == {a, b}
    only = cli("status", "--step", "lint", "--json").json()
    assert [i["incident_id"] for i in only["incidents"]] == [b]
    assert cli("status", "--since", "1h").out.count("incident_") == 2
    assert cli("status", "--since", "2999-01-01").out.strip() == "no open incidents"
    assert cli("status", "--status", "planned", "--json").json()["incidents"] == []


def test_status_json_shape_is_stable(cli: Cli) -> None:
    a = capture(cli, step="s", message="m")
    doc = cli("status", "--json").json()
    assert set(doc) == {"root", "paused", "degraded", "spend", "incidents"}
    assert doc["spend"]["attempts"] == 0 and doc["spend"]["by_group"] == {}
    assert doc["degraded"] is None
    assert doc["paused"] is None
    [row] = doc["incidents"]
    assert row["incident_id"] == a
    for key in ("status", "state", "step", "failure_class", "error_code", "signature", "run_id",
                "occurrences", "created_at", "updated_at", "last_seen", "bucket", "location", "age"):  # fmt: skip
        assert key in row, key


def test_status_of_one_incident_and_unknown_ids(cli: Cli) -> None:
    a = capture(cli, step="s", message="the message")
    r = cli("status", a)
    assert r.code == 0 and "the message" in r.out and "error_inbox/" in r.out
    r = cli("status", "incident_nope")
    assert r.code == 1 and "no incident 'incident_nope'" in r.err
    r = cli("status", "../etc")
    assert r.code == 2 and "path separator" in r.err
    r = cli("status", "a..b")
    assert r.code == 2 and "'..'" in r.err


def test_archive_writes_run_result_and_moves_once(cli: Cli, root: Root) -> None:
    a = capture(cli, step="s", message="m")
    r = cli("archive", a, "--escalated", "--reason", "needs a human")
    assert r.code == 0, r.err
    folder = root.bucket("escalated") / a
    doc = json.loads((folder / "incident.json").read_text())
    assert doc["status"] == "escalated" and doc["resolution"] == "needs a human"
    assert (folder / "status.txt").read_text() == "escalated\n"
    result = RunResult.model_validate_json((root.runs_dir(a) / "run_result.json").read_text())
    assert result.final_status == "escalated"
    assert result.archived_to == f"error_archive/escalated/{a}"
    before = tree(root.path / "error_archive"), tree(root.path / "error_runs")
    again = cli("archive", a, "--resolved", "--reason", "x")
    assert again.code == 1 and "already archived" in again.err
    assert (tree(root.path / "error_archive"), tree(root.path / "error_runs")) == before


def test_archive_closes_a_copied_bundle_under_its_folders_name(cli: Cli, root: Root) -> None:
    """A bundle copied by hand keeps the id of its original in incident.json: archive
    still closes it, and its run result names the folder it was closed as."""
    incident_id = capture(cli)
    copy = root.inbox / "incident_copy"
    os.rename(root.inbox / incident_id, copy)
    doc = json.loads((copy / "incident.json").read_text())
    (copy / "incident.json").write_text(json.dumps({**doc, "incident_id": "old name (copied)"}))
    r = cli("archive", "incident_copy", "--escalated", "--reason", "copied by hand")
    assert r.code == 0, r.err
    assert (root.bucket("escalated") / "incident_copy").is_dir()
    result = RunResult.model_validate_json(
        (root.runs_dir("incident_copy") / "run_result.json").read_text()
    )
    assert result.incident_id == "incident_copy" and result.final_status == "escalated"
    assert not list((root.state / "pending").iterdir())  # the close finished


def test_archive_bad_input(cli: Cli, root: Root) -> None:
    a = capture(cli, step="s", message="m")
    before = tree(root.inbox)
    assert cli("archive", "incident_unknown", "--resolved", "--reason", "x").code == 1
    both = cli("archive", a, "--resolved", "--escalated", "--reason", "x")
    assert both.code == 2 and "exactly one" in both.err
    assert cli("archive", a, "--resolved").code == 2
    assert cli("archive", "x/y", "--resolved", "--reason", "r").code == 2
    assert tree(root.inbox) == before


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["status", "../x"], 2, "invalid incident id '../x'"),
        (["status", "--since", "bogus"], 2, "--since 'bogus'"),
        (["status", "--status", "bogus"], 2,
         "--status 'bogus': use one of new, planned, running, resolved, escalated"),
        (["status", "incident_x", "--since", "bogus"], 2, "--since 'bogus'"),
        (["status", "incident_nope"], 1, "no reports root at"),
        (["archive", "nope_id", "--resolved", "--reason", "r"], 1, "no incident 'nope_id'"),
        (["archive", "../x", "--resolved", "--reason", "r"], 2, "invalid incident id"),
    ],
)  # fmt: skip
def test_bad_input_or_unknown_ids_do_not_create_a_missing_root(
    cli: Cli, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    fresh = tmp_path / "fresh"
    r = cli(*args, "--root", str(fresh))
    assert (r.code, r.out) == (code, "")
    assert len(r.err.splitlines()) == 1 and message in r.err, r.err
    assert not fresh.exists()


def test_status_filter_must_be_a_known_status(cli: Cli, root: Root) -> None:
    capture(cli, step="s", message="m")
    before = tree(root.path)
    r = cli("status", "--status", "bogus")
    assert r.code == 2 and "use one of new, planned, running, resolved, escalated" in r.err
    assert tree(root.path) == before


def test_an_interrupted_close_is_completed_by_the_next_command(cli: Cli, root: Root) -> None:
    """The state a crash leaves between the status update and the rename."""
    a = capture(cli, step="s", message="m")
    folder = root.inbox / a
    fsutil.atomic_write_json(root.state / "pending" / a, {"bucket": "resolved", "reason": "done"})
    store.set_status(folder, store.read_incident(folder), "resolved", resolution="done")
    r = cli("status")
    assert r.code == 0 and a not in r.out
    assert not folder.exists() and (root.bucket("resolved") / a / "incident.json").is_file()
    assert (root.runs_dir(a) / "run_result.json").is_file()
    assert os.listdir(root.state / "pending") == []


def test_status_rebuilds_a_deleted_mirror(cli: Cli, root: Root) -> None:
    a = capture(cli, step="s", message="m")
    b = capture(cli, step="t", message="n")
    cli("archive", b, "--resolved", "--reason", "ok")
    before = cli("status", "--all", "--json").json()
    for p in root.state.glob("mirror.sqlite3*"):
        p.unlink()
    after = cli("status", "--all", "--json").json()

    def strip(d: Any) -> list[tuple[str, str, str, str]]:
        return sorted(
            (r["incident_id"], r["status"], r["bucket"], r["step"]) for r in d["incidents"]
        )

    assert strip(after) == strip(before) and {a, b} == {r[0] for r in strip(after)}


def test_a_malformed_bundle_is_reported_and_moved_aside_with_a_reason(
    cli: Cli, root: Root, tmp_path: Path
) -> None:
    good = capture(cli, step="s", message="m")
    (tmp_path / "incidents.toml").write_text("[watch]\nreject_grace_s = 0\n")
    bad = root.inbox / "incident_20260101_000000_broken_aaaaaa"
    bad.mkdir()
    (bad / "incident.json").write_text('{"incident_id": "incident_20260101_000000_broken_aaaaaa",')
    (bad / "status.txt").write_text("new\n")
    r = cli("status")
    assert r.code == 0 and good in r.out
    assert str(bad) in r.err and "not valid JSON" in r.err and "moved to" in r.err
    moved = root.rejected / bad.name
    assert not bad.exists() and (moved / "incident.json").is_file()
    assert "not valid JSON" in (moved / "reason.txt").read_text()
    assert bad.name not in cli("status", "--all").out


def test_a_broken_bundle_copied_in_with_old_mtimes_is_left_within_the_grace_period(
    cli: Cli, root: Root, tmp_path: Path
) -> None:
    """Issue 15 review: status set an unloadable bundle aside by its mtimes alone, so one
    just copied in by `cp -a` or `mv` (old mtimes kept) was set aside at once, while the
    watcher (mtime or ctime, whichever is later) still waited for it to settle."""
    capture(cli, step="s", message="m")
    (tmp_path / "incidents.toml").write_text("[watch]\nreject_grace_s = 60\n")
    arriving = root.inbox / "incident_20260101_000000_copying_cccccc"
    arriving.mkdir()
    (arriving / "incident.json").write_text('{"incident_id": "incident_2026')
    (arriving / "status.txt").write_text("new\n")
    old = time.time() - 3600  # as the source had them: an hour old
    for path in (arriving / "incident.json", arriving / "status.txt", arriving):
        os.utime(path, (old, old))
    r = cli("status")
    assert r.code == 0 and str(arriving) in r.err and "moved to" not in r.err, r.err
    assert arriving.is_dir() and not (root.rejected / arriving.name).exists()


def test_an_incomplete_folder_is_reported_but_left_within_the_grace_period(
    cli: Cli, root: Root
) -> None:
    capture(cli, step="s", message="m")
    arriving = root.inbox / "incident_20260101_000000_copying_bbbbbb"
    arriving.mkdir()
    (arriving / "status.txt").write_text("new\n")
    r = cli("status")
    assert r.code == 0 and str(arriving) in r.err
    assert arriving.is_dir() and not (root.rejected / arriving.name).exists()


BASE_PYTHON = getattr(sys, "_base_executable", "") or sys.executable


@pytest.mark.skipif(
    subprocess.run([BASE_PYTHON, "-c", "import typer"], capture_output=True).returncode == 0,
    reason="the base interpreter has the dependencies itself: nothing to re-run",
)
def test_status_and_archive_scripts_run_from_a_python_without_the_dependencies(root: Root) -> None:  # fmt: skip
    """`python3 scripts/error_status.py` with a python that lacks typer (the shebang's,
    say) runs again with the checkout's .venv instead of crashing."""
    env = {"PATH": "/usr/bin:/bin", "INCIDENTS_ROOT": str(root.path), "HOME": str(root.path)}
    captured = subprocess.run(
        [BASE_PYTHON, str(SCRIPTS / "error_capture.py"), "--step", "s", "--message", "m"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert captured.returncode == 0, captured.stderr  # capture needs nothing but the stdlib
    incident_id = captured.stdout.strip()
    status = subprocess.run([BASE_PYTHON, str(SCRIPTS / "error_status.py"), incident_id],
                            capture_output=True, text=True, env=env)  # fmt: skip
    assert status.returncode == 0 and incident_id in status.stdout, status.stderr
    archive = subprocess.run(
        [BASE_PYTHON, str(SCRIPTS / "error_archive.py"), incident_id, "--resolved",
         "--reason", "fixed by hand"], capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert archive.returncode == 0, archive.stderr
    assert (root.bucket("resolved") / incident_id).is_dir()
