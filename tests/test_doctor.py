"""`incidents doctor`: exit 0 on a healthy root, non-zero with a fix when something is wrong."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from incidents import pause
from incidents.layout import Root
from tests.debian import bubblewrap_or_skip
from tests.helpers import CLEAN, Cli, capture
from tests.watch.helpers import capture_step, run_watch, workspace


def test_healthy_root(tmp_path: Path, root: Root, cli: Cli) -> None:
    bwrap = bubblewrap_or_skip()  # without it, doctor rightly warns: fixers are not contained
    workspace(tmp_path)
    capture_step(tmp_path, "d1")
    assert run_watch(tmp_path, "--until-idle").returncode == 0
    r = cli("doctor")
    assert r.code == 0, r.out
    assert "ok   database: integrity_check ok" in r.out
    assert "ok   mirror: 1 incident(s), same as the folders" in r.out
    assert "ok   tool ruff:" in r.out
    assert f"ok   containment: fixers run under bubblewrap ({bwrap.label})" in r.out
    assert r.out.rstrip().endswith("0 problem(s), 0 warning(s)")


def test_world_writable_root_fails_with_fix(root: Root, cli: Cli) -> None:
    root.ensure()
    os.chmod(root.path, 0o777)
    r = cli("doctor")
    assert r.code == 1
    assert f"FAIL root: {root.path} is world-writable\n     fix: chmod o-w {root.path}" in r.out


def test_drift_missing_tool_stale_lease_and_pause(tmp_path: Path, root: Root, cli: Cli) -> None:
    (tmp_path / "incidents.toml").write_text(
        '[checks]\ntools = ["ruff", "gone"]\n[checks.profiles.gone]\n'
        'argv = ["no-such-linter-xyz", "{files}"]\nparser = "ruff-json"\nlanguage = "python"\n'
        'globs = ["*.py"]\n[watch]\nstaging_grace_s = 0\n'
    )  # no grace: the folder moved in by hand is drift at once, not a bundle arriving
    root.ensure()
    r0 = cli("reindex")
    assert r0.code == 0, r0.err
    (root.inbox / "incident_moved_by_hand").mkdir()  # a folder the mirror does not know
    (root.state / "leases" / "incident_x.json").write_text(json.dumps({
        "incident_id": "incident_x", "owner": "w", "generation": 1, "expires_at": 1e12,
        "pid": 999_999_999, "host": __import__("socket").gethostname(), "agent": None,
    }))  # fmt: skip
    pause.pause(root, "too many escalations")
    r = cli("doctor", "--json")
    assert r.code == 1
    by = {f["check"]: f for f in r.json()}
    assert by["mirror"]["level"] == "fail" and "reindex" in by["mirror"]["fix"]
    assert by["tool gone"]["level"] == "fail"
    assert "program not found: no-such-linter-xyz" in by["tool gone"]["detail"]
    assert by["leases"]["level"] == "warn" and "incident_x" in by["leases"]["detail"]
    assert by["pause"]["level"] == "warn" and by["pause"]["fix"].startswith("incidents resume")


def test_corrupt_database_fails(root: Root, cli: Cli) -> None:
    root.ensure()
    root.db_path.write_bytes(b"this is not a database" * 100)
    r = cli("doctor")
    assert r.code == 1
    assert "FAIL database" in r.out and "reindex" in r.out


def test_capture_hint_pending_is_not_drift(tmp_path: Path, root: Root, cli: Cli) -> None:
    """A capture only leaves `.state/dirty/<id>` for the mirror: doctor folds it in first."""
    workspace(tmp_path)
    assert cli("reindex").code == 0
    incident_id = capture_step(tmp_path, "d2")
    assert (root.state / "dirty" / incident_id).exists()
    r = cli("doctor")
    assert "ok   mirror: 1 incident(s), same as the folders" in r.out, r.out
    assert r.code == 0, r.out
    assert not (root.state / "dirty" / incident_id).exists()


def test_world_writable_inbox_fails_with_fix(root: Root, cli: Cli) -> None:
    """Anyone who can drop a bundle in error_inbox/ runs its verify command as the watcher."""
    root.ensure()
    os.chmod(root.inbox, 0o777)
    r = cli("doctor", "--json")
    assert r.code == 1
    by = {f["check"]: f for f in r.json()}
    assert by["permissions"]["level"] == "fail", by["permissions"]
    assert "error_inbox" in by["permissions"]["detail"]
    assert by["permissions"]["fix"] == f"chmod go-w {root.inbox}"


def test_group_writable_root_fails_with_fix(root: Root, cli: Cli) -> None:
    root.ensure()
    os.chmod(root.path, 0o770)
    r = cli("doctor")
    assert r.code == 1, r.out
    assert "FAIL permissions: writable by group/others: . (drwxrwx---)" in r.out
    assert f"fix: chmod go-w {root.path}" in r.out


def test_group_writable_staging_fails(root: Root, cli: Cli) -> None:
    """Bundles are renamed from .staging/ into the inbox: swapping one there is as bad."""
    root.ensure()
    os.chmod(root.path / ".staging", 0o730)
    r = cli("doctor")
    assert r.code == 1, r.out
    assert f"fix: chmod go-w {root.path / '.staging'}" in r.out


def test_group_readable_archive_only_warns(root: Root, cli: Cli) -> None:
    root.ensure()
    os.chmod(root.bucket("resolved"), 0o750)
    r = cli("doctor", "--json")
    by = {f["check"]: f for f in r.json()}
    assert by["permissions"]["level"] == "warn", by["permissions"]


def test_a_seal_key_others_can_read_fails_with_fix(tmp_path: Path, root: Root, cli: Cli) -> None:
    """Every step refuses to work with it (a key others can read forges seals)."""
    incident_id = capture(cli, ws=tmp_path, target="clean.py", content=CLEAN)
    assert "ok   seal: state.json seal key present" in cli("doctor").out
    os.chmod(root.seal_key, 0o644)
    r = cli("doctor")
    assert r.code == 1
    assert f"FAIL seal: {root.seal_key}: is readable by others" in r.out
    assert f"fix: chmod 600 {root.seal_key}" in r.out
    r = cli("step", incident_id)
    assert r.code != 0 and "is readable by others" in r.err


def test_doctor_lists_bundles_left_unworked_and_staging_leftovers(
    tmp_path: Path, root: Root, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15: bundles that never left the inbox, and 19 staging leftovers holding 152 MB,
    were 0 problems for doctor. A bundle waiting for an agent, or one being worked, is fine."""
    from incidents import leases
    from tests.bundles import drop
    from tests.helpers import BROKEN, use_config

    use_config(tmp_path, monkeypatch, '[checks]\ntools = ["ruff"]\n[tiers.aider]\n'
               'mode = "handoff"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
               "[watch]\nstaging_grace_s = 0\n")  # fmt: skip
    ws = tmp_path / "ws"
    ws.mkdir()
    waiting = capture(cli, message="f.py broken", ws=ws, target="f.py", content=BROKEN)
    assert "AWAIT_HANDOFF" in cli("drive", waiting).out
    never = drop(root, "never", ws)
    worked = drop(root, "worked", ws)
    leases.acquire(root, worked.name, leases.new_owner("test"), 600)
    broken = drop(root, "broken", ws)
    (broken / "state.json").write_text("{")
    leftover = root.staging / "incident_20261124_000000_x_0123456789ab.1234.abcd0123"
    leftover.mkdir()
    (leftover / "log_tail.txt").write_bytes(os.urandom(3 << 20))
    r = cli("doctor")
    line = next(x for x in r.out.splitlines() if x.startswith("WARN inbox:"))
    assert "2 bundle(s) unchanged for over 0s, neither worked nor waiting" in line
    assert f"{never.name} (never picked up)" in line
    assert f"{broken.name} (cannot be loaded: " in line
    assert waiting not in line and worked.name not in line
    assert "incidents watch --once" in r.out
    staging = next(x for x in r.out.splitlines() if x.startswith("WARN staging:"))
    assert "1 leftover(s) of killed or failed captures" in staging
    assert "3.0 MiB on disk" in staging and leftover.name in staging
    assert f"rm -rf -- {root.staging}/*" in r.out


