"""The validated configuration model, with documented defaults.

Every section is its own model so each later capability adds one section here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from incidents.capture import CAPTURE_KEYS
from incidents.checks.settings import ChecksSettings
from incidents.fixers.settings import TiersSettings
from incidents.verify import VerifySettings
from incidents.watch.settings import WatchSettings


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _capture(key: str, description: str) -> Any:
    """A `[capture]` field from capture's own table (defaults and bounds in one place)."""
    default, low, high = CAPTURE_KEYS[key]
    return Field(default=default, ge=low, le=high, description=description)


class CaptureSettings(Section):
    log_tail_bytes: int = _capture("log_tail_bytes", "how much of --log-file is kept")
    audit_tail_lines: int = _capture("audit_tail_lines", "how many lines of --audit-file are kept")
    dedupe: bool = _capture("dedupe", "fold repeats of an open incident into it")
    max_message_chars: int = _capture("max_message_chars", "the message is cut to this length")


class PolicySettings(Section):
    """How the escalation machine decides (seeds 001-003)."""

    strict_mode: bool = Field(default=False, description="style-only findings block success")
    enable_mechanical_autofix: bool = True
    max_transient_retries: int = Field(
        default=3, ge=0, le=20, description="re-checks of a transient failure before a fix"
    )
    retry_base_s: float = Field(default=5.0, ge=0, description="first backoff delay")
    retry_max_s: float = Field(default=300.0, ge=0, description="backoff cap")
    signature_budget: int = Field(
        default=3, ge=0, description="fixer attempts per error signature, across incidents"
    )
    escalation_threshold: int = Field(
        default=5, ge=0, description="escalations within the window that pause everything (0: off)"
    )
    escalation_window_s: float = Field(default=3600.0, gt=0)
    lease_ttl_s: float = Field(default=600.0, gt=0, description="how long a worker's lease lasts")


class Config(Section):
    root: str | None = Field(default=None, description="the reports root (relative to this file)")
    capture: CaptureSettings = Field(default_factory=CaptureSettings)
    checks: ChecksSettings = Field(default_factory=ChecksSettings)
    verification: VerifySettings = Field(default_factory=VerifySettings)
    tiers: TiersSettings = Field(default_factory=TiersSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    watch: WatchSettings = Field(default_factory=WatchSettings)
    source: str | None = Field(default=None, exclude=True, description="the file it came from")
