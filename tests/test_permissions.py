"""Permissions as promised (README): every folder the product creates is 0700 and every file
0600, archives included, under a umask of 022; crash logs are 0600 in a 0700 folder. A
sequence of real commands, with the whole root walked after each one."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents.checks.cache import FindingsCache
from incidents.layout import Root
from tests.helpers import BROKEN, CLEAN, FAST, FIXTURES, TIERS_OFF, Cli, capture, use_config


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def loose(top: Path) -> list[str]:
    """Everything under `top` (and `top`) whose mode is not 0700 (folders) or 0600 (files)."""
    bad = []
    for here, dirs, files in os.walk(top):
        for name in [".", *dirs, *files]:
            path = Path(here, name)
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                bad.append(f"{path} is a symlink")
            elif mode != (0o700 if stat.S_ISDIR(st.st_mode) else 0o600):
                bad.append(f"{path.relative_to(top.parent)} {mode:o}")
    return bad


def test_every_folder_is_0700_and_every_file_0600_after_each_command(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    ws = tmp_path / "ws"
    ws.mkdir()
    broken = capture(cli, ws=ws, target="b.py", content=BROKEN)
    assert loose(root.path) == [], "capture"
    clean = capture(cli, ws=ws, target="c.py", content=CLEAN)
    other = capture(cli, ws=ws, target="d.py", content=BROKEN)
    (ws / "pkg" / "sub").mkdir(parents=True)
    nested = capture(cli, ws=ws, target="pkg/sub/e.py", content=BROKEN)  # its copies nest
    plan = (FIXTURES / "plans" / "valid.json").read_text().replace("INCIDENT_ID", other)
    (tmp_path / "plan.json").write_text(plan)
    steps: list[tuple[str, ...]] = [
        ("drive", broken),  # escalated: error_archive/escalated/
        ("drive", clean),  # resolved (not reproduced): error_archive/resolved/
        ("plan", other, "--from", str(tmp_path / "plan.json")),
        ("plan", other),
        ("watch", "--once"),  # the nested one, by a worker
        ("archive", other, "--escalated", "--reason", "by hand"),
        ("review",),
        ("pause", "--reason", "maintenance"),
        ("status",),
        ("status", "--all", "--json"),
        ("resume",),
        ("reindex",),
        ("doctor",),
    ]
    for args in steps:
        r = cli(*args)
        assert r.code in (0, 1), f"{args}: {r.err}"
        assert loose(root.path) == [], " ".join(args)
    assert (root.bucket("resolved") / clean).is_dir() and (
        root.bucket("escalated") / broken
    ).is_dir()
    assert (root.bucket("escalated") / nested).is_dir()
    # the checks' cache: ours is 0700/0600; the tools (ruff, mypy) write their own caches
    # with their own modes, each in a 0700 folder we made for it
    checks = cache / "incidents" / "checks"
    tools = [p for p in (checks / "tools").iterdir()]
    assert tools, "no tool cache was made: the test shows nothing"
    assert [
        f"{p} {stat.S_IMODE(p.stat().st_mode):o}"
        for p in tools
        if stat.S_IMODE(p.stat().st_mode) != 0o700
    ] == []
    assert loose(FindingsCache(checks).root) == []
    for folder in (cache, cache / "incidents", checks, checks / "tools"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_a_crash_log_is_0600_in_a_0700_folder(tmp_path: Path, umask_022: None) -> None:
    """The crash log writer of a real process under umask 022, in a folder it creates."""
    crash = tmp_path / "deep" / "crash"
    env = {**os.environ, "INCIDENTS_CRASH_DIR": str(crash)}
    code = "from incidents import cli; print(cli._crash_log(RuntimeError('boom')))"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert Path(r.stdout.strip()).is_file(), r.stdout + r.stderr
    assert "boom" in Path(r.stdout.strip()).read_text()
    assert loose(tmp_path / "deep") == []


def test_the_default_crash_folder_is_made_private_again(tmp_path: Path, umask_022: None) -> None:
    """A crash folder an older version (or a person) left 0755 is put back to 0700 before
    a crash log is written in it."""
    home = tmp_path / "home"
    crash = home / ".cache" / "incidents" / "crash"
    crash.mkdir(parents=True, mode=0o755)
    os.chmod(crash, 0o755)
    env = {k: v for k, v in os.environ.items() if k != "INCIDENTS_CRASH_DIR"}
    env["HOME"] = str(home)
    code = "from incidents import cli; print(cli._crash_log(RuntimeError('boom')))"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    log = Path(r.stdout.strip())
    assert log.parent == crash and log.is_file(), r.stdout + r.stderr
    assert stat.S_IMODE(crash.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
