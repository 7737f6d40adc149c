"""PostgreSQL down under a running host: capture never waits for it, the watcher keeps
working its own inbox and says it is degraded (log, status), and when the server is back
it catches the shared mirror up: nothing lost, nothing twice (the live rows equal a
rebuild from the folders). Also a server that starts only after the watcher."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents import mirror
from incidents.doctor import folder_buckets
from incidents.layout import Root
from incidents.mirror import target
from tests import pg
from tests.helpers import Cli
from tests.watch.helpers import FAST_TOML, capture_step, start_watch, stop, wait_until, workspace

OUTAGE_S = 30.0


@pytest.fixture
def host(tmp_path: Path, pg_server: pg.Server, pg_url: str) -> Iterator[Root]:
    """One host's root on the shared mirror; the server is up again after the test."""
    workspace(tmp_path, FAST_TOML + f'\n[mirror]\nurl = "{pg_url}"\nhost = "a"\ntimeout_s = 2.0\n')
    root = Root(tmp_path / "reports")
    target.bind(root.path, pg_url, "a", 2.0)
    yield root
    target.unbind(root.path)
    try:
        pg.wait_until_up(pg_server, 1)
    except Exception:
        pg_server.start()


def _closed(root: Root, ids: list[str]) -> int:
    return sum(
        (root.bucket("resolved") / i).is_dir() or (root.bucket("escalated") / i).is_dir()
        for i in ids
    )


def _rows(root: Root) -> dict[str, list[tuple[object, ...]]]:
    conn = mirror.connect(root.db_path)
    try:
        return {
            "incidents": sorted(conn.execute(
                "SELECT incident_id, bucket, status, state, occurrences FROM incidents").fetchall()),
            "events": sorted(conn.execute(
                "SELECT incident_id, event_key, event_type FROM events").fetchall(), key=repr),
            "steps": sorted(conn.execute(
                "SELECT ws_id, step_name, label FROM step_attempts").fetchall()),
            "workstreams": sorted(conn.execute(
                "SELECT ws_id, current_state, metadata_json FROM workstreams").fetchall()),
        }  # fmt: skip
    finally:
        conn.close()


def _same_as_rebuilt(root: Root) -> None:
    """Nothing lost, nothing twice: the live rows are what a reindex derives."""
    live = _rows(root)
    assert dict(mirror.incident_buckets(mirror.connect(root.db_path))) == folder_buckets(root)
    mirror.reindex(root)
    rebuilt = _rows(root)
    for table in live:
        assert live[table] == rebuilt[table], table


def _log_events(proc_stderr: str) -> list[str]:
    names = []
    for line in proc_stderr.splitlines():
        try:
            names.append(str(json.loads(line).get("event")))
        except ValueError:
            continue
    return names


@pytest.mark.slow
def test_postgres_stopped_for_30_s_mid_run_loses_nothing_and_duplicates_nothing(
    tmp_path: Path, host: Root, pg_server: pg.Server, cli: Cli
) -> None:
    ids = [capture_step(tmp_path, f"b{i}", dirty=i % 2 == 0) for i in range(8)]
    watcher = start_watch(tmp_path, "--workers", "2", "--poll", "0.5")
    try:
        assert wait_until(lambda: _closed(host, ids) >= 2, 120)
        pg_server.stop()
        began = time.monotonic()
        during = []
        for i in range(8):
            t = time.monotonic()
            during.append(capture_step(tmp_path, f"d{i}", dirty=i % 2 == 0))
            assert time.monotonic() - t < 2.0, "capture waited for the database"
        assert wait_until(lambda: (host.state / "degraded.json").exists(), 30)
        said = cli("status", "--json")
        assert said.code == 0 and said.json()["degraded"] is not None
        # the host keeps working its own inbox without the database
        assert wait_until(lambda: _closed(host, during) == len(during), OUTAGE_S + 60)
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - began)))
        pg_server.start()
        assert wait_until(lambda: not (host.state / "degraded.json").exists(), 60)
        assert wait_until(lambda: _closed(host, ids) == len(ids), 120)
    finally:
        stop(watcher)
    events = _log_events(watcher.stderr.read() if watcher.stderr else "")
    assert "degraded" in events and "fleet_back" in events
    _same_as_rebuilt(host)


@pytest.mark.slow
def test_postgres_started_after_the_watcher(
    tmp_path: Path, host: Root, pg_server: pg.Server
) -> None:
    pg_server.stop()
    ids = [capture_step(tmp_path, f"s{i}") for i in range(4)]
    watcher = start_watch(tmp_path, "--workers", "2", "--poll", "0.5")
    try:
        assert wait_until(lambda: _closed(host, ids) == len(ids), 120)
        assert (host.state / "degraded.json").exists()
        pg_server.start()
        assert wait_until(lambda: not (host.state / "degraded.json").exists(), 60)
    finally:
        stop(watcher)
    _same_as_rebuilt(host)
