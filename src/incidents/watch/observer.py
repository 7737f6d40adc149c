"""What wakes the watcher's loop: a self-pipe, and a watchdog observer that writes to it.

Filesystem events are hints only (the inbox is also listed every `poll_s`): the observer
passes on the name of what appeared in the inbox or in `.state/dirty/` and when, and the
loop, asleep in `select` on the pipe and its workers, wakes to queue it. Signal handlers
poke the same pipe.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Any

from incidents.layout import Root

MOVE_PAIRING_S = 0.02  # watchdog's hold on a move's first half (its default: 0.5 s)


class Wakeup:
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


def observe(root: Root, wakeup: Wakeup) -> Any:
    """Start a watchdog observer on the inbox and `.state/dirty/` that pushes to `wakeup`."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer
    from watchdog.observers.inotify_move_event_grouper import InotifyMoveEventGrouper

    # its emitter logs an error on a normal stop ("called when the thread is inactive")
    logging.getLogger("watchdog").setLevel(logging.CRITICAL)
    # watchdog holds every IN_MOVED_FROM for 0.5 s to pair it with its IN_MOVED_TO, and
    # its queue is FIFO: each archive (a move out of the inbox) would hold back the next
    # bundle's arrival by up to 0.5 s. Both halves of a rename are read from the kernel
    # in one batch, so a short hold still pairs them.
    InotifyMoveEventGrouper.delay = MOVE_PAIRING_S

    inbox, dirty = str(root.inbox), str(root.state / "dirty")

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


__all__ = ["Wakeup", "observe"]
