"""Leases: which process works on an incident, until when, and with which generation.

A lease is a small JSON file `.state/leases/<id>.json`: owner, pid, host, generation,
expires_at. It is read and changed only under a short `filelock` critical section, so
a stuck holder (SIGSTOPped, hung) never blocks anyone past its expiry: another process
takes the lease over with generation + 1. Every commit a worker makes checks that the
lease it holds still has its generation (fencing): a late commit from a process whose
lease was taken over is refused with `LeaseLost` (generation and owner must both match).
Releasing a lease sets its expiry to zero; the lease of an incident that was just archived
is removed instead. The lock files beside them are never deleted.

With `[watch] leases = "postgres"` (a fleet's watchers over one inbox on a network
filesystem, where file locks cannot be trusted) the same leases are rows of the shared
PostgreSQL mirror (`incidents.lease_rows`); every function below answers the same.

Lease files are replaced atomically but not fsynced: a killed process leaves the old or
the new file (the rename is atomic whatever the disk does), and only a power cut can
lose a recent write, after which every holder is gone anyway and the next acquire starts
from what is on disk. A tick writes its lease twice (acquire, release): fsyncing those
was a quarter of a clean incident's fsyncs and protected nothing.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, astuple, dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from incidents import fsutil
from incidents.errors import LeaseLost, LockBusy
from incidents.layout import Root, validate_id
from incidents.mirror.target import target_of

DEFAULT_TTL_S = 120.0
HOST = socket.gethostname()


@dataclass(frozen=True)
class Lease:
    incident_id: str
    owner: str
    generation: int
    expires_at: float
    pid: int
    host: str
    agent: str | None = None  # a skill's name when an outside agent holds it (claim)

    def expired(self, now: float) -> bool:
        return self.expires_at <= now


def _rows(root: Root) -> bool:
    """Whether the root's leases are rows of the shared mirror (`[watch] leases`)."""
    return target_of(root.db_path).leases == "postgres"


def _alive(root: Root) -> Callable[[tuple[str, str, int, float, int, str, str | None]], bool]:
    from incidents.lease_rows import host

    mine = host(root)
    return lambda r: r[5] != mine or r[6] is not None or fsutil.pid_alive(r[4])


def new_owner(prefix: str = "worker") -> str:
    return f"{prefix}:{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _dir(root: Root) -> Path:
    path = root.state / "leases"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


_LOCKS: dict[str, FileLock] = {}


def _lock(path: str) -> FileLock:
    """One lock object per lock file and process: a worker takes the guard of the same
    incident several times per tick, and building a `FileLock` costs as much as taking it.
    (Its state is per thread, so threads still exclude each other.)"""
    lock = _LOCKS.get(path)
    if lock is None:
        if len(_LOCKS) >= 256:
            _LOCKS.clear()
        lock = _LOCKS[path] = FileLock(path, mode=0o600)  # like every file of the root
    return lock


@contextmanager
def _guard(root: Root, incident_id: str, timeout_s: float = 10.0) -> Iterator[Path]:
    path = _dir(root) / f"{validate_id(incident_id)}.json"
    try:
        with _lock(str(path) + ".lock").acquire(timeout=timeout_s):
            yield path
    except Timeout as exc:
        raise LockBusy(f"lease of {incident_id} is busy (waited {timeout_s:g}s)") from exc


def _write(path: Path, lease: Lease) -> None:
    fsutil.atomic_write_bytes(path, fsutil.dump_json(asdict(lease)), durable=False)


def read(root: Root, incident_id: str) -> Lease | None:
    if _rows(root):
        from incidents import lease_rows

        row = lease_rows.read(root, validate_id(incident_id))
        return Lease(*row) if row else None
    path = _dir(root) / f"{validate_id(incident_id)}.json"
    try:
        doc = json.loads(fsutil.read_regular_file(path, 64 * 1024))
        return Lease(**doc)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        return None  # a damaged lease file is treated as no lease; it is rewritten on acquire


def holder_alive(lease: Lease) -> bool:
    """A lease of a dead process on this host is free at once, without waiting for expiry;
    one held by an outside agent or another host is judged by its expiry alone."""
    if lease.host != HOST or lease.agent is not None:
        return True
    return fsutil.pid_alive(lease.pid)


