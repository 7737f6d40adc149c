"""The watcher daemon: an observer that only wakes the loop, a scheduler, a pool of workers.

`Watcher.work(mode=...)` is the loop (rq's `work(burst=...)` shape). Filesystem events are
hints: the inbox is listed at start and every `poll_s`, and that is what guarantees pickup.
Each incident id is queued once; a ready one goes to a free worker process, which ticks it
(`worker.pickup`) until it is closed, waiting for an agent, or not yet due; a `not_before`
goes into a heap and wakes the incident at that time. The global pause flag stops
dispatching. Several watchers can share a root: leases decide who works an incident, a
"busy" pickup is simply looked at again later.

Worker model: N spawned processes, each fed ids over a pipe. A tick's Python part
(pydantic, JSON, SQLite, fsync) holds the GIL, so threads would not scale with cores;
processes do (see bench/watch.py). A worker that dies is replaced; its incident is queued
again and the worker that next takes the unreleased lease counts a crash-recovery.

Signals: the first SIGINT/SIGTERM stops dispatching and lets the running ticks finish
(exit 0); a second kills the commands being run and the workers, and exits at once (every
tick is durable, so the state stays resumable).
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from enum import StrEnum
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from incidents import fsutil, mirror, pause, proc, store
from incidents.errors import IncidentsError
from incidents.layout import Root, validate_id
from incidents.settings import Config
from incidents.watch.intake import Verdict, examine
from incidents.watch.log import Display, Log
from incidents.watch.worker import Pickup, serve

RECHECK_INCOMPLETE_S = 0.5
RETRY_BUSY_S = 1.0
MAX_ERRORS = 3
STOP_NOW_GRACE_S = 1.0  # a second signal: how long workers get to kill their commands
MOVE_PAIRING_S = 0.02  # watchdog's hold on a move's first half (its default: 0.5 s)


class Mode(StrEnum):
    FOREVER = "forever"
    ONCE = "once"  # one pass over what is in the inbox at start
    UNTIL_IDLE = "until-idle"  # until everything is closed or waiting for an agent


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    incident_id: str | None = None
    since: float = 0.0


@dataclass
class Stats:
    results: Counter[str] = field(default_factory=Counter)
    dispatched: int = 0
    rejected: int = 0
    crashed: int = 0


class _Wakeup:
    """A self-pipe: the observer thread and signal handlers wake the select loop."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)
        self.lock = threading.Lock()
        self.ids: list[tuple[str, int | None]] = []

    def push(self, incident_id: str, whole_ns: int | None) -> None:
        with self.lock:
            self.ids.append((incident_id, whole_ns))
        self.poke()

    def poke(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self.w, b"x")

    def drain(self) -> list[tuple[str, int | None]]:
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self.r, 4096):
                pass
        with self.lock:
            ids, self.ids = self.ids, []
        return ids

    def close(self) -> None:
        os.close(self.r)
        os.close(self.w)


