"""What a host says about a mirror URL it cannot use: one line, the reason, and never the
URL's password, wherever the text goes (the terminal, the watcher's log, degraded.json)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from incidents.mirror import target
from tests import pg
from tests.helpers import Cli

SECRET = "S3cretPw-never-shown"


def test_a_url_urlsplit_cannot_read_is_one_line_without_its_password(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(target.ENV_URL, f"postgresql://alice:{SECRET}@[::1/fleet")
    done = cli("reindex", "--root", str(tmp_path / "r"))
    assert done.code == 2, done.err
    assert done.err.startswith("incidents: bad mirror url") and len(done.err.splitlines()) == 1
    assert SECRET not in done.err and "Traceback" not in done.err
    assert not (tmp_path / "r").exists()


def test_a_password_in_the_query_stays_out_of_degraded_json_and_the_log(tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text("[mirror]\ntimeout_s = 1.0\n")
    url = f"postgresql://alice@/fleet?host={tmp_path}/nowhere&password={SECRET}"
    env = {**os.environ, target.ENV_URL: url, "INCIDENTS_CONFIG": str(tmp_path / "incidents.toml")}
    root = tmp_path / "reports"
    done = subprocess.run(
        [sys.executable, "-m", "incidents", "watch", "--once", "--root", str(root)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    degraded = (root / ".state" / "degraded.json").read_text()
    assert "cannot be reached" in degraded
    assert "No such file or directory" in degraded  # libpq's reason, not only "unreachable"
    for name, text in (("degraded.json", degraded), ("stderr", done.stderr), ("out", done.stdout)):
        assert SECRET not in text, name
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_database_that_does_not_exist_is_said_at_once(
    cli: Cli, tmp_path: Path, pg_server: pg.Server
) -> None:
    config = tmp_path / "incidents.toml"
    config.write_text(f'[mirror]\nurl = "{pg_server.url("no_such_db")}"\ntimeout_s = 5.0\n')
    started = time.monotonic()
    done = cli("reindex", "--config", str(config), "--root", str(tmp_path / "r"))
    assert done.code != 0 and "Traceback" not in done.err
    assert len(done.err.strip().splitlines()) == 1, done.err
    assert 'database "no_such_db" does not exist' in done.err
    assert time.monotonic() - started < 3.0, "it waited out the timeout instead of saying why"


@pytest.mark.parametrize("name", ["two words", "esc\x1b[31mape", "../up"])
def test_a_host_name_from_the_environment_is_checked_as_the_config_s(
    name: str, cli: Cli, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(target.ENV_URL, pg_url)
    monkeypatch.setenv(target.ENV_HOST, name)
    done = cli("reindex", "--root", str(tmp_path / "r"))
    assert done.code == 2 and "INCIDENTS_HOST" in done.err, done.err
    assert len(done.err.strip().splitlines()) == 1 and "Traceback" not in done.err
