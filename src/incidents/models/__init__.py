"""Pydantic models of every document; `schemas/` is generated from these (see incidents.schemas)."""

from incidents.models.incident import (
    AuditEntry,
    CaptureContext,
    ClassifiedBy,
    Group,
    GroupDecision,
    HumanDecision,
    Incident,
    SignatureInputs,
)
from incidents.models.pipeline import AIAttempt, ErrorPipelineContext
from incidents.models.plan import Attempt, Hypothesis, Plan, PlanAction, RunResult
from incidents.models.quarantine import QuarantineMetadata
from incidents.models.report import ErrorReport, Finding, InfraFailure, ReportSummary, ToolRun
from incidents.models.requests import (
    ArchiveRequest,
    PauseRequest,
    ResolveRequest,
    ResumeRequest,
)

__all__ = [
    "AIAttempt",
    "ArchiveRequest",
    "Attempt",
    "AuditEntry",
    "CaptureContext",
    "ClassifiedBy",
    "ErrorPipelineContext",
    "ErrorReport",
    "Finding",
    "Hypothesis",
    "Group",
    "GroupDecision",
    "HumanDecision",
    "Incident",
    "PauseRequest",
    "ResolveRequest",
    "ResumeRequest",
    "InfraFailure",
    "Plan",
    "PlanAction",
    "QuarantineMetadata",
    "ReportSummary",
    "RunResult",
    "SignatureInputs",
    "ToolRun",
]
