"""Leases: expiry, takeover with a new generation, fencing of a late commit, dead holders."""

from __future__ import annotations

import subprocess
import sys

import pytest

from incidents import leases
from incidents.errors import LeaseLost
from incidents.layout import Root


@pytest.fixture
def r(root: Root) -> Root:
    return root.ensure()


def test_a_live_lease_blocks_others_until_it_expires(r: Root) -> None:
    t = [1000.0]
    a = leases.acquire(r, "inc1", "A", ttl_s=30, clock=lambda: t[0])
    assert a is not None and a.generation == 1
    assert leases.acquire(r, "inc1", "B", ttl_s=30, clock=lambda: t[0]) is None
    t[0] += 31
    b = leases.acquire(r, "inc1", "B", ttl_s=30, clock=lambda: t[0])
    assert b is not None and b.generation == 2 and b.owner == "B"


def taken_over(r: Root) -> tuple[leases.Lease, leases.Lease]:
    """A's lease of inc1 expired and B took it over: (A's lease, B's lease)."""
    t = [1000.0]
    a = leases.acquire(r, "inc1", "A", ttl_s=5, clock=lambda: t[0])
    assert a is not None
    t[0] += 10
    b = leases.acquire(r, "inc1", "B", ttl_s=5, clock=lambda: t[0])
    assert b is not None
    return a, b


def test_a_late_commit_after_takeover_is_refused(r: Root) -> None:
    a, b = taken_over(r)
    with pytest.raises(LeaseLost, match="taken over by B"), leases.fenced(r, a):
        raise AssertionError("the body of a fenced commit must not run")
    with pytest.raises(LeaseLost):
        leases.renew(r, a)
    with leases.fenced(r, b):
        pass
    leases.release(r, a)  # a lost lease's release leaves the new holder alone
    assert leases.read(r, "inc1") == b


def test_release_frees_and_keeps_the_file(r: Root) -> None:
    a = leases.acquire(r, "inc1", "A")
    assert a is not None
    leases.release(r, a)
    assert (r.state / "leases" / "inc1.json").is_file()
    b = leases.acquire(r, "inc1", "B")
    assert b is not None and b.generation == 2


def test_releasing_the_lease_of_a_closed_incident_removes_its_record(r: Root) -> None:
    a, b = taken_over(r)
    leases.release(r, a, closed=True)  # a lost lease removes nothing
    assert leases.read(r, "inc1") == b
    leases.release(r, b, closed=True)
    path = r.state / "leases" / "inc1.json"
    assert not path.exists() and path.with_name("inc1.json.lock").exists()
    c = leases.acquire(r, "inc1", "C")  # requeued later: a new holder, fenced from the old
    assert c is not None
    with pytest.raises(LeaseLost):
        leases.check(r, b)


def test_the_lease_of_a_dead_local_process_is_free_at_once(r: Root) -> None:
    code = (
        "import sys; from incidents import leases; from incidents.layout import Root; "
        "from pathlib import Path; "
        "print(leases.acquire(Root(Path(sys.argv[1])), 'inc1', 'dead', ttl_s=3600).generation)"
    )
    p = subprocess.run([sys.executable, "-c", code, str(r.path)], capture_output=True, text=True)
    assert p.stdout.strip() == "1", p.stderr
    taken = leases.acquire(r, "inc1", "alive", ttl_s=30)
    assert taken is not None and taken.generation == 2


def test_an_agent_lease_is_not_freed_by_pid(r: Root) -> None:
    a = leases.acquire(r, "inc1", "skill", ttl_s=600, agent="error-exec-loop")
    assert a is not None and a.agent == "error-exec-loop"
    assert leases.acquire(r, "inc1", "watcher", ttl_s=30) is None


def test_renew_if_due_writes_only_past_half_the_ttl(r: Root) -> None:
    t = [1000.0]
    a = leases.acquire(r, "inc1", "A", ttl_s=100, clock=lambda: t[0])
    assert a is not None
    t[0] += 40  # 60 s left of 100: not due
    assert leases.renew_if_due(r, a, ttl_s=100, clock=lambda: t[0]) is a
    assert leases.read(r, "inc1") == a
    t[0] += 20  # 40 s left: renewed to a full ttl from now, same generation
    b = leases.renew_if_due(r, a, ttl_s=100, clock=lambda: t[0])
    assert b.expires_at == t[0] + 100 and b.generation == a.generation
    assert leases.read(r, "inc1") == b
    t[0] += 200  # expired and taken over: the renewal is refused like any other
    assert leases.acquire(r, "inc1", "B", ttl_s=100, clock=lambda: t[0]) is not None
    with pytest.raises(LeaseLost):
        leases.renew_if_due(r, b, ttl_s=100, clock=lambda: t[0])
