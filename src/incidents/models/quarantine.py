"""`metadata.json` of an escalated incident's quarantine bundle (seed 001 §3.11)."""

from __future__ import annotations

from pydantic import Field

from incidents.models.base import Document, Timestamp
from incidents.models.report import Verdict
from incidents.vocab import FinalStatus


class QuarantineMetadata(Document):
    """`metadata.json` of a quarantine bundle in `error_archive/escalated/<id>/`."""

    incident_id: str
    run_id: str
    workstream_id: str
    created_at: Timestamp
    finished_at: Timestamp
    final_status: FinalStatus
    reason: str
    last_state: str
    enabled_tiers: list[str]
    tool_versions: dict[str, str | None]
    final_error_counts: dict[str, int]
    target_files: list[str] = Field(default_factory=list)
    escalation_kind: str | None = None
    error_signature: str | None = None
    verdict: Verdict | None = Field(
        default=None, description="the last canonical report, bound to content (not clean)"
    )
