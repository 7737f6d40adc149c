"""One pickup of one incident: take its lease, tick until it is closed, waiting or not yet due.

This runs in a worker process of the watcher's pool (`serve`). The lease is
held across the ticks and renewed between them; a stop request is honoured between ticks,
so a first signal lets the running tick finish. Taking over a lease its holder never
released (the holder was killed) is a crash-recovery: it is counted in
`.state/recoveries/<id>`, and an incident recovered `poison_after` times is quarantined
instead of run again, so it cannot crash-loop the watcher (RELIABILITY.md, poison).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Protocol

from incidents import fsutil, leases, pause
from incidents.config import Config
from incidents.errors import IncidentsError, InvalidDocument, LeaseLost, LockBusy, NotFound
from incidents.layout import Root
from incidents.mirror import target
from incidents.step import close as closing
from incidents.step import seal
from incidents.watch.schedule import PickupResult


class StopFlag(Protocol):
    def is_set(self) -> bool: ...


_STOP: StopFlag = threading.Event()


@dataclass(frozen=True)
class Pickup:
    """What one pickup did, sent back to the scheduler (picklable)."""

    incident_id: str
    result: PickupResult
    state: str = ""
    ticks: int = 0
    not_before: float | None = None  # epoch seconds
    detail: str = ""
    archived_to: str | None = None
    recovered: bool = False


def init_process(stop: StopFlag) -> None:
    """Pool initializer: share the stop flag; leave SIGINT to the watcher. (Dying with the
    watcher is armed before this module is even imported: `watch.child`.)"""
    import signal

    global _STOP
    _STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (the watcher stopping at once): take the commands we run down with us.
    Exiting mid-tick is as safe as being killed: every step is resumable."""
    from incidents import proc

    proc.kill_running()
    os._exit(128 + signum)


def _recoveries_path(root: Root, incident_id: str) -> Path:
    path = root.state / "recoveries"
    path.mkdir(mode=0o700, exist_ok=True)
    return path / incident_id


def recoveries(root: Root, incident_id: str) -> int:
    try:
        return int(fsutil.read_regular_file(_recoveries_path(root, incident_id), 64) or b"0")
    except (FileNotFoundError, ValueError, IncidentsError):
        return 0


def _count_recovery(root: Root, incident_id: str) -> int:
    n = recoveries(root, incident_id) + 1
    fsutil.atomic_write_bytes(_recoveries_path(root, incident_id), str(n).encode())
    return n


def _crashed_holder(previous: leases.Lease | None) -> bool:
    """The lease we just took was never released: its holder died or stalled mid-tick."""
    return previous is not None and previous.agent is None and previous.expires_at > 0


def pickup(root_path: str, cfg: Config, incident_id: str) -> Pickup:
    """Work `incident_id` until it needs nothing more from us now. Never raises."""
    root = Root(Path(root_path))
    try:
        # the watcher's mirror, in this child process too
        m = cfg.mirror
        target.bind(root.path, m.url, m.host, m.timeout_s, cfg.watch.leases)
        return _pickup(root, cfg, incident_id)
    except IncidentsError as exc:
        return Pickup(incident_id, PickupResult.ERROR, detail=f"{type(exc).__name__}: {exc}")
    except OSError as exc:
        return Pickup(incident_id, PickupResult.ERROR, detail=f"OSError: {exc}")


