"""`[watch]` in incidents.toml: how the watcher daemon polls, waits and rejects."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from incidents.config_section import Section


class WatchSettings(Section):
    workers: int = Field(default=1, ge=1, le=64, description="worker processes (--workers)")
    poll_s: float = Field(
        default=5.0, gt=0, le=3600, description="full rescan of the inbox (events are hints)"
    )
    stable_s: float = Field(
        default=2.0, ge=0, description="a hand-copied folder must be unchanged this long"
    )
    reject_grace_s: float = Field(
        default=300.0, ge=0, description="an incomplete inbox folder goes to error_rejected/"
    )
    staging_grace_s: float = Field(
        default=3600.0, ge=0, description="staging leftovers older than this are set aside"
    )
    max_ticks: int = Field(
        default=50, ge=1, le=1000, description="ticks per pickup before yielding the incident"
    )
    leases: Literal["file", "postgres"] = Field(
        default="file",
        description="where incident leases live: files under .state/leases, or rows of the "
        "PostgreSQL mirror ([mirror] url) for watchers of several hosts over one inbox on a "
        "network filesystem",
    )
    poison_after: int = Field(
        default=3, ge=1, le=100, description="crash-recoveries before an incident is quarantined"
    )
