"""Incident leases as rows of a shared PostgreSQL mirror (`[watch] leases = "postgres"`):
what `incidents.leases` does with lease files, for watchers of several hosts over one
inbox on a network filesystem, where flock and fcntl cannot be trusted.

The same rules: a lease is free when unheld, expired, ours, or held by a dead process of
this host; taking it over bumps its generation; every commit is fenced (the lease row
locked, its generation and owner checked, held until the commit is done, so no takeover
interleaves); a late commit with an old generation is refused. The database's clock
decides expiry, one clock for every host. Rows are tuples (`mirror.leasing.LeaseRow`);
`incidents.leases` turns them into `Lease`s.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from incidents import mirror
from incidents.errors import LeaseLost
from incidents.layout import Root
from incidents.mirror import leasing
from incidents.mirror.leasing import LeaseRow

__all__ = ["acquire", "check", "fenced", "host", "read", "release", "renew", "stale"]

# the connection a `fenced` block holds the row lock on, by (thread, root, incident): what
# the block itself asks of the same lease goes through it (another connection would wait
# for the lock this very thread holds); other threads wait for it, as for a lock file
_HELD: dict[tuple[int, str, str], Any] = {}


def _key(root: Root, incident_id: str) -> tuple[int, str, str]:
    return threading.get_ident(), str(root.path), incident_id


# containers that share a hostname but not a pid namespace must tell themselves apart
MACHINE_ENV = "INCIDENTS_MACHINE"


def host(root: Root) -> str:
    """The host a lease row names: this machine (as a lease file does), whatever name the
    mirror's rows carry: watchers of several machines over one shared inbox write the
    root's rows under one host name, but only this machine can tell its own pids alive
    (INCIDENTS_MACHINE, else the hostname)."""
    return os.environ.get(MACHINE_ENV) or socket.gethostname()


@contextmanager
def _conn(root: Root, incident_id: str) -> Iterator[Any]:
    held = _HELD.get(_key(root, incident_id))
    if held is not None:
        yield held
        return
    conn = mirror.connect(root.db_path)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def _tx(conn: Any) -> Iterator[None]:
    """A plain transaction (not the mirror's host-wide writer lock: a lease must not wait
    for, nor hold up, this host's other mirror writes)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _live(row: LeaseRow | None) -> LeaseRow | None:
    return row if row is not None and row[2] > 0 else None  # generation 0: a placeholder


def _here(row: LeaseRow, db_now: float) -> LeaseRow:
    """The row with its expiry on this host's clock: rows keep the database's (one clock
    for every host), but callers compare a lease with `time.time()` (`renew_if_due`, a
    claim's expiry), and a host's clock behind the database's renewed too late."""
    skew = round(db_now - time.time(), 1)  # a read's latency apart, the same every call
    if row[3] <= 0 or abs(skew) < 1.0:  # released (0 stays 0), or clocks close enough
        return row
    return (*row[:3], row[3] - skew, *row[4:])


def read(root: Root, incident_id: str) -> LeaseRow | None:
    with _conn(root, incident_id) as conn:
        found = _live(leasing.read(conn, incident_id))
        return None if found is None else _here(found, leasing.now(conn))


def acquire(
    root: Root,
    incident_id: str,
    owner: str,
    ttl_s: float,
    agent: str | None,
    alive: Callable[[LeaseRow], bool],
) -> LeaseRow | None:
    with (
        _conn(root, incident_id) as conn,
        leasing.guarded(conn, incident_id, _tx, create=True) as current,
    ):
        found = _live(current())
        now = leasing.now(conn)
        if found is not None and found[1] != owner and found[3] > now and alive(found):
            return None
        generation = (found[2] if found else 0) + 1
        row: LeaseRow = (
            incident_id,
            owner,
            generation,
            now + ttl_s,
            os.getpid(),
            host(root),
            agent,
        )
        leasing.store(conn, row)
        return _here(row, now)


def _check(found: LeaseRow | None, lease: LeaseRow) -> None:
    if found is None or found[2] != lease[2] or found[1] != lease[1]:
        holder = f"{found[1]} (generation {found[2]})" if found else "nobody"
        raise LeaseLost(f"lease of {lease[0]} generation {lease[2]} was taken over by {holder}")


def renew(root: Root, lease: LeaseRow, ttl_s: float) -> LeaseRow:
    with _conn(root, lease[0]) as conn, leasing.guarded(conn, lease[0], _tx) as current:
        _check(_live(current()), lease)
        now = leasing.now(conn)
        renewed: LeaseRow = (*lease[:3], now + ttl_s, *lease[4:])
        leasing.store(conn, renewed)
        return _here(renewed, now)


def check(root: Root, lease: LeaseRow) -> None:
    with _conn(root, lease[0]) as conn:
        _check(_live(leasing.read(conn, lease[0])), lease)


def release(root: Root, lease: LeaseRow, *, closed: bool) -> None:
    with _conn(root, lease[0]) as conn, leasing.guarded(conn, lease[0], _tx) as current:
        found = _live(current())
        if found is None or found[2] != lease[2]:
            return
        if closed:
            leasing.delete(conn, lease[0])
        else:
            leasing.store(conn, (*lease[:3], 0.0, *lease[4:]))


@contextmanager
def fenced(root: Root, lease: LeaseRow) -> Iterator[None]:
    """The lease row locked for the whole commit; LeaseLost before the body when it was
    taken over."""
    key = _key(root, lease[0])
    if key in _HELD:  # nested in a fence of the same lease: already held
        check(root, lease)
        yield
        return
    conn = mirror.connect(root.db_path)
    try:
        with leasing.guarded(conn, lease[0], _tx) as current:
            _check(_live(current()), lease)
            _HELD[key] = conn
            try:
                yield
            finally:
                _HELD.pop(key, None)
    finally:
        conn.close()


def stale(root: Root, alive: Callable[[LeaseRow], bool]) -> list[LeaseRow]:
    conn = mirror.connect(root.db_path)
    try:
        now = leasing.now(conn)
        rows = leasing.read_all(conn)
        return [_here(r, now) for r in rows if r[3] > 0 and (r[3] <= now or not alive(r))]
    finally:
        conn.close()
