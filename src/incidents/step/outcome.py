"""What one tick did (seed 000 §4.6: old -> new, report written, AI action required)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class StepOutcome:
    incident_id: str
    old_state: str
    new_state: str
    action: str
    reason: str
    report_written: str | None = None
    ai_action_required: bool = False
    terminal: bool = False
    waiting: bool = False
    not_before: datetime | None = None
    archived_to: str | None = None
    idle: bool = False  # nothing was done (waiting, not yet due, already closed)

    def line(self) -> str:
        parts = [f"{self.incident_id}: {self.old_state} -> {self.new_state} ({self.action})"]
        parts.append(f"report: {self.report_written or 'none'}")
        parts.append(f"AI action required: {'yes' if self.ai_action_required else 'no'}")
        if self.not_before is not None:
            parts.append(f"not before {self.not_before.isoformat()}")
        if self.archived_to:
            parts.append(f"archived to {self.archived_to}")
        return "; ".join(parts)

    @classmethod
    def closed(cls, incident_id: str, where: str) -> StepOutcome:
        """Nothing to do: the incident is already in an archive bucket."""
        return cls(
            incident_id, where, where, "NONE", f"already closed ({where})", terminal=True, idle=True
        )
