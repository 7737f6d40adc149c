"""The server's two loops and its subscribers.

- The catch-up loop (every `catch_up_s`) folds what captures left in `.state/dirty/` into
  the mirror, as `status` does: capture never opens the database, so without it a fresh
  capture would reach neither the page nor the stream.
- The poller (every `poll_s`, or at once when `nudge()`d after a catch-up or an action)
  asks SQLite whether anything was committed (`data_version`); when so it reads the events
  after the last one it saw, in commit order, encodes each once and hands it to every
  subscriber's queue.

A subscriber that cannot keep up (its queue full) is closed, not waited for: its client
reconnects with `Last-Event-ID` and reads what it missed from the mirror (`stream`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from incidents import mirror
from incidents.layout import Root
from incidents.mirror import feed
from incidents.serve import events
from incidents.serve.reader import Reader

log = logging.getLogger("incidents.serve")
QUEUE_MAX = 2000
CLOSE = events.Encoded(-1, b"")  # a subscriber's queue holds this last when it is closed


@dataclass(eq=False)
class Subscriber:
    queue: asyncio.Queue[events.Encoded] = field(
        default_factory=lambda: asyncio.Queue(maxsize=QUEUE_MAX)
    )
    start: int = 0  # the last event id the hub had delivered when it subscribed
    mark: str = ""


@dataclass
class Health:
    caught_up_at: float | None = None
    catch_up_error: str | None = None
    polled_at: float | None = None


class Hub:
    def __init__(self, root: Root, *, poll_s: float = 0.05, catch_up_s: float = 0.5) -> None:
        self.root, self.poll_s, self.catch_up_s = root, poll_s, catch_up_s
        self.reader = Reader(root, "poll")
        self._catcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="serve-catch-up")
        self.subscribers: set[Subscriber] = set()
        self.last_id = 0
        self.mark = ""
        self._version: int | None = None
        self._polls = 0
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.health = Health()
        self.loop: asyncio.AbstractEventLoop | None = None  # set by start

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        await self.catch_up()
        generation, self.last_id = await self.reader.run(_position)
        self.mark = events.generation_mark(generation)
        self._tasks = [
            asyncio.create_task(self._poll_loop(), name="serve-poll"),
            asyncio.create_task(self._catch_up_loop(), name="serve-catch-up"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for sub in list(self.subscribers):
            self._close(sub)
        self.reader.close()
        self._catcher.shutdown(wait=True)

    def close_streams(self) -> None:
        """End every event stream now (the server is stopping): each client's response
        finishes cleanly, instead of being cancelled when the graceful wait runs out."""
        for sub in list(self.subscribers):
            self._close(sub)

    # -- subscribers -----------------------------------------------------------------

    def subscribe(self) -> Subscriber:
        sub = Subscriber(start=self.last_id, mark=self.mark)
        self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def _close(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)
        while True:  # make room for the close mark
            try:
                sub.queue.put_nowait(CLOSE)
                return
            except asyncio.QueueFull:
                sub.queue.get_nowait()

    def _publish(self, item: events.Encoded) -> None:
        for sub in list(self.subscribers):
            try:
                sub.queue.put_nowait(item)
            except asyncio.QueueFull:
                log.warning(
                    "an event stream client fell behind; closed (it resumes from its last id)"
                )
                self._close(sub)

    @property
    def position(self) -> str:
        """The id of the last event handed to subscribers (`GEN-N`)."""
        return events.event_id(self.mark, self.last_id)

    def nudge(self) -> None:
        """Poll now (something was just committed)."""
        self._wake.set()

    # -- the loops -------------------------------------------------------------------

    async def catch_up(self) -> None:
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._catcher, self._catch_up_once)
        if result is not None and (result.updated or result.removed):
            self.nudge()

    def _catch_up_once(self) -> mirror.CatchUp | None:
        def report(exc: BaseException) -> None:
            if self.health.catch_up_error != str(exc):
                log.warning("the mirror could not catch up: %s", exc)
            self.health.catch_up_error = str(exc)

        result = mirror.catch_up_root(self.root, report)
        if result is not None:
            self.health.caught_up_at, self.health.catch_up_error = time.time(), None
        return result

    async def _catch_up_loop(self) -> None:
        while True:
            await asyncio.sleep(self.catch_up_s)
            await self.catch_up()

    async def _poll_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_s)
            self._wake.clear()
            try:
                await self.poll()
            except Exception as exc:  # the mirror is derivable: the stream waits for it
                log.warning("reading new events failed: %s", exc)
                await asyncio.sleep(min(1.0, self.poll_s * 10))

    async def poll(self) -> None:
        self._polls += 1
        # data_version belongs to one connection: a reopened one (the file replaced) may
        # repeat a value, so every 20th poll reads whatever data_version says
        known = None if self._polls % 20 == 0 else self._version
        seen = await self.reader.run(_changes, known, self.last_id)
        self.health.polled_at = time.time()
        if seen is None:
            return
        self._version = seen.version
        mark = events.generation_mark(seen.generation)
        # rebuilt: the ids are numbered again, what a client holds no longer names a place
        # in the feed; or the last events were deleted (an incident set aside; their ids are
        # not given again): what a client shows names an incident that is gone. Reload both
        if mark != self.mark or seen.tail < self.last_id:
            self.mark, self.last_id = mark, seen.tail
            self._publish(events.rebuilt(mark, seen.tail))
            return
        for event in seen.events:
            self._publish(events.encode(event, mark))
            self.last_id = event.id


def _position(conn: Any) -> tuple[str, int]:
    return feed.generation(conn), feed.tail_id(conn)


@dataclass(frozen=True)
class Seen:
    """What one poll read, from one snapshot of the mirror."""

    version: int
    generation: str
    tail: int
    events: list[feed.FeedEvent]


def _changes(conn: Any, version: int | None, after: int) -> Seen | None:
    """The events committed after `after`, with the rebuild's mark and the last id, read in
    one transaction (a rebuild between two reads would mix numberings); None when nothing
    was committed since `version`."""
    now = feed.data_version(conn)
    if now == version:
        return None
    conn.execute("BEGIN")  # a read transaction: one snapshot (WAL)
    try:
        generation, tail = _position(conn)
        found: list[feed.FeedEvent] = []
        while True:
            batch = feed.events_after(conn, found[-1].id if found else after, 1000)
            found += batch
            if len(batch) < 1000:
                return Seen(now, generation, tail, found)
    finally:
        conn.execute("COMMIT")
