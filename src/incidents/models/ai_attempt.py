"""Seed 001's AI attempt log entry, with what the fixer reported of its API: the error it
gave up on and what the run spent."""

from __future__ import annotations

from pydantic import Field

from incidents.models.base import Document, Timestamp


class AIAttempt(Document):
    """Seed 001's AI attempt log entry (`ai_attempts.json` holds a list of these)."""

    attempt_number: int = Field(ge=1)
    agent: str
    input_error_report_id: str
    changed_files: list[str] = Field(default_factory=list)
    notes: str = ""
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None
    exit_code: int | None = None
    violations: list[str] = Field(
        default_factory=list, description="files changed outside the targets (not accepted)"
    )
    prompt_file: str | None = None
    handoff: bool = Field(default=False, description="submitted by an outside agent")
    step: int | None = Field(default=None, description="the FSM step that made this attempt")
    contained: bool | None = Field(
        default=None,
        description="true: the fixer ran under bubblewrap (read-only filesystem but its "
        "workdir, private PID namespace); false: without it, writes outside were only "
        "detected and put back; null: not recorded (a handoff, or an older attempt)",
    )
    sandbox: str | None = Field(
        default=None, description="what contained it: 'bwrap <version>' or 'detection'"
    )
    error_code: str | None = Field(
        default=None,
        description="the API failure the fixer itself reported (its own output, read in its "
        "format): RATE_LIMIT, AUTH, OVERLOADED, TIMEOUT; null: none",
    )
    model: str | None = Field(default=None, description="the model the fixer said it used")
    input_tokens: int | None = Field(default=None, ge=0, description="tokens sent, as reported")
    output_tokens: int | None = Field(default=None, ge=0, description="tokens received")
    cost_usd: float | None = Field(
        default=None, ge=0, description="what the run cost, when the fixer reports it"
    )
