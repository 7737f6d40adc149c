"""Incident leases as rows of a real PostgreSQL mirror (`[watch] leases = "postgres"`):
the same rules as the lease files, with the row lock as the guard and the server's clock."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from incidents import leases
from incidents.errors import IncidentsError, LeaseLost
from incidents.layout import Root
from incidents.mirror import target
from tests.helpers import Cli
from tests.mirror.rows import make_bundle


@pytest.fixture
def r(tmp_path: Path, pg_url: str) -> Iterator[Root]:
    root = Root(tmp_path / "reports").ensure()
    target.bind(root.path, pg_url, "host-a", leases="postgres")
    yield root
    target.unbind(root.path)


def test_a_live_lease_blocks_others_until_it_expires_then_a_late_commit_is_refused(
    r: Root,
) -> None:
    a = leases.acquire(r, "inc1", "A", ttl_s=0.5)
    assert a is not None and a.generation == 1 and a.host == leases.HOST
    assert leases.acquire(r, "inc1", "B", ttl_s=30) is None
    assert not (r.state / "leases" / "inc1.json").exists()  # a row, not a file
    time.sleep(0.6)
    b = leases.acquire(r, "inc1", "B", ttl_s=30)
    assert b is not None and b.generation == 2
    with pytest.raises(LeaseLost, match="taken over by B"):
        leases.check(r, a)
    with pytest.raises(LeaseLost), leases.fenced(r, a):
        pytest.fail("the body of a lost lease's fence must not run")
    with pytest.raises(LeaseLost):
        leases.renew(r, a, ttl_s=30)
    leases.check(r, b)
    assert leases.read(r, "inc1") == b


def test_a_fence_holds_off_a_takeover_until_the_commit_is_done(r: Root) -> None:
    a = leases.acquire(r, "inc1", "A", ttl_s=0.2)
    assert a is not None
    taken: list[float] = []

    def take_over() -> None:
        while (b := leases.acquire(r, "inc1", "B", ttl_s=30)) is None:
            time.sleep(0.02)
        taken.append(time.monotonic())
        assert b.generation == 2

    with leases.fenced(r, a):
        time.sleep(0.3)  # expired meanwhile: only the fence holds B off
        other = threading.Thread(target=take_over)
        other.start()
        time.sleep(0.5)
        assert not taken, "a takeover interleaved with a fenced commit"
        leases.check(r, a)  # the body asks the same lease: answered on the fence's connection
        committed = time.monotonic()
    other.join(10)
    assert taken and taken[0] >= committed


def test_release_frees_it_and_a_closed_incident_loses_its_row(r: Root) -> None:
    a = leases.acquire(r, "inc1", "A", ttl_s=30)
    assert a is not None
    leases.release(r, a)
    held = leases.read(r, "inc1")
    assert held is not None and held.expires_at == 0.0
    b = leases.acquire(r, "inc1", "B", ttl_s=30)
    assert b is not None and b.generation == 2
    leases.release(r, b, closed=True)
    assert leases.read(r, "inc1") is None


def test_the_lease_of_a_dead_process_of_this_host_is_free_at_once(r: Root) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    a = leases.acquire(r, "inc1", "A", ttl_s=300)
    assert a is not None
    from incidents.mirror import connect

    conn = connect(r.db_path)
    try:
        conn.execute("UPDATE leases SET pid = ? WHERE incident_id = 'inc1'", (int(dead.stdout),))
    finally:
        conn.close()
    assert leases.stale_leases(r) != []
    b = leases.acquire(r, "inc1", "B", ttl_s=30)
    assert b is not None and b.generation == 2


def test_a_lease_held_on_another_machine_waits_for_its_expiry(r: Root) -> None:
    a = leases.acquire(r, "inc1", "A", ttl_s=0.6)
    assert a is not None
    from incidents.mirror import connect

    conn = connect(r.db_path)
    try:  # held by a pid that is not alive here, on another machine: alive for all we know
        conn.execute("UPDATE leases SET host = 'elsewhere', pid = 999999999")
    finally:
        conn.close()
    assert leases.acquire(r, "inc1", "B", ttl_s=30) is None
    time.sleep(0.7)
    b = leases.acquire(r, "inc1", "B", ttl_s=30)
    assert b is not None and b.generation == 2


def test_of_many_first_acquires_at_once_one_wins(r: Root) -> None:
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda i: leases.acquire(r, "new", f"W{i}", ttl_s=30), range(16)))
    won = [g for g in got if g is not None]
    assert len(won) == 1 and won[0].generation == 1


def test_postgres_leases_need_a_postgres_mirror(tmp_path: Path) -> None:
    with pytest.raises(IncidentsError, match="needs \\[mirror\\] url"):
        target.bind(tmp_path, None, None, leases="postgres")


def test_status_shows_the_agent_whose_lease_row_holds_an_incident(
    tmp_path: Path, pg_url: str, cli: Cli
) -> None:
    config = tmp_path / "incidents.toml"
    config.write_text(f'[watch]\nleases = "postgres"\n[mirror]\nurl = "{pg_url}"\nhost = "a"\n')
    root = Root(tmp_path / "reports").ensure()
    make_bundle(root, "inbox", "inc1")
    make_bundle(root, "inbox", "inc2")
    target.bind(root.path, pg_url, "a", leases="postgres")
    try:
        assert leases.acquire(root, "inc1", "agent:skill-x", 60, agent="skill-x") is not None
        assert leases.acquire(root, "inc2", "watch:1", 60) is not None  # a worker: not shown
    finally:
        target.unbind(root.path)
    doc = cli("status", "--json", "--config", str(config)).json()
    owners = {i["incident_id"]: i["lease_owner"] for i in doc["incidents"]}
    assert owners == {"inc1": "skill-x", "inc2": None}