def acquire(
    root: Root,
    incident_id: str,
    owner: str,
    ttl_s: float = DEFAULT_TTL_S,
    *,
    agent: str | None = None,
    clock: Callable[[], float] = time.time,
) -> Lease | None:
    """Take the lease if it is free, expired, ours, or held by a dead local process."""
    if _rows(root):
        from incidents import lease_rows

        row = lease_rows.acquire(root, validate_id(incident_id), owner, ttl_s, agent, _alive(root))
        return Lease(*row) if row else None
    with _guard(root, incident_id) as path:
        now = clock()
        current = read(root, incident_id)
        if (
            current is not None
            and current.owner != owner
            and not current.expired(now)
            and holder_alive(current)
        ):
            return None
        generation = (current.generation if current else 0) + 1
        lease = Lease(incident_id, owner, generation, now + ttl_s, os.getpid(), HOST, agent)
        _write(path, lease)
        return lease


def renew(
    root: Root, lease: Lease, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.time
) -> Lease:
    if _rows(root):
        from incidents import lease_rows

        return Lease(*lease_rows.renew(root, astuple(lease), ttl_s))
    with _guard(root, lease.incident_id) as path:
        _check(root, lease)
        renewed = Lease(**{**asdict(lease), "expires_at": clock() + ttl_s})
        _write(path, renewed)
        return renewed


def renew_if_due(
    root: Root, lease: Lease, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.time
) -> Lease:
    """Renew once less than half of `ttl_s` is left: between the short ticks of one incident
    a renewal per tick was two writes and two lock round-trips for nothing. Every commit
    is still fenced (`fenced`), so a lease taken over is noticed at the next commit."""
    if lease.expires_at - clock() > ttl_s / 2:
        return lease
    return renew(root, lease, ttl_s, clock)


def _check(root: Root, lease: Lease) -> None:
    current = read(root, lease.incident_id)
    if current is None or current.generation != lease.generation or current.owner != lease.owner:
        holder = f"{current.owner} (generation {current.generation})" if current else "nobody"
        raise LeaseLost(
            f"lease of {lease.incident_id} generation {lease.generation} was taken over by {holder}"
        )


def check(root: Root, lease: Lease) -> None:
    """Fencing: raise LeaseLost unless `lease` is still the current one."""
    if _rows(root):
        from incidents import lease_rows

        lease_rows.check(root, astuple(lease))
        return
    with _guard(root, lease.incident_id):
        _check(root, lease)


def release(root: Root, lease: Lease, *, closed: bool = False) -> None:
    """Give the lease up (expiry 0, same generation); a lost lease is left alone.
    `closed`: the incident was archived, so its lease record is removed instead: nobody
    takes an archived incident's lease, and a generation only has to outlive its holders
    (a late commit is refused for its owner too). The lock file stays."""
    if _rows(root):
        from incidents import lease_rows

        lease_rows.release(root, astuple(lease), closed=closed)
        return
    with _guard(root, lease.incident_id) as path:
        current = read(root, lease.incident_id)
        if current is None or current.generation != lease.generation:
            return
        if closed:
            path.unlink(missing_ok=True)
        else:
            _write(path, Lease(**{**asdict(lease), "expires_at": 0.0}))


@contextmanager
def fenced(root: Root, lease: Lease) -> Iterator[None]:
    """Hold the lease guard while committing: no takeover can interleave with the commit.
    Raises LeaseLost (before the body runs) when the lease was taken over."""
    if _rows(root):
        from incidents import lease_rows

        with lease_rows.fenced(root, astuple(lease)):
            yield
        return
    with _guard(root, lease.incident_id):
        _check(root, lease)
        yield


def stale_leases(root: Root, now: float | None = None) -> list[Lease]:
    """Leases never released whose holder is dead or whose expiry passed (for doctor)."""
    if _rows(root):
        from incidents import lease_rows

        return [Lease(*r) for r in lease_rows.stale(root, _alive(root))]
    found: list[Lease] = []
    folder = root.state / "leases"
    if not folder.is_dir():
        return found
    now = time.time() if now is None else now
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        lease = read(root, name.removesuffix(".json"))
        if lease is None or lease.expires_at <= 0:
            continue
        if lease.expired(now) or not holder_alive(lease):
            found.append(lease)
    return found
