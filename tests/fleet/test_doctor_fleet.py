"""`doctor` on a root sharing a PostgreSQL mirror: connection, migration level, clock skew
against the database, hosts that stopped reporting, an unreachable server."""

from __future__ import annotations

from pathlib import Path

import pytest

from incidents import mirror
from incidents.layout import Root
from incidents.mirror import target
from tests.helpers import Cli


def _lines(out: str, check: str) -> list[str]:
    return [line for line in out.splitlines() if f" {check}:" in line[:20]]


@pytest.fixture
def fleet_env(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Root:
    monkeypatch.setenv(target.ENV_URL, pg_url)
    monkeypatch.setenv(target.ENV_HOST, "a")
    return Root(tmp_path / "reports")


def test_a_healthy_fleet_root(fleet_env: Root, cli: Cli) -> None:
    assert cli("reindex").code == 0
    out = cli("doctor").out
    assert _lines(out, "postgres")[0].startswith("ok") and "as host a" in out
    assert (
        _lines(out, "migrations")[0] == f"ok   migrations: schema version {len(mirror.MIGRATIONS)}"
    )
    assert _lines(out, "clock")[0].startswith("ok   clock: this host's clock is")
    assert _lines(out, "hosts")[0] == "ok   hosts: 1 host(s) reporting"
    assert not _lines(out, "database")  # no SQLite file to find, nor to check
    assert _lines(out, "mirror")[0].startswith("ok   mirror: 0 incident(s), same as the folders")


def test_a_host_that_stopped_reporting_is_named(fleet_env: Root, cli: Cli) -> None:
    assert cli("reindex").code == 0
    conn = mirror.connect(fleet_env.db_path)
    try:
        conn.execute(
            "INSERT INTO hosts (host, root, last_seen) VALUES ('b', '/srv/b', "
            "'2026-01-01T00:00:00+00:00')"
        )
    finally:
        conn.close()
    out = cli("doctor").out
    (line,) = _lines(out, "hosts")
    assert line.startswith("WARN hosts: 1 host(s) stopped reporting: b (/srv/b")


def test_a_newer_schema_in_the_database_is_a_failure(fleet_env: Root, cli: Cli) -> None:
    assert cli("reindex").code == 0
    conn = mirror.connect(fleet_env.db_path)
    try:
        conn.execute("UPDATE mirror_schema SET version = 99")
    finally:
        conn.close()
    from incidents.mirror import pg

    pg.close_pools()
    pg._MIGRATED.clear()  # a new process would migrate: this one has already
    r = cli("doctor")
    assert r.code == 1
    (line,) = _lines(r.out, "postgres")
    assert line.startswith("FAIL postgres:") and "schema version 99" in line


def test_an_unreachable_server_is_one_failure_not_a_crash(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "incidents.toml").write_text(
        f'[mirror]\nurl = "postgresql:///x?host={tmp_path}/nowhere"\ntimeout_s = 1.0\n'
    )
    Root(tmp_path / "reports").ensure()
    r = cli("doctor", "--config", str(tmp_path / "incidents.toml"))
    assert r.code == 1 and "Traceback" not in r.out + r.err
    (line,) = _lines(r.out, "postgres")
    assert line.startswith("FAIL postgres: cannot connect to postgresql:///x")
