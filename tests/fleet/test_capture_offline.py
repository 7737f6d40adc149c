"""Capture never waits for PostgreSQL: with the mirror configured on a server that does not
answer, it writes its folders and returns, without loading a database driver."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from incidents.layout import Root
from incidents.mirror import target
from tests.helpers import SCRIPTS


def test_capture_writes_its_folders_and_never_loads_a_driver(tmp_path: Path) -> None:
    url = f"postgresql:///x?host={tmp_path}/nowhere"
    (tmp_path / "incidents.toml").write_text(f'[mirror]\nurl = "{url}"\n')
    env = {**os.environ, "INCIDENTS_ROOT": str(tmp_path / "reports"),
           "INCIDENTS_CONFIG": str(tmp_path / "incidents.toml"), target.ENV_URL: url}  # fmt: skip
    started = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-X", "importtime", str(SCRIPTS / "error_capture.py"),
         "--step", "s", "--message", "m"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    took = time.monotonic() - started
    assert p.returncode == 0, p.stderr
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if "|" in line}
    assert not {m for m in imported if m.split(".")[0] in ("psycopg", "psycopg_pool", "sqlite3")}
    assert "incidents.mirror" not in imported
    assert took < 5.0  # the driver's own connect timeout alone would be 3 s
    incident_id = p.stdout.strip().splitlines()[-1]
    assert (Root(tmp_path / "reports").inbox / incident_id / "incident.json").is_file()
