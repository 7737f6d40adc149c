"""Seed 004's plan, attempt and run result documents."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from incidents.models.base import Document, IncidentId, NonEmptyStr, OpenDocument, Timestamp
from incidents.models.report import Verdict
from incidents.vocab import Outcome

Level = Literal["low", "medium", "high"]


class Hypothesis(Document):
    id: NonEmptyStr
    confidence: Level
    reason: NonEmptyStr


class PlanAction(Document):
    id: NonEmptyStr
    title: NonEmptyStr
    priority: Literal["P0", "P1", "P2", "P3"]
    risk: Level
    target_paths: list[str] = Field(default_factory=list)
    verification: list[str] = Field(default_factory=list)


class RegressionLink(Document):
    """A regression's plan: the incident it regresses, and where its fix is recorded."""

    of: IncidentId = Field(description="the resolved incident of its group it regresses")
    count: int = Field(ge=1, description="regressions of its group so far, this one included")
    bucket: str = Field(description="where the earlier incident is now")
    closed_at: str | None = None
    outcome: str | None = Field(default=None, description="how the earlier one closed")
    resolution: str | None = Field(default=None, description="why the earlier one closed")
    verdict: str | None = Field(
        default=None, description="the earlier verdict's run_result.json, relative to the root"
    )
    diff: str | None = Field(
        default=None,
        description="error_plans/<id>/regression.diff: each earlier target from before the "
        "earlier fix to now",
    )
    record: str | None = Field(
        default=None,
        description="the earlier incident's run_result.json (its close record, verdict or "
        "not), relative to the root",
    )
    closed_by_hand: str | None = Field(
        default=None,
        description="when a person archived the earlier incident (no verdict): who, when, why",
    )


class Plan(Document):
    """`error_plans/<id>/plan.json`."""

    incident_id: IncidentId
    generated_at: Timestamp
    summary: NonEmptyStr
    root_cause_hypotheses: list[Hypothesis]
    actions: list[PlanAction]
    verification_commands: list[str]
    done_criteria: list[NonEmptyStr]
    source: str | None = Field(default=None, description="'planner' or the skill that wrote it")
    regression: RegressionLink | None = Field(
        default=None, description="the earlier incident this one regresses (incidents.regressions)"
    )


class Attempt(OpenDocument):
    """`error_runs/<id>/attempt_NN.json`: one fix-and-recheck iteration."""

    incident_id: IncidentId
    iteration: int = Field(ge=1)
    started_at: Timestamp
    finished_at: Timestamp
    actions_applied: list[str]
    verification_commands: list[str]
    verification_passed: bool
    result: NonEmptyStr = Field(description="continue, resolved or escalated")
    error_signature: NonEmptyStr


class RunResult(Document):
    """`error_runs/<id>/run_result.json`, written when the incident closes."""

    incident_id: IncidentId
    final_status: Literal["resolved", "escalated"]
    loops_used: int = Field(ge=0)
    runtime_minutes: float = Field(ge=0)
    same_error_repeats: int = Field(ge=0)
    archived_to: NonEmptyStr
    reason: str | None = None
    finished_at: Timestamp | None = None
    outcome: Outcome | None = Field(
        default=None,
        description="fixed: a fix made the check pass; not_reproduced: it passed with no "
        "change to any target (flaky: nobody is credited, nobody paged); "
        "changed_before_check: the targets changed before the first check; recovered: a "
        "failure that clears by itself (or by a person's act) is gone, no fix claimed; "
        "escalated",
    )
    preexisting: list[str] = Field(
        default_factory=list,
        description="hard findings that did not block the success: in the first baseline "
        "and in files the incident is not about (strict_mode off)",
    )
    verdict: Verdict | None = Field(
        default=None, description="the canonical report the close decided on, bound to content"
    )
    closed_by: str | None = Field(
        default=None,
        description="the user who closed it by hand (`incidents archive`); none when the "
        "escalation machine closed it",
    )
