"""Shared pydantic configuration for every document model."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, PlainSerializer

# Timestamps keep the seeds' textual form (`2026-02-17T03:00:00+00:00`) on the way out.
Timestamp = Annotated[
    AwareDatetime, PlainSerializer(lambda d: d.isoformat(), return_type=str, when_used="json")
]
NonEmptyStr = Annotated[str, Field(min_length=1)]
IncidentId = Annotated[
    str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$", description="a safe path component")
]


class Document(BaseModel):
    """A document we write ourselves: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=True)


class OpenDocument(BaseModel):
    """A document other programs write too (skills, older versions): unknown keys are kept."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)