def _pickup(root: Root, cfg: Config, incident_id: str) -> Pickup:
    from incidents.clock import utc_now
    from incidents.step.tick import Tick

    if _STOP.is_set():
        return Pickup(incident_id, PickupResult.STOPPED)
    if pause.current(root) is not None:
        return Pickup(incident_id, PickupResult.PAUSED)
    closing.complete_pending(root)
    seal.key(root)  # a root from before the seal seals its states now, before any lease
    ttl = cfg.policy.lease_ttl_s
    previous = leases.read(root, incident_id)
    try:
        lease = leases.acquire(root, incident_id, leases.new_owner("watch"), ttl)
    except LockBusy:
        lease = None
    if lease is None:
        return Pickup(incident_id, PickupResult.BUSY)
    recovered = False
    closed = False
    tick: Tick | None = None
    try:
        try:
            where, _ = root.locate(incident_id)
        except NotFound:
            return Pickup(incident_id, PickupResult.GONE)
        if where != "inbox":
            return Pickup(incident_id, PickupResult.GONE, state=where)
        if _crashed_holder(previous):
            recovered = True
            if _count_recovery(root, incident_id) >= cfg.watch.poison_after:
                return _quarantine_poison(root, cfg, incident_id, lease)
        ticks = 0
        tick = Tick(root, cfg, incident_id, lease, utc_now)  # one for all: it carries the context
        while True:
            outcome = tick.run()
            ticks += 1
            nb = outcome.not_before.timestamp() if outcome.not_before else None
            result = _result_of(outcome.terminal, outcome.waiting, nb, outcome.idle)
            if result is None and (_STOP.is_set() or ticks >= cfg.watch.max_ticks):
                result = PickupResult.YIELDED
            if result is None and pause.current(root) is not None:
                result = PickupResult.PAUSED
            if result is not None:
                closed = outcome.archived_to is not None
                return Pickup(
                    incident_id, result, state=outcome.new_state, ticks=ticks,
                    not_before=nb, detail=outcome.reason if result is PickupResult.IDLE else "",
                    archived_to=outcome.archived_to, recovered=recovered,
                )  # fmt: skip
            lease = tick.renew_lease(ttl)
    except LeaseLost as exc:
        return Pickup(incident_id, PickupResult.LOST, detail=str(exc), recovered=recovered)
    except InvalidDocument as exc:
        return Pickup(incident_id, PickupResult.REJECTED, detail=str(exc), recovered=recovered)
    finally:
        with contextlib.suppress(IncidentsError, OSError):
            if tick is not None:
                tick.flush()  # the pickup's commits are durable and mirrored before it ends
        with contextlib.suppress(IncidentsError, OSError):
            leases.release(root, lease, closed=closed)


def _result_of(
    terminal: bool, waiting: bool, not_before: float | None, idle: bool
) -> PickupResult | None:
    if terminal:
        return PickupResult.TERMINAL
    if waiting:
        return PickupResult.WAITING
    if not_before is not None and not_before > time.time():
        return PickupResult.LATER
    return PickupResult.IDLE if idle else None


def _quarantine_poison(root: Root, cfg: Config, incident_id: str, lease: leases.Lease) -> Pickup:
    """Close the incident as quarantined without running its step again."""
    from incidents.step import service

    n = recoveries(root, incident_id)
    reason = (
        f"poison incident: its processing was interrupted {n} times (the worker died); "
        "quarantined so it cannot crash-loop the watcher"
    )
    outcome = service.poison(root, cfg, incident_id, lease, reason, n)
    return Pickup(
        incident_id, PickupResult.TERMINAL, state=outcome.new_state, archived_to=outcome.archived_to,
        detail=reason, recovered=True,
    )  # fmt: skip


def serve(conn: Connection, root_path: str, cfg: Config, stop: StopFlag) -> None:
    """A worker process: receive incident ids, send back what each pickup did.

    Its ticks write the mirror through `mirror.shared`, one connection kept for the
    worker's life, so that closing the last connection does not checkpoint and delete
    the WAL after every tick."""
    init_process(stop)
    import gc

    import incidents.step.service  # noqa: F401  (what every pickup needs, loaded once)

    gc.freeze()  # the modules and models imported live as long as we do: never scan them
    while True:
        try:
            incident_id = conn.recv()
        except (EOFError, OSError):
            return
        if incident_id is None:
            return
        conn.send(pickup(root_path, cfg, incident_id))


__all__ = ["Pickup", "init_process", "pickup", "recoveries", "serve"]
