"""Which incident the watcher works next, and when it looks at one again.

Pure bookkeeping, no processes, threads or files: the ready queue (each id queued once),
the heap of incidents not due yet, the bundles still arriving (looked at again every
`RECHECK_INCOMPLETE_S`), the ids being worked, and what a pickup's result means for its
incident: queued again, due later, or done for now. The watcher (`daemon.Watcher`) feeds
it what the inbox, the observer and the workers say, and asks it what to do.

Time comes in as arguments: `now` is epoch seconds (a pickup's `not_before` is one),
`mono` is `time.monotonic()`.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from dataclasses import dataclass, field
from enum import StrEnum

RECHECK_INCOMPLETE_S = 0.5
RETRY_BUSY_S = 1.0
RETRY_CRASHED_S = 0.05
MAX_ERRORS = 3


class Mode(StrEnum):
    FOREVER = "forever"
    ONCE = "once"  # one pass over what is in the inbox at start
    UNTIL_IDLE = "until-idle"  # until everything is closed or waiting for an agent


class PickupResult(StrEnum):
    """What one pickup of an incident came to (the watcher logs it as the event's name)."""

    TERMINAL = "terminal"  # closed: archived
    WAITING = "waiting"  # waiting for an agent
    LATER = "later"  # not due before the pickup's `not_before`
    IDLE = "idle"  # nothing to do now
    YIELDED = "yielded"  # more to do, but the pickup used its ticks or the watcher stops
    BUSY = "busy"  # another holds its lease
    LOST = "lost"  # its lease was taken over mid-pickup
    PAUSED = "paused"  # the pause flag is set
    GONE = "gone"  # no longer in the inbox
    REJECTED = "rejected"  # an invalid document: set aside
    ERROR = "error"
    STOPPED = "stopped"  # the watcher was stopping: not picked up


# results after which nothing is left to do for the incident in this inbox
_CLOSED = frozenset({PickupResult.TERMINAL, PickupResult.GONE, PickupResult.REJECTED})
_RETRIED = frozenset({PickupResult.BUSY, PickupResult.LOST, PickupResult.PAUSED})
_NO_RERUN = _CLOSED | {PickupResult.LATER, PickupResult.ERROR}


@dataclass
class Stats:
    results: Counter[PickupResult] = field(default_factory=Counter)
    dispatched: int = 0
    crashed: int = 0


class Schedule:
    def __init__(self) -> None:
        self.stats = Stats()
        self.ready: deque[str] = deque()
        self.queued: set[str] = set()  # the ids in `ready`
        self.later: list[tuple[float, str]] = []  # heap of (due, id); stale entries stay
        self.due: dict[str, float] = {}  # id -> its one current due time
        self.incomplete: set[str] = set()  # looked at again every RECHECK_INCOMPLETE_S
        self.changing: set[str] = set()  # incomplete and still changing (until-idle waits)
        self.running: set[str] = set()  # sent to a worker, no result yet
        self.rerun: set[str] = set()  # announced again while running: look again after
        self.errors: Counter[str] = Counter()
        self.first_pass: set[str] = set()  # what `Mode.ONCE` still has to work
        self._waiting_logged: set[str] = set()
        self._next_incomplete = 0.0
        # id -> when it was known whole: arrived by one rename (event) or a capture's hint
        self.whole: dict[str, int] = {}
        # id -> identity of the folder once found ready: complete then, written only by our
        # workers and agents' commands since (atomic writes), so it needs no waiting again
        self.taken: dict[str, tuple[int, int]] = {}

    # -- queueing -------------------------------------------------------------------------

    def enqueue(self, incident_id: str) -> None:
        """Queue a (valid) id once; one being worked is looked at again when it comes back."""
        if incident_id in self.running:
            self.rerun.add(incident_id)
        elif incident_id not in self.queued and incident_id not in self.incomplete:
            self.queued.add(incident_id)
            self.ready.append(incident_id)

    def deferred(self, incident_id: str, now: float) -> bool:
        """Not due yet: an inbox listing does not queue it."""
        return self.due.get(incident_id, 0.0) > now

    def start_pass(self) -> None:
        """What is queued now is the first pass (`Mode.ONCE` ends when it is worked)."""
        self.first_pass = set(self.queued)

    def pop_ready(self) -> str | None:
        """The next queued id, to be examined before it is worked."""
        if not self.ready:
            return None
        incident_id = self.ready.popleft()
        self.queued.discard(incident_id)
        return incident_id

    def found_ready(self, incident_id: str, identity: tuple[int, int] | None) -> None:
        """The examined bundle is whole: it goes to a worker."""
        self.whole.pop(incident_id, None)
        self.changing.discard(incident_id)
        if identity is not None:
            self.taken[incident_id] = identity

    def found_incomplete(self, incident_id: str, *, settled: bool) -> bool:
        """The examined bundle is still arriving. True the first time (worth a log line)."""
        self.taken.pop(incident_id, None)
        self.incomplete.add(incident_id)
        if settled:
            self.changing.discard(incident_id)
        else:
            self.changing.add(incident_id)
        if incident_id in self._waiting_logged:
            return False
        self._waiting_logged.add(incident_id)
        return True

    def found_unusable(self, incident_id: str) -> None:
        """The examined folder is gone or is to be rejected: forget what was known of it."""
        self.whole.pop(incident_id, None)
        self.changing.discard(incident_id)
        self.taken.pop(incident_id, None)

    def rejected(self, incident_id: str) -> None:
        # set aside by the watcher itself (not by a worker's pickup): counted with those
        self.stats.results[PickupResult.REJECTED] += 1
        self.first_pass.discard(incident_id)

    # -- time -----------------------------------------------------------------------------

    def defer(self, incident_id: str, when: float) -> None:
        """Queue `incident_id` again at `when` (epoch seconds), replacing an earlier due time."""
        self.due[incident_id] = when
        heapq.heappush(self.later, (when, incident_id))

    def promote(self, now: float) -> None:
        """Queue what has come due."""
        while self.later and self.later[0][0] <= now:
            when, incident_id = heapq.heappop(self.later)
            if self.due.get(incident_id) == when:
                del self.due[incident_id]
                self.enqueue(incident_id)

    def recheck_incomplete(self, mono: float) -> None:
        """Queue the incomplete bundles again, at most every RECHECK_INCOMPLETE_S."""
        if not self.incomplete or mono < self._next_incomplete:
            return
        self._next_incomplete = mono + RECHECK_INCOMPLETE_S
        for incident_id in list(self.incomplete):
            self.incomplete.discard(incident_id)
            self.enqueue(incident_id)

    def next_delay(self, now: float, poll_s: float) -> float:
        """How long the loop may sleep before something here comes due (at most `poll_s`)."""
        delay = poll_s
        if self.later:
            delay = min(delay, max(0.0, self.later[0][0] - now))
        if self.incomplete:
            delay = min(delay, RECHECK_INCOMPLETE_S)
        return delay

    # -- work -----------------------------------------------------------------------------

    def limit_reached(self, max_items: int | None) -> bool:
        return max_items is not None and self.stats.dispatched >= max_items

    def start(self, incident_id: str) -> None:
        """`incident_id` was sent to a worker."""
        self.running.add(incident_id)
        self.stats.dispatched += 1

    def settle(
        self, incident_id: str, result: PickupResult, not_before: float | None, now: float
    ) -> None:
        """A pickup came back: queue the incident again, defer it, or leave it be."""
        self.running.discard(incident_id)
        self.stats.results[result] += 1
        self.first_pass.discard(incident_id)
        if result in _CLOSED:
            self.taken.pop(incident_id, None)
        if result is PickupResult.LATER and not_before is not None:
            self.defer(incident_id, not_before)
        elif result in _RETRIED:
            self.defer(incident_id, now + RETRY_BUSY_S)
        elif result is PickupResult.YIELDED:
            self.enqueue(incident_id)
        elif result is PickupResult.ERROR:
            self.errors[incident_id] += 1
            if self.errors[incident_id] < MAX_ERRORS:
                self.defer(incident_id, now + RETRY_BUSY_S)
        if incident_id in self.rerun:
            self.rerun.discard(incident_id)
            # seen again while it ran (a listing, an event): that came before this result,
            # so it does not cut short the wait the result asked for (a due time, a retry's
            # back-off), nor retry a failure at once
            if result not in _NO_RERUN and not self.deferred(incident_id, now):
                self.enqueue(incident_id)

    def crashed(self, incident_id: str | None, now: float) -> None:
        """The worker of `incident_id` died (it was replaced): work the incident again soon."""
        self.stats.crashed += 1
        if incident_id is not None:
            self.running.discard(incident_id)
            self.first_pass.discard(incident_id)
            self.defer(incident_id, now + RETRY_CRASHED_S)

    def abandon(self, incident_id: str | None) -> None:
        """The worker of `incident_id` is gone while the watcher stops: nothing runs it now."""
        if incident_id is not None:
            self.running.discard(incident_id)

    def finished(self, mode: Mode, max_items: int | None) -> bool:
        """Whether a run in `mode` has nothing more to do (checked while not stopping)."""
        busy = bool(self.running)
        if self.limit_reached(max_items):
            return not busy
        if mode is Mode.FOREVER:
            return False
        if mode is Mode.ONCE:
            return not busy and not (self.first_pass & self.queued)
        return not busy and not self.ready and not self.later and not self.changing


__all__ = ["MAX_ERRORS", "RECHECK_INCOMPLETE_S", "RETRY_BUSY_S", "Mode", "PickupResult", "Schedule"]