class Watcher:
    def __init__(
        self,
        root: Root,
        cfg: Config,
        *,
        workers: int | None = None,
        poll_s: float | None = None,
        log: Log | None = None,
    ) -> None:
        self.root, self.cfg = root, cfg
        self.settings = cfg.watch
        self.nworkers = workers or self.settings.workers
        self.poll_s = poll_s or self.settings.poll_s
        self.log = log or Log()
        self.stats = Stats()
        self.ctx = multiprocessing.get_context("spawn")
        self.stop = self.ctx.Event()
        self.signals = 0
        self.wakeup = _Wakeup()
        self.workers: list[_Worker] = []
        self.ready: deque[str] = deque()
        self.queued: set[str] = set()
        self.later: list[tuple[float, str]] = []
        self.due: dict[str, float] = {}
        self.incomplete: set[str] = set()  # looked at again every RECHECK_INCOMPLETE_S
        self.changing: set[str] = set()  # incomplete and still changing (until-idle waits)
        self.rerun: set[str] = set()
        self.errors: Counter[str] = Counter()
        self.first_pass: set[str] = set()
        self._waiting_logged: set[str] = set()
        self._next_incomplete = 0.0
        # id -> when it was known whole: arrived by one rename (event) or a capture's hint
        self.whole: dict[str, int] = {}
        # id -> identity of the folder once found ready: complete then, written only by our
        # workers and agents' commands since (atomic writes), so it needs no waiting again
        self.taken: dict[str, tuple[int, int]] = {}
        self.display: Display | None = None

    # -- public ---------------------------------------------------------------------------

    def work(self, mode: Mode = Mode.FOREVER, max_items: int | None = None) -> bool:
        """Run until stopped (or idle, for the burst modes). True when it stopped cleanly."""
        self.root.ensure()
        self._install_signals()
        observer = None
        try:
            self._start()
            observer = self._observe()
            self.log.event("watch_started", root=str(self.root.path), workers=self.nworkers,
                           mode=mode.value, queued=len(self.ready))  # fmt: skip
            self._loop(mode, max_items)
        finally:
            if observer is not None:
                observer.stop()
            self._shutdown_workers()
            if observer is not None:
                observer.join(timeout=5)
            self._catch_up()
            self.wakeup.close()
        self.log.event("watch_stopped", **{k: v for k, v in self.stats.results.items()})
        return True

    # -- start ----------------------------------------------------------------------------

    def _start(self) -> None:
        hints = self.root.state / "dirty"  # read before catch_up consumes them
        for name in os.listdir(hints) if hints.is_dir() else []:
            with contextlib.suppress(FileNotFoundError):
                if name[:1] != ".":
                    self.whole[name] = os.stat(hints / name).st_mtime_ns
        closed = store.complete_pending(self.root)
        if closed:
            self.log.event("closes_completed", ids=",".join(closed))
        self._catch_up()
        self._sweep()
        self._scan()
        self.first_pass = set(self.queued)
        for _ in range(self.nworkers):
            self.workers.append(self._spawn())

    def _catch_up(self) -> None:
        try:
            conn = mirror.connect(self.root.db_path)
            try:
                mirror.catch_up(conn, self.root)
            finally:
                conn.close()
        except Exception as exc:  # the mirror is derivable: never stop the watcher for it
            self.log.event("mirror_error", level="warn", error=str(exc), fix="incidents reindex")

    def _sweep(self) -> None:
        for moved in store.sweep_staging(self.root, self.settings.staging_grace_s):
            self.log.event("staging_swept", level="warn", to=str(moved))

    def _spawn(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        process = self.ctx.Process(
            target=serve, args=(child, str(self.root.path), self.cfg, self.stop),
            name="incidents-watch-worker", daemon=True,
        )  # fmt: skip
        process.start()
        child.close()
        return _Worker(process, parent)

    def _observe(self) -> Any:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer
        from watchdog.observers.inotify_move_event_grouper import InotifyMoveEventGrouper

        # its emitter logs an error on a normal stop ("called when the thread is inactive")
        logging.getLogger("watchdog").setLevel(logging.CRITICAL)
        # watchdog holds every IN_MOVED_FROM for 0.5 s to pair it with its IN_MOVED_TO, and
        # its queue is FIFO: each archive (a move out of the inbox) held back the next
        # bundle's arrival by up to 0.5 s (idle pickup p50 ~300 ms). Both halves of a rename
        # are read from the kernel in one batch, so a short hold still pairs them.
        InotifyMoveEventGrouper.delay = MOVE_PAIRING_S

        wakeup, inbox, dirty = self.wakeup, str(self.root.inbox), str(self.root.state / "dirty")

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                for raw in (getattr(event, "dest_path", ""), event.src_path):
                    path = os.fsdecode(raw) if raw else ""
                    parent, name = os.path.split(path)
                    if name and not name.startswith(".") and parent in (inbox, dirty):
                        if event.event_type != "deleted":
                            # what is in the folder now arrived by then (a rename brings the
                            # whole bundle; inotify reports it as a creation); a file written
                            # later is newer and makes it wait until stable
                            wakeup.push(name, time.time_ns())
                        return

        observer = Observer()
        handler = Handler()
        observer.schedule(handler, inbox, recursive=False)
        os.makedirs(dirty, mode=0o700, exist_ok=True)
        observer.schedule(handler, dirty, recursive=False)
        observer.start()
        return observer

    # -- the loop -------------------------------------------------------------------------

    def _loop(self, mode: Mode, max_items: int | None) -> None:
        next_scan = time.monotonic() + self.poll_s
        paused_until = 0.0
        while True:
            now = time.monotonic()
            for incident_id, whole_ns in self.wakeup.drain():
                if whole_ns is not None:
                    self.whole[incident_id] = whole_ns
                self._enqueue(incident_id)
            if self.stop.is_set():
                if not any(w.incident_id for w in self.workers):
                    return
            else:
                if now >= next_scan:
                    self._scan()
                    self._sweep()
                    next_scan = now + self.poll_s
                self._promote(time.time())
                self._check_incomplete()
                if now >= paused_until:
                    info = pause.current(self.root)
                    if info is not None:
                        paused_until = now + 1.0
                        self.log.event("paused", reason=info.reason, fix="incidents resume")
                        if mode is not Mode.FOREVER:
                            return  # a burst run has nothing to do while paused
                    else:
                        self._dispatch(mode, max_items)
                if self._finished(mode, max_items):
                    return
            self._wait(min(next_scan, now + self._next_due()) - now)

    def _next_due(self) -> float:
        delay = self.poll_s
        if self.later:
            delay = min(delay, max(0.0, self.later[0][0] - time.time()))
        if self.incomplete:
            delay = min(delay, RECHECK_INCOMPLETE_S)
        return delay

    def _finished(self, mode: Mode, max_items: int | None) -> bool:
        if max_items is not None and self.stats.dispatched >= max_items:
            return not any(w.incident_id for w in self.workers)
        if mode is Mode.FOREVER:
            return False
        busy = any(w.incident_id for w in self.workers)
        if mode is Mode.ONCE:
            return not busy and not (self.first_pass & self.queued)
        return not busy and not self.ready and not self.later and not self.changing

    def _wait(self, timeout: float) -> None:
        handles: list[Any] = [self.wakeup.r]
        for w in self.workers:
            handles += [w.conn, w.process.sentinel]
        for ready in wait(handles, timeout=max(0.0, timeout)):
            worker = self._owner_of(ready)
            if worker is None:
                continue
            if ready is worker.conn or worker.conn.poll(0):
                self._receive(worker)
            else:
                self._replace(worker)

    def _owner_of(self, handle: Any) -> _Worker | None:
        for w in self.workers:
            if handle is w.conn or handle == w.process.sentinel:
                return w
        return None

    # -- queueing -------------------------------------------------------------------------

    def _scan(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self.root.inbox) if not n.startswith("."))
        except FileNotFoundError:
            return
        now = time.time()
        for name in names:
            if self.due.get(name, 0.0) <= now:
                self._enqueue(name)

    def _enqueue(self, incident_id: str) -> None:
        try:
            validate_id(incident_id)
        except IncidentsError:
            self._reject_name(incident_id)
            return
        if any(w.incident_id == incident_id for w in self.workers):
            self.rerun.add(incident_id)
        elif incident_id not in self.queued and incident_id not in self.incomplete:
            self.queued.add(incident_id)
            self.ready.append(incident_id)

    def _reject_name(self, name: str) -> None:
        path = self.root.inbox / name
        if path.exists() or path.is_symlink():
            target = store.reject(self.root, path, f"not a valid incident id: {name!r}")
            self.stats.rejected += 1
            self.log.event("rejected", level="warn", folder=name, to=str(target))

    def _later(self, incident_id: str, when: float) -> None:
        self.due[incident_id] = when
        heapq.heappush(self.later, (when, incident_id))

    def _promote(self, now: float) -> None:
        while self.later and self.later[0][0] <= now:
            when, incident_id = heapq.heappop(self.later)
            if self.due.get(incident_id) == when:
                del self.due[incident_id]
                self._enqueue(incident_id)

    def _check_incomplete(self) -> None:
        if not self.incomplete or time.monotonic() < self._next_incomplete:
            return
        self._next_incomplete = time.monotonic() + RECHECK_INCOMPLETE_S
        for incident_id in list(self.incomplete):
            self.incomplete.discard(incident_id)
            self._enqueue(incident_id)

    def _dispatch(self, mode: Mode, max_items: int | None) -> None:
        for worker in self.workers:
            if worker.incident_id is not None:
                continue
            incident_id = self._next_ready()
            if incident_id is None:
                return
            if max_items is not None and self.stats.dispatched >= max_items:
                self._enqueue(incident_id)
                return
            worker.incident_id, worker.since = incident_id, time.monotonic()
            self.stats.dispatched += 1
            if self.display is not None:
                self.display.inflight[incident_id] = worker.since
            try:
                worker.conn.send(incident_id)
            except OSError:
                self._replace(worker)

    def _next_ready(self) -> str | None:
        now_ns = time.time_ns()
        while self.ready:
            incident_id = self.ready.popleft()
            self.queued.discard(incident_id)
            seen = examine(
                self.root.inbox / incident_id, now_ns=now_ns,
                whole_ns=self.whole.get(incident_id),
                stable_s=self.settings.stable_s, grace_s=self.settings.reject_grace_s,
                root=self.root, taken=self.taken.get(incident_id),
            )  # fmt: skip
            if seen.verdict is not Verdict.WAIT:
                self.whole.pop(incident_id, None)
                self.changing.discard(incident_id)
            if seen.verdict is Verdict.READY:
                if seen.identity is not None:
                    self.taken[incident_id] = seen.identity
                return incident_id
            self.taken.pop(incident_id, None)
            if seen.verdict is Verdict.WAIT:
                self.incomplete.add(incident_id)
                if not seen.settled:
                    self.changing.add(incident_id)
                else:
                    self.changing.discard(incident_id)
                if incident_id not in self._waiting_logged:
                    self._waiting_logged.add(incident_id)
                    self.log.event("incomplete", id=incident_id, why=seen.reason)
            elif seen.verdict is Verdict.REJECT:
                self._reject(incident_id, seen.reason)
        return None

    def _reject(self, incident_id: str, reason: str) -> None:
        try:
            target = store.reject(self.root, self.root.inbox / incident_id, reason)
        except (IncidentsError, OSError) as exc:
            self.log.event("reject_failed", level="error", id=incident_id, error=str(exc))
            return
        self.stats.rejected += 1
        self.first_pass.discard(incident_id)
        self.log.event("rejected", level="warn", id=incident_id, reason=reason, to=str(target))

    # -- results --------------------------------------------------------------------------

    def _receive(self, worker: _Worker) -> None:
        try:
            result: Pickup = worker.conn.recv()
        except (EOFError, OSError):
            self._replace(worker)
            return
        incident_id = worker.incident_id or result.incident_id
        elapsed = time.monotonic() - worker.since
        worker.incident_id = None
        if self.display is not None:
            self.display.inflight.pop(incident_id, None)
            self.display.counts[_label(result)] += 1
        self._settle(result, elapsed)
        if incident_id in self.rerun:
            self.rerun.discard(incident_id)
            if result.result not in ("terminal", "gone", "rejected", "later"):
                self._enqueue(incident_id)

    def _settle(self, r: Pickup, elapsed: float) -> None:
        self.stats.results[r.result] += 1
        self.first_pass.discard(r.incident_id)
        if r.result in ("terminal", "gone", "rejected"):
            self.taken.pop(r.incident_id, None)
        level = "error" if r.result == "error" else "info"
        self.log.event(
            r.result, level=level, id=r.incident_id, state=r.state, ticks=r.ticks,
            archived_to=r.archived_to, detail=r.detail or None,
            recovered=r.recovered or None, took=f"{elapsed:.3f}s",
        )  # fmt: skip
        if r.result == "later" and r.not_before is not None:
            self._later(r.incident_id, r.not_before)
        elif r.result in ("busy", "lost", "paused"):
            self._later(r.incident_id, time.time() + RETRY_BUSY_S)
        elif r.result == "yielded":
            self._enqueue(r.incident_id)
        elif r.result == "error":
            self.errors[r.incident_id] += 1
            if self.errors[r.incident_id] < MAX_ERRORS:
                self._later(r.incident_id, time.time() + RETRY_BUSY_S)

    def _replace(self, worker: _Worker) -> None:
        """A worker died (killed, crashed): queue its incident again and start another."""
        incident_id = worker.incident_id
        worker.process.join(timeout=1)
        code = worker.process.exitcode
        with contextlib.suppress(OSError):
            worker.conn.close()
        index = self.workers.index(worker)
        if self.stop.is_set():
            self.workers.pop(index)
            return
        self.stats.crashed += 1
        self.log.event("worker_died", level="error", id=incident_id, exitcode=code)
        self.workers[index] = self._spawn()
        if incident_id is not None:
            self.first_pass.discard(incident_id)
            self._later(incident_id, time.time() + 0.05)

    # -- stopping -------------------------------------------------------------------------

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        if self.signals == 1:
            self.stop.set()
            self.wakeup.poke()
            self.log.event("stopping", signal=signal.Signals(signum).name,
                           hint="running ticks finish; signal again to stop at once")  # fmt: skip
            return
        self.log.event("stopped_now", level="warn", signal=signal.Signals(signum).name)
        proc.kill_running()  # a worker thread's commands (--workers 1)
        pids = [pid for w in self.workers if (pid := getattr(w.process, "pid", None))]
        for sig in (signal.SIGTERM, signal.SIGKILL):  # SIGTERM: workers kill their commands
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + STOP_NOW_GRACE_S
            while pids and time.monotonic() < deadline:
                pids = [p for p in pids if not _reaped(p)]
                time.sleep(0.02)
        os._exit(130)

    def _shutdown_workers(self) -> None:
        self.stop.set()
        for w in self.workers:
            with contextlib.suppress(OSError, ValueError):
                w.conn.send(None)
        deadline = time.monotonic() + 30
        for w in self.workers:
            w.process.join(timeout=max(0.1, deadline - time.monotonic()))
            if w.process.is_alive():
                w.process.kill()
                w.process.join(timeout=5)
        self.workers = []


def _reaped(pid: int) -> bool:
    """Whether the worker `pid` has exited (reaping it, so it is not a zombie)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not ours to reap (already reaped)
        return not fsutil.pid_alive(pid)
    return done == pid


def _label(r: Pickup) -> str:
    if r.result == "terminal":
        return (r.archived_to or "closed").split("/")[1] if r.archived_to else "closed"
    return r.result


__all__ = ["Mode", "Watcher"]
