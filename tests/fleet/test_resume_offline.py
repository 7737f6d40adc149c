"""`incidents resume` on a host that cannot reach the shared mirror at that moment: the
person's resume is not lost. The host's next watcher pass lifts the fleet's pause (it
used to copy the standing pause back into the flag the person had just cleared)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from incidents import mirror, pause
from incidents.layout import Root
from incidents.mirror import target
from tests.helpers import Cli


def test_a_resume_made_while_the_database_is_unreachable_lifts_the_fleet_pause_later(
    cli: Cli, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Root(tmp_path / "reports")
    (tmp_path / "incidents.toml").write_text('[mirror]\nhost = "a"\ntimeout_s = 1.0\n')
    monkeypatch.setenv("INCIDENTS_CONFIG", str(tmp_path / "incidents.toml"))
    monkeypatch.setenv("INCIDENTS_ROOT", str(root.path))
    monkeypatch.setenv(target.ENV_URL, pg_url)
    assert cli("pause", "--reason", "bad deploy").code == 0
    monkeypatch.setenv(target.ENV_URL, f"postgresql:///x?host={tmp_path}/nowhere")  # down
    resumed = cli("resume")
    assert resumed.code == 0 and pause.current(root) is None
    assert "reindex" not in resumed.err  # reindex would not lift it
    env = {**os.environ, target.ENV_URL: pg_url}
    done = subprocess.run(
        [sys.executable, "-m", "incidents", "watch", "--once"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert pause.current(root) is None, "the pass paused the host again"
    target.bind(root.path, pg_url, "a")
    try:
        conn = mirror.connect(root.db_path)
        try:
            assert mirror.active_pause(conn) is None  # lifted for every host
        finally:
            conn.close()
    finally:
        target.unbind(root.path)
