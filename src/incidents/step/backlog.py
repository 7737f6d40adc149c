"""The mirror's side of a pickup: what its committed ticks still owe the mirror.

The ticks of one pickup reach the mirror in one transaction: at the pickup's end, at the
close, before a fixer runs, while a check's command runs, or once the backlog is older
than `MIRROR_LAG_S`. What a failed write did not deliver stays for the next one; the
mirror is derivable, so a failure never stops the machine.
"""

from __future__ import annotations

import time

from incidents import mirror
from incidents.layout import Root
from incidents.models.report import ReportSummary

# how far the mirror may fall behind the ticks of one pickup before it is written anyway
MIRROR_LAG_S = 0.5


class Backlog:
    def __init__(self, root: Root, incident_id: str) -> None:
        self.root, self.id = root, incident_id
        self.events: list[mirror.Event] = []
        self.reports: list[tuple[str, ReportSummary | None]] = []  # (label, its summary)
        self.state: mirror.Context | None = None  # the context last committed
        self.synced_at = time.monotonic()

    def add(
        self,
        events: list[mirror.Event],
        report: tuple[str, ReportSummary | None] | None,
        state: mirror.Context | None,
    ) -> None:
        """A committed tick's events, check report and (unless its close syncs) context."""
        self.events += events
        if report is not None:
            self.reports.append(report)
        if state is not None:
            self.state = state

    @property
    def due(self) -> bool:
        return time.monotonic() - self.synced_at >= MIRROR_LAG_S

    def flush(self, current: list[mirror.Event] | None = None) -> None:
        """Write the committed ticks that are not in the mirror yet (see `sync`)."""
        if self.state is not None:
            self.sync(self.state, current)

    def sync(self, state: mirror.Context | None, current: list[mirror.Event] | None = None) -> None:
        """One transaction: the workstream's context, the incident's row, the reports and
        events owed, then `current` (the events of the tick in progress), emptied once
        they are written."""
        door = mirror.best_effort(self.root, kept=True)
        with door as conn:
            if conn is not None:
                events = [*self.events, *(current or [])]
                reports = [
                    (label, summary.model_dump(mode="json") if summary else None)
                    for label, summary in self.reports
                ]
                mirror.sync(conn, self.root, self.id, state, reports=reports, events=events)
        if not door.written:  # what was not written stays for the next sync
            return
        self.events, self.reports = [], []
        if current is not None:
            current.clear()
        self.state, self.synced_at = None, time.monotonic()