def test_a_link_in_staging_is_measured_as_a_link_never_followed(
    tmp_path: Path, root: Root, cli: Cli
) -> None:
    """Issue 15 review: `_size` walked the target of a symlink in `.staging/` (a link to `/`
    walked the whole filesystem). The link is one small entry; so is one further down."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.bin").write_bytes(os.urandom(3 << 20))
    root.ensure()
    (root.staging / "incident_20261124_000000_x_0123456789ab.1.link").symlink_to(outside)
    folder = root.staging / "incident_20261124_000000_y_0123456789ab.2.abcd0123"
    folder.mkdir()
    (folder / "inner").symlink_to(outside)
    r = cli("doctor")
    staging = next(x for x in r.out.splitlines() if x.startswith("WARN staging:"))
    assert "2 leftover(s) of killed or failed captures" in staging
    assert "MiB" not in staging and "KiB on disk" in staging, staging


def test_inbox_entries_that_are_no_bundle_are_named_with_their_real_age(
    tmp_path: Path, root: Root, cli: Cli
) -> None:
    """Issue 15 review: a regular file in the inbox, seconds old, was 'unchanged for over
    3600s'; a bundle still being copied in (its incident.json half written) was mirror
    drift to fix with reindex."""
    from tests.bundles import drop

    root.ensure()
    assert cli("reindex").code == 0
    (root.inbox / "incident_20261124_000000_file_0123456789ab").write_text("not a folder\n")
    (root.inbox / "notes.txt").symlink_to(tmp_path)
    fresh = drop(root, "fresh", tmp_path)
    (fresh / "incident.json").write_text('{"incident_id": "incident_2026')
    r = cli("doctor", "--json")
    by = {f["check"]: f for f in r.json()}
    assert "unchanged for over" not in r.out
    entries = by["inbox entries"]
    assert entries["level"] == "warn"
    assert "2 entr(ies) in the inbox that are no bundle folder" in entries["detail"]
    assert re.search(
        r"'incident_20261124_000000_file_0123456789ab' \(a regular file, [0-5]s old\)",
        entries["detail"],
    ), entries["detail"]
    assert "'notes.txt' (a symbolic link, " in entries["detail"]
    assert by["mirror"]["level"] == "ok", by["mirror"]
    assert by["mirror"]["detail"] == (
        "0 incident(s), same as the folders (and 1 new in the inbox, not picked up yet)"
    )
    assert fresh.name not in r.out


def test_a_hidden_folder_in_the_inbox_is_reported(
    tmp_path: Path, root: Root, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15 review: `.name` in the inbox is never worked nor set aside; doctor skipped it."""
    from tests.bundles import drop
    from tests.helpers import use_config

    use_config(tmp_path, monkeypatch, "[watch]\nstaging_grace_s = 0\n")
    hidden = drop(root, "hidden", tmp_path)
    hidden.rename(root.inbox / ".incident_copy")
    r = cli("doctor", "--json")
    by = {f["check"]: f for f in r.json()}
    assert by["inbox hidden"]["level"] == "warn"
    assert "1 hidden folder(s) in the inbox, never worked nor set aside: '.incident_copy' " in (
        by["inbox hidden"]["detail"]
    )
