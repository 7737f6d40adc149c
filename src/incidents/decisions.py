"""`decisions.json`: the human decisions taken on an incident's escalations.

It lives in the incident's folder and moves with it, so the decisions are part of the
bundle (the mirror's copy is rebuilt from it). Read by the step service (the latest
guidance goes into every later prompt) and by the hand-off's `resolve_escalation`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from incidents import artifacts, fsutil
from incidents.errors import IncidentsError


def read_decisions(folder: Path) -> list[dict[str, Any]]:
    try:
        doc = fsutil.read_json(folder / artifacts.DECISIONS)
    except FileNotFoundError:
        return []
    return [d for d in doc if isinstance(d, dict)] if isinstance(doc, list) else []


def write_decisions(folder: Path, decisions: list[dict[str, Any]]) -> None:
    fsutil.atomic_write_json(folder / artifacts.DECISIONS, decisions)


def read_guidance(folder: Path) -> str | None:
    """The latest human guidance given when the incident was requeued (for the prompt)."""
    try:
        decisions = read_decisions(folder)
    except IncidentsError:
        return None
    for decision in reversed(decisions):
        if decision.get("decision") == "requeue" and isinstance(decision.get("guidance"), str):
            return str(decision["guidance"])
    return None


def escalated_at(folder: Path) -> datetime | None:
    """When the incident was last escalated (its quarantine bundle's `metadata.json`)."""
    try:
        when = fsutil.read_json_object(folder / artifacts.METADATA).get("finished_at")
        return datetime.fromisoformat(when) if isinstance(when, str) else None
    except (IncidentsError, OSError, ValueError):
        return None


def taken_since(at: Any, since: datetime | None) -> bool:
    """Whether a decision taken `at` was taken on the escalation that began `since` (then
    running the same decision again finishes it instead of recording a second one)."""
    try:
        when = datetime.fromisoformat(at) if isinstance(at, str) else None
    except ValueError:
        return False
    try:
        return when is not None and (since is None or when >= since)
    except TypeError:  # a naive timestamp: not ours
        return False
