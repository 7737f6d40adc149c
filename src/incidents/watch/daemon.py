"""The watcher daemon: an observer that only wakes the loop, a schedule, a pool of workers.

`Watcher.work(mode=...)` is the loop (rq's `work(burst=...)` shape). Filesystem events are
hints: the inbox is listed at start and every `poll_s`, and that is what guarantees pickup.
Each incident id is queued once; a ready one goes to a free worker process, which ticks it
(`worker.pickup`) until it is closed, waiting for an agent, or not yet due; a `not_before`
puts it back on the schedule for that time. The global pause flag stops dispatching.
Several watchers can share a root: leases decide who works an incident, a "busy" pickup is
simply looked at again later.

The parts: `schedule` decides what is worked next (pure), `pool` runs the workers and the
two-stage stop, `observer` wakes the loop, `intake` says whether a folder is whole. This
module joins them, and keeps the mirror caught up at start and at exit.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time

from incidents import fleet, mirror, pause, store
from incidents.config import Config
from incidents.errors import IncidentsError, RootError
from incidents.layout import Root, validate_id
from incidents.notify.deliver import Notifier, Pass
from incidents.step import close as closing
from incidents.watch.intake import Verdict, examine
from incidents.watch.log import Display, Log
from incidents.watch.observer import Wakeup, observe
from incidents.watch.pool import Died, Finished, Pool, install_signals
from incidents.watch.schedule import Mode, PickupResult, Schedule
from incidents.watch.worker import Pickup

NOTIFY_AT_EXIT_S = 10.0  # at most this long at exit for the last alerts


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
        self.poll_s = poll_s or self.settings.poll_s
        self.log = log or Log()
        self.schedule = Schedule()
        self.pool = Pool(root, cfg, workers or self.settings.workers)
        self.wakeup = Wakeup()
        self.display: Display | None = None
        self.failures = 0  # failed pickups, bundles that could not be set aside
        self.notifier = Notifier(root, cfg.notify, self._notified)

    def work(self, mode: Mode = Mode.FOREVER, max_items: int | None = None) -> bool:
        """Run until stopped (or idle, for the burst modes). True when it stopped cleanly."""
        self.root.ensure()
        _writable_or_raise(self.root)
        install_signals(self.pool, self.log, self.wakeup.poke)
        observer = None
        try:
            self._start()
            observer = observe(self.root, self.wakeup)
            self.log.event("watch_started", root=str(self.root.path), workers=self.pool.size,
                           mode=mode.value, queued=len(self.schedule.ready))  # fmt: skip
            self._loop(mode, max_items)
        finally:
            if observer is not None:
                observer.stop()
            self.pool.shutdown()
            if observer is not None:
                observer.join(timeout=5)
            self._catch_up()
            self.notifier.finish(NOTIFY_AT_EXIT_S)  # a burst's alerts go out before it returns
            self.wakeup.close()
        results = self.schedule.stats.results
        self.log.event("watch_stopped", level="error" if self.failures else "info",
                       failures=self.failures, **{str(k): n for k, n in results.items()})  # fmt: skip
        return True

    # -- start ----------------------------------------------------------------------------

    def _start(self) -> None:
        hints = self.root.state / "dirty"  # read before catch_up consumes them
        for name in os.listdir(hints) if hints.is_dir() else []:
            with contextlib.suppress(FileNotFoundError):
                if name[:1] != ".":
                    self.schedule.whole[name] = os.stat(hints / name).st_mtime_ns
        closed = closing.complete_pending(self.root)
        if closed:
            self.log.event("closes_completed", ids=",".join(closed))
        self._catch_up()
        self._fleet()
        self._sweep()
        self._scan()
        self.schedule.start_pass()
        self.pool.start()

    def _catch_up(self) -> None:
        def report(exc: BaseException) -> None:  # derivable: never stop the watcher for it
            self.log.event("mirror_error", level="warn", error=str(exc), fix="incidents reindex")

        mirror.catch_up_root(self.root, report)

    def _fleet(self) -> None:
        """A host of a fleet: the global pause, decisions routed here, an outage of the
        shared mirror (`incidents.fleet`); nothing on a root's own SQLite mirror."""
        done = fleet.fleet_pass(self.root, self.cfg.mirror.share_groups)
        if done.began:
            self.log.event("degraded", level="warn", error=done.degraded,
                           fix="working this inbox with local budgets until the mirror is back")  # fmt: skip
        if done.recovered:
            self.log.event("fleet_back", detail="shared mirror reachable; caught up")
        if done.paused:
            self.log.event("fleet_paused", level="warn", reason=done.paused, fix="incidents resume")
        if done.resumed:
            self.log.event("fleet_resumed")
        for incident_id, other_host, other_id in done.counted:
            self.log.event(
                "counted_elsewhere", incident=incident_id, host=other_host, into=other_id
            )
        for decision_id, incident_id, outcome in done.applied:
            self.log.event(
                "decision_applied", id=decision_id, incident=incident_id, outcome=outcome
            )

    def _notified(self, done: Pass) -> None:
        if done.sent or done.set_aside or done.errors:
            self.log.event(
                "alerts",
                level="warn" if done.errors else "info",
                sent=done.sent,
                delivered=done.delivered,
                waiting=done.waiting,
                set_aside=done.set_aside,
                error="; ".join(done.errors)[:500],
            )

    def _sweep(self) -> None:
        for moved in store.sweep_staging(self.root, self.settings.staging_grace_s):
            self.log.event("staging_swept", level="warn", to=str(moved))

    # -- the loop -------------------------------------------------------------------------

    def _loop(self, mode: Mode, max_items: int | None) -> None:
        next_scan = time.monotonic() + self.poll_s
        paused_until = 0.0
        shown: pause.PauseInfo | None = None  # the pause last logged: once, and its end
        while True:
            now = time.monotonic()
            for incident_id, whole_ns in self.wakeup.drain():
                if whole_ns is not None:
                    self.schedule.whole[incident_id] = whole_ns
                self._offer(incident_id)
            if self.pool.stopping:
                if not self.pool.busy:
                    return
            else:
                if now >= next_scan:
                    self._fleet()
                    self._scan()
                    self._sweep()
                    next_scan = now + self.poll_s
                self.schedule.promote(time.time())
                self.schedule.recheck_incomplete(time.monotonic())
                self.notifier.pump()  # a pass in its own thread: never holds up the loop
                if now >= paused_until:
                    info = pause.current(self.root)
                    if info is not None:
                        paused_until = now + 1.0
                        if info != shown:
                            said = {"reason": info.reason, "since": info.since_iso}
                            self.log.event("paused", **said, fix="incidents resume")
                            shown = info
                        if mode is not Mode.FOREVER:
                            return  # a burst run has nothing to do while paused
                    else:
                        if shown is not None:
                            self.log.event("pause_ended", since=shown.since_iso)
                            shown = None
                        self._dispatch(max_items)
                if self.schedule.finished(mode, max_items):
                    return
            delay = self.schedule.next_delay(time.time(), self.poll_s)
            for happened in self.pool.wait(min(next_scan, now + delay) - now, self.wakeup.r):
                if isinstance(happened, Finished):
                    self._settle(happened)
                else:
                    self._died(happened)

    # -- queueing -------------------------------------------------------------------------

    def _scan(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self.root.inbox) if not n.startswith("."))
        except FileNotFoundError:
            return
        now = time.time()
        for name in names:
            if not self.schedule.deferred(name, now):
                self._offer(name)

    def _offer(self, name: str) -> None:
        """Queue what appeared in the inbox; a name that is no incident id is set aside."""
        try:
            validate_id(name)
        except IncidentsError:
            path = self.root.inbox / name
            if path.exists() or path.is_symlink():
                target = store.reject(self.root, path, f"not a valid incident id: {name!r}")
                self.schedule.rejected(name)
                self.log.event("rejected", level="warn", folder=name, to=str(target))
            return
        self.schedule.enqueue(name)

    def _dispatch(self, max_items: int | None) -> None:
        for worker in self.pool.idle():
            incident_id = self._next_ready()
            if incident_id is None:
                return
            if self.schedule.limit_reached(max_items):
                self.schedule.enqueue(incident_id)
                return
            self.schedule.start(incident_id)
            died = self.pool.send(worker, incident_id)
            if self.display is not None:
                self.display.inflight[incident_id] = worker.since
            if died is not None:
                self._died(died)

    def _next_ready(self) -> str | None:
        """The next queued incident whose folder is whole; the others wait or are set aside."""
        now_ns = time.time_ns()
        while (incident_id := self.schedule.pop_ready()) is not None:
            seen = examine(
                self.root.inbox / incident_id, now_ns=now_ns,
                whole_ns=self.schedule.whole.get(incident_id),
                stable_s=self.settings.stable_s, grace_s=self.settings.reject_grace_s,
                root=self.root, taken=self.schedule.taken.get(incident_id),
            )  # fmt: skip
            if seen.verdict is Verdict.READY:
                self.schedule.found_ready(incident_id, seen.identity)
                return incident_id
            if seen.verdict is Verdict.WAIT:
                if self.schedule.found_incomplete(incident_id, settled=seen.settled):
                    self.log.event("incomplete", id=incident_id, why=seen.reason)
                continue
            self.schedule.found_unusable(incident_id)
            if seen.verdict is Verdict.REJECT:
                self._reject(incident_id, seen.reason)
        return None

    def _reject(self, incident_id: str, reason: str) -> None:
        try:
            target = store.reject(self.root, self.root.inbox / incident_id, reason)
        except (IncidentsError, OSError) as exc:
            self.failures += 1
            self.log.event("reject_failed", level="error", id=incident_id, error=str(exc))
            return
        self.schedule.rejected(incident_id)
        self.log.event("rejected", level="warn", id=incident_id, reason=reason, to=str(target))

    # -- what the workers did -------------------------------------------------------------

    def _settle(self, done: Finished) -> None:
        r = done.pickup
        if self.display is not None:
            self.display.inflight.pop(done.incident_id, None)
            self.display.counts[_label(r)] += 1
        level = "error" if r.result is PickupResult.ERROR else "info"
        self.failures += r.result is PickupResult.ERROR
        self.log.event(
            r.result.value, level=level, id=r.incident_id, state=r.state, ticks=r.ticks,
            archived_to=r.archived_to, detail=r.detail or None,
            recovered=r.recovered or None, took=f"{done.elapsed:.3f}s",
        )  # fmt: skip
        self.schedule.settle(done.incident_id, r.result, r.not_before, time.time())

    def _died(self, died: Died) -> None:
        if not died.replaced:
            self.schedule.abandon(died.incident_id)
            return
        # not a failure of the run: the incident is retried, then quarantined as poison
        self.log.event("worker_died", level="error", id=died.incident_id, exitcode=died.exitcode)
        self.schedule.crashed(died.incident_id, time.time())


def _writable_or_raise(root: Root) -> None:
    """A watcher on a root it cannot write would only fail every pickup: say so at once
    (a read-only filesystem is the CLI's one-line disk error, exit 1)."""
    if os.access(root.state, os.W_OK | os.X_OK):
        return
    if os.statvfs(root.state).f_flag & os.ST_RDONLY:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(root.state))
    raise RootError(f"{root.state} is not writable by this user: the watcher cannot work here")


def _label(r: Pickup) -> str:
    """The display's row for a pickup: the archive bucket of a closed incident, else its result."""
    if r.result is PickupResult.TERMINAL:
        return r.archived_to.split("/")[1] if r.archived_to else "closed"
    return r.result.value


__all__ = ["Mode", "Watcher"]
