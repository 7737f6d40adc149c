"""This host's note that the shared mirror was unreachable (`.state/degraded.json`),
readable without the fleet's machinery: `status` shows it on every run."""

from __future__ import annotations

from dataclasses import dataclass

from incidents import fsutil
from incidents.errors import IncidentsError
from incidents.layout import Root

DEGRADED = "degraded.json"


@dataclass(frozen=True)
class Degraded:
    since: float
    reason: str


def degraded(root: Root) -> Degraded | None:
    """Whether this host last found the shared mirror unreachable (and since when)."""
    try:
        doc = fsutil.read_json_object(root.state / DEGRADED)
        return Degraded(float(doc["since"]), str(doc["reason"]))
    except FileNotFoundError:
        return None
    except (IncidentsError, KeyError, ValueError, TypeError):
        return Degraded(0.0, "degraded.json unreadable")
