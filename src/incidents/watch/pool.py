"""The watcher's worker processes: spawn them, feed them ids, hear back, replace, stop.

N spawned processes, each fed incident ids over a pipe (`worker.serve`, reached through
`child.serve`, which first binds the worker's life to the watcher's). A tick's Python
part (pydantic, JSON, SQLite, fsync) holds the GIL, so threads would not scale with cores;
processes do (see bench/watch.py). A worker that dies is replaced; the worker that next
takes its incident's unreleased lease counts a crash-recovery.

Signals: the first SIGINT/SIGTERM stops dispatching and lets the running ticks finish;
a second kills the workers (they kill the commands they run) and exits 130 at once
(every tick is durable, so the state stays resumable).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from incidents import fsutil
from incidents.config import Config
from incidents.layout import Root
from incidents.watch.child import serve as child_main
from incidents.watch.log import Log
from incidents.watch.worker import Pickup

STOP_NOW_GRACE_S = 1.0  # a second signal: how long workers get to kill their commands
SHUTDOWN_S = 30.0  # a clean stop: how long the running ticks get to finish


@dataclass
class Worker:
    process: BaseProcess
    conn: Connection
    incident_id: str | None = None
    since: float = 0.0  # time.monotonic() when it was sent `incident_id`


@dataclass(frozen=True)
class Finished:
    """A worker sent back what its pickup of `incident_id` did."""

    incident_id: str
    pickup: Pickup
    elapsed: float


@dataclass(frozen=True)
class Died:
    """A worker died (killed, crashed) while working `incident_id`; `replaced` unless stopping."""

    incident_id: str | None
    exitcode: int | None
    replaced: bool


class Pool:
    def __init__(self, root: Root, cfg: Config, size: int) -> None:
        self.root, self.cfg, self.size = root, cfg, size
        self.ctx = multiprocessing.get_context("spawn")
        self.stop = self.ctx.Event()  # shared with the workers: no new pickup once set
        self.workers: list[Worker] = []

    @property
    def stopping(self) -> bool:
        return self.stop.is_set()

    @property
    def busy(self) -> bool:
        return any(w.incident_id for w in self.workers)

    def start(self) -> None:
        for _ in range(self.size):
            self.workers.append(self._spawn())

    def _spawn(self) -> Worker:
        parent, child = self.ctx.Pipe()
        payload = pickle.dumps((str(self.root.path), self.cfg))
        process = self.ctx.Process(
            target=child_main, args=(os.getpid(), payload, child, self.stop),
            name="incidents-watch-worker", daemon=True,
        )  # fmt: skip
        process.start()
        child.close()
        return Worker(process, parent)

    def idle(self) -> list[Worker]:
        return [w for w in self.workers if w.incident_id is None]

    def send(self, worker: Worker, incident_id: str) -> Died | None:
        """Give `worker` an incident; a worker found dead is replaced (its death returned)."""
        worker.incident_id, worker.since = incident_id, time.monotonic()
        try:
            worker.conn.send(incident_id)
        except OSError:
            return self._replace(worker)
        return None

    def wait(self, timeout: float, *also: int) -> list[Finished | Died]:
        """Sleep until a worker answers or dies, one of `also` (file descriptors) is
        readable, or `timeout` passes; what the workers did, in order."""
        handles: list[Any] = list(also)
        for w in self.workers:
            handles += [w.conn, w.process.sentinel]
        happened: list[Finished | Died] = []
        for ready in wait(handles, timeout=max(0.0, timeout)):
            worker = self._owner_of(ready)
            if worker is None:
                continue
            if ready is worker.conn or worker.conn.poll(0):
                happened.append(self._receive(worker))
            else:
                happened.append(self._replace(worker))
        return happened

    def _owner_of(self, handle: Any) -> Worker | None:
        for w in self.workers:
            if handle is w.conn or handle == w.process.sentinel:
                return w
        return None

    def _receive(self, worker: Worker) -> Finished | Died:
        try:
            pickup: Pickup = worker.conn.recv()
        except (EOFError, OSError):
            return self._replace(worker)
        incident_id = worker.incident_id or pickup.incident_id
        worker.incident_id = None
        return Finished(incident_id, pickup, time.monotonic() - worker.since)

    def _replace(self, worker: Worker) -> Died:
        """Reap a dead worker and start another in its place (none while stopping)."""
        worker.process.join(timeout=1)
        with contextlib.suppress(OSError):
            worker.conn.close()
        index = self.workers.index(worker)
        died = Died(worker.incident_id, worker.process.exitcode, replaced=not self.stopping)
        if died.replaced:
            self.workers[index] = self._spawn()
        else:
            self.workers.pop(index)
        return died

    def shutdown(self) -> None:
        """Stop: the workers finish their pickup and exit; one still running then is killed."""
        self.stop.set()
        for w in self.workers:
            with contextlib.suppress(OSError, ValueError):
                w.conn.send(None)
        deadline = time.monotonic() + SHUTDOWN_S
        for w in self.workers:
            w.process.join(timeout=max(0.1, deadline - time.monotonic()))
            if w.process.is_alive():
                w.process.kill()
                w.process.join(timeout=5)
        self.workers = []

    def kill_now(self) -> None:
        """SIGTERM every worker (they kill their commands), then SIGKILL what is left."""
        pids = [pid for w in self.workers if (pid := getattr(w.process, "pid", None))]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + STOP_NOW_GRACE_S
            while pids and time.monotonic() < deadline:
                pids = [p for p in pids if not _reaped(p)]
                time.sleep(0.02)


def install_signals(pool: Pool, log: Log, wake: Callable[[], None]) -> None:
    """The two-stage stop on SIGINT/SIGTERM (main thread only: signals go there)."""
    if threading.current_thread() is not threading.main_thread():
        return
    received = 0

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        received += 1
        name = signal.Signals(signum).name
        if received == 1:
            pool.stop.set()
            wake()
            log.event("stopping", signal=name,
                      hint="running ticks finish; signal again to stop at once")  # fmt: skip
            return
        log.event("stopped_now", level="warn", signal=name)
        pool.kill_now()
        os._exit(130)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)


def _reaped(pid: int) -> bool:
    """Whether the worker `pid` has exited (reaping it, so it is not a zombie)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not ours to reap (already reaped)
        return not fsutil.pid_alive(pid)
    return done == pid


__all__ = ["Died", "Finished", "Pool", "Worker", "install_signals"]
