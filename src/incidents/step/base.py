"""What every part of a tick shares: its incident, its lease, and how it persists.

`TickBase` holds one incident's tick state (root, config, lease, folders, the events of
the tick in progress, the mirror backlog) and the persistence primitives the actions and
the close build on. `incidents.step.tick.Tick` is the whole tick.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from incidents import eventlog, fsutil, leases, mirror, store
from incidents.config import Config
from incidents.layout import Root
from incidents.models import ErrorPipelineContext, Incident
from incidents.step.backlog import Backlog
from incidents.step.documents import workdir_of, write_state

Clock = Callable[[], datetime]
STALE_PREFIX = "stale-"  # step artifacts set aside in the runs folder, never reused


class TickBase:
    def __init__(
        self, root: Root, cfg: Config, incident_id: str, lease: leases.Lease, clock: Clock
    ) -> None:
        self.root, self.cfg, self.id, self.lease, self.clock = root, cfg, incident_id, lease, clock
        self.folder = root.inbox / incident_id
        self.runs = root.runs_dir(incident_id)
        self.events: list[mirror.Event] = []  # of the tick in progress
        self.report_label: str | None = None
        self.unsynced = False  # a commit whose folder was not fsynced yet (see flush)
        self.runs_unsynced = False  # a report whose folder was not fsynced yet
        self._check_started = False
        self.backlog = Backlog(root, incident_id)

    def persist(
        self, ctx: ErrorPipelineContext, *, durable: bool = True, sync_dir: bool = True
    ) -> None:
        """Commit `state.json`, old-or-new, only while our lease is current (fencing).

        The intent written before an action (`durable=False`) is replaced atomically but
        not fsynced: a killed process leaves it whole, and losing it to a power cut only
        means the action is decided and run again, as after any crash before its commit.
        `sync_dir=False`: the file is fsynced (old-or-new even after a power cut) but the
        folder's fsync waits for `flush`; a power cut before it only takes the incident
        back to an earlier commit, whose steps redo identically (see `tick.JOURNALED`).
        """
        if durable and sync_dir:  # no commit is durable before the lines describing it
            eventlog.sync(self.folder / eventlog.EVENTS)
        with leases.fenced(self.root, self.lease), store.incident_lock(self.root, self.id):
            write_state(self.root, self.folder, ctx, durable=durable, sync_dir=sync_dir)
        if durable:
            self.unsynced = not sync_dir

    def flush(self) -> None:
        """Make this object's commits durable, then show them in the mirror: one fsync of
        the incident's folder for the steps of a pickup that redo identically, done before
        an action that changes the workdir (a fixer may run for minutes) and when the
        pickup ends (the close fsyncs the folder and syncs the mirror itself)."""
        if self.runs_unsynced:  # the reports the commits refer to go first
            fsutil.fsync_dir(self.runs)
            self.runs_unsynced = False
        if self.unsynced and self.folder.is_dir():
            eventlog.sync(self.folder / eventlog.EVENTS)  # with the commits it describes
            fsutil.fsync_dir(self.folder)
        self.unsynced = False
        self.flush_mirror()

    def flush_mirror(self) -> None:
        """Write the committed ticks that are not in the mirror yet."""
        self.backlog.flush()

    def sync_mirror(self, ctx: ErrorPipelineContext | None) -> None:
        """Write everything owed, with `ctx` as the context to show."""
        state = mirror.Context.of(ctx.model_dump(mode="json")) if ctx is not None else None
        self.backlog.sync(state)

    def journal(self, key: str, ctx: ErrorPipelineContext) -> None:
        """Append the events of the step in progress (`self.events`) and its check report's
        step attempt to the incident's events.jsonl, keyed `key` (the same again when a
        step is redone after a crash before its commit: read once). Before the commit."""
        ts = self.clock().isoformat()
        docs = eventlog.events_of(key, ts, self.id, self.events)
        if self.report_label and ctx.run_id:
            last = ctx.last_error_report
            summary = last.summary.model_dump(mode="json") if last else None
            label = self.report_label.removesuffix(".json")
            docs.append(
                eventlog.step_attempt(
                    f"{key}.r", ts, self.id, ctx.run_id, "error_pipeline", label, summary
                )
            )
        # fenced like the commit: a holder whose lease was taken over (stalled past it) must
        # not add its lines to the new holder's log, nor fail on a folder since archived
        with leases.fenced(self.root, self.lease):
            eventlog.append(self.folder / eventlog.EVENTS, docs)
        self.events = []

    def set_status(self, status: str) -> None:
        """Within a step: the folder is fsynced with the step's commit or the pickup's `flush`."""
        with store.incident_lock(self.root, self.id):
            doc = store.read_incident(self.folder)
            if doc["status"] != status:
                store.set_status(self.folder, doc, status, sync_dir=False)

    def check_started(self) -> None:
        """From its first check on an incident is `running`: set once per check, with the
        mirror brought up to date, while the check's first command starts (the worker
        waits for that child anyway), or before the check tools run."""
        if not self._check_started:
            self._check_started = True
            self.set_status("running")
            self.flush_mirror()

    def renew_lease(self, ttl_s: float) -> leases.Lease:
        """Between the ticks of a pickup: the lease, renewed once past half its TTL."""
        self.lease = leases.renew_if_due(self.root, self.lease, ttl_s)
        return self.lease

    def workdir(self, incident: Incident) -> Path:
        return workdir_of(self.root, incident.workdir)

    def artifact(self, name: str) -> Path:
        fsutil.ensure_dir(self.runs)
        return self.runs / name

    def set_aside(self, names: list[str], event: str) -> None:
        """Move `names` out of the runs folder into `stale-<time>/` there (kept, never
        reused as a step's artifact), durably, under the incident's lock, and record
        `event` naming them."""
        if not names:
            return
        stamp = self.clock().strftime("%Y%m%dT%H%M%S.%fZ")
        aside = self.runs / f"{STALE_PREFIX}{stamp}"
        with store.incident_lock(self.root, self.id):
            aside.mkdir(mode=0o700, exist_ok=True)
            for name in sorted(names):
                os.replace(self.runs / name, aside / name)
            fsutil.fsync_dir(aside)
            fsutil.fsync_dir(self.runs)
        self.events.append(
            (event, {"moved": sorted(names)[:50], "count": len(names),
                     "to": str(aside.relative_to(self.root.path))})
        )  # fmt: skip
