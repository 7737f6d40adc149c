"""What a person asks for: the arguments of `resolve-escalation`, `archive` and `pause`,
validated by these models on the command line and in the HTTP API (`incidents serve`)
alike, so both refuse the same input with the same words (`parse`)."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import Field, StrictBool, ValidationError

from incidents.models.base import Document

GUIDANCE_MAX = 10_000  # characters: it reaches every later fixer prompt
REASON_MAX = 2_000


class ResolveRequest(Document):
    """A decision on an escalated incident (`resolve-escalation`,
    `POST /api/escalations/{id}/resolve`)."""

    guidance: str = Field(max_length=GUIDANCE_MAX, description="the person's decision")
    requeue: StrictBool = Field(
        default=False, description="back to the inbox at S_INIT with the guidance (else resolved)"
    )
    accept_fix: StrictBool = Field(
        default=False,
        description="accept the fix of an incident escalated for review (`review_fix`): "
        "resolved, recorded as accepted by `by`",
    )
    by: str = Field(
        default="", max_length=200, description="who decides (empty: the user running the command)"
    )


class ArchiveRequest(Document):
    """Close an open incident by hand (`archive`, `POST /api/incidents/{id}/archive`)."""

    bucket: Literal["resolved", "escalated"] = Field(
        description="resolved: fixed; escalated: needs a human"
    )
    reason: str = Field(max_length=REASON_MAX, description="why it is closed")


class PauseRequest(Document):
    """Pause the whole system (`pause`, `POST /api/pause`)."""

    reason: str = Field(max_length=REASON_MAX, description="why everything stops")


class ResumeRequest(Document):
    """Clear the pause (`resume`, `POST /api/resume`): no fields."""


M = TypeVar("M", bound=Document)


def parse(model: type[M], data: Any) -> M:
    """`data` as `model`, or a UsageError naming the first field and what is wrong with it."""
    from incidents.errors import UsageError, explain_validation

    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        field, reason = explain_validation(exc)
        raise UsageError(f"{field}: {reason}" if field else reason) from None
