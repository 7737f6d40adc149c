"""The mirror's side of a pickup: what its committed ticks still owe the mirror.

A tick's events and step attempts are in the incident's `events.jsonl` before its commit
(`incidents.eventlog`); the mirror reads them from there. The ticks of one pickup reach
the mirror in one transaction: at the pickup's end, at the close, before a fixer runs,
while a check's command runs, or once the backlog is older than `MIRROR_LAG_S`. What a
failed write did not deliver is read from the file by the next one (or by `reindex`);
the mirror is derivable, so a failure never stops the machine.
"""

from __future__ import annotations

import time

from incidents import mirror
from incidents.layout import Root

# how far the mirror may fall behind the ticks of one pickup before it is written anyway
MIRROR_LAG_S = 0.5


class Backlog:
    def __init__(self, root: Root, incident_id: str) -> None:
        self.root, self.id = root, incident_id
        self.state: mirror.Context | None = None  # the context last committed
        self.synced_at = time.monotonic()

    def add(self, state: mirror.Context | None) -> None:
        """A committed tick's context (unless its close syncs)."""
        if state is not None:
            self.state = state

    @property
    def due(self) -> bool:
        return time.monotonic() - self.synced_at >= MIRROR_LAG_S

    def flush(self) -> None:
        """Write the committed ticks that are not in the mirror yet (see `sync`)."""
        if self.state is not None:
            self.sync(self.state)

    def sync(self, state: mirror.Context | None) -> None:
        """One transaction: the workstream's context, the incident's row, and the lines of
        its events.jsonl not mirrored yet."""
        door = mirror.best_effort(self.root, kept=True, incident=self.id)
        with door as conn:
            if conn is not None:
                mirror.sync(conn, self.root, self.id, state)
        if door.written:  # else the next sync reads the same state and lines again
            self.state, self.synced_at = None, time.monotonic()
