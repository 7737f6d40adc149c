"""The global pause flag (seed 003's global escalation threshold).

`.state/paused.json` under the reports root: while it stands, step and watch start no
new work, and no incident is handed out to an agent or claimed (`refuse_new_work`);
capture keeps accepting incidents. A human removes it with `incidents resume`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

from incidents import clock, fsutil
from incidents.errors import IncidentsError, Paused
from incidents.layout import Root
from incidents.redact import redact


@dataclass(frozen=True)
class PauseInfo:
    reason: str
    since: float
    by: str  # "threshold" or "human"

    @property
    def since_iso(self) -> str:
        return clock.iso_at(self.since)


def _path(root: Root) -> Path:
    return root.state / "paused.json"


def current(root: Root) -> PauseInfo | None:
    try:
        doc = fsutil.read_json_object(_path(root))
        return PauseInfo(str(doc["reason"]), float(doc["since"]), str(doc.get("by", "human")))
    except FileNotFoundError:
        return None
    except (IncidentsError, KeyError, ValueError, TypeError):
        # a damaged flag still pauses: failing open would restart a runaway loop
        return PauseInfo("pause flag unreadable; run `incidents resume` to clear it", 0.0, "?")


def refuse_new_work(root: Root, agent: bool = False) -> None:
    """Raise `Paused` (exit 1) while the flag stands: a tick, a hand-out or a claim is new
    work, which nothing starts while the system is paused. The message is for its reader:
    a person may resume; an `agent` (`next`, `claim`) is told to wait, since lifting a
    pause is a person's decision (the skills forbid it)."""
    info = current(root)
    if info is None:
        return
    said = f"paused since {info.since_iso}: {info.reason}"
    if agent:
        wait = "stop and try again later (do not resume it yourself)"
        raise Paused(f"{said}; no work is handed out until a person resumes: {wait}")
    raise Paused(f"{said} (once the cause is dealt with, a person runs `incidents resume`)")


def pause(root: Root, reason: str, by: str = "human", now: float | None = None) -> PauseInfo:
    standing = _path(root).exists()
    info = PauseInfo(redact(reason), time.time() if now is None else now, by)
    fsutil.atomic_write_json(_path(root), asdict(info))
    # a person is told once per pause (the outbox, delivered later), by the host it began
    # on: another host's pause adopted here (`fleet`, by "fleet:HOST") was told there
    if not standing and not by.startswith("fleet:"):
        from incidents import notify

        notify.paused(root, info.reason, info.since, by, lambda: _since(root))
    return info


def _since(root: Root) -> float | None:
    info = current(root)
    return info.since if info is not None else None


def resume(root: Root) -> PauseInfo | None:
    """Clear the flag; returns what it said (None when there was none)."""
    info = current(root)
    if info is not None:
        previous = _path(root).with_name(f"paused.{int(time.time())}.cleared.json")
        _path(root).rename(previous)  # kept as history, never deleted
    return info
