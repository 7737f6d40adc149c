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
        "changed_before_check: the targets changed before the first check; escalated",
    )
    preexisting: list[str] = Field(
        default_factory=list,
        description="hard findings that did not block the success: in the first baseline "
        "and in files the incident is not about (strict_mode off)",
    )
    verdict: Verdict | None = Field(
        default=None, description="the canonical report the close decided on, bound to content"
    )
