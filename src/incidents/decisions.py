"""`decisions.json`: the human decisions taken on an incident's escalations.

It lives in the incident's folder and moves with it, so the decisions are part of the
bundle (the mirror's copy is rebuilt from it). Read by the step service (the latest
guidance goes into every later prompt) and by the hand-off's `resolve_escalation`.
Entries that do not validate are kept in the file and passed over when it is read.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from incidents import artifacts, fsutil
from incidents.errors import IncidentsError
from incidents.models import HumanDecision


def _entries(folder: Path) -> list[object]:
    try:
        doc = fsutil.read_json(folder / artifacts.DECISIONS)
    except FileNotFoundError:
        return []
    return list(doc) if isinstance(doc, list) else []


def read_decisions(folder: Path) -> list[HumanDecision]:
    out: list[HumanDecision] = []
    for entry in _entries(folder):
        try:
            out.append(HumanDecision.model_validate(entry))
        except ValidationError:
            continue
    return out


def append_decision(folder: Path, decision: HumanDecision) -> None:
    """Add `decision` to the file, every earlier entry kept as it is."""
    entries = [*_entries(folder), decision.model_dump(mode="json")]
    fsutil.atomic_write_json(folder / artifacts.DECISIONS, entries)


def read_guidance(folder: Path) -> str | None:
    """The latest human guidance given when the incident was requeued (for the prompt)."""
    try:
        taken = read_decisions(folder)
    except IncidentsError:
        return None
    for decision in reversed(taken):
        if decision.decision == "requeue":
            return decision.guidance
    return None


def escalated_at(folder: Path) -> datetime | None:
    """When the incident was last escalated (its quarantine bundle's `metadata.json`)."""
    try:
        when = fsutil.read_json_object(folder / artifacts.METADATA).get("finished_at")
        return datetime.fromisoformat(when) if isinstance(when, str) else None
    except (IncidentsError, OSError, ValueError):
        return None


def taken_since(at: str, since: datetime | None) -> bool:
    """Whether a decision taken `at` was taken on the escalation that began `since` (then
    running the same decision again finishes it instead of recording a second one)."""
    try:
        when = datetime.fromisoformat(at)
    except ValueError:
        return False
    try:
        return since is None or when >= since
    except TypeError:  # a naive timestamp: not ours
        return False
