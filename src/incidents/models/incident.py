"""The incident bundle documents of seed 004: incident.json, context.json, audit_tail.jsonl."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from incidents.models.base import IncidentId, NonEmptyStr, OpenDocument, Timestamp
from incidents.vocab import ErrorCode, FailureClass, IncidentStatus


class ClassifiedBy(OpenDocument):
    """How the incident's error code and failure class were decided (`incidents explain`)."""

    rule: str = Field(default="", description="the classifier's rule that decided; '' if none")
    where: str = Field(
        default="none",
        description="the input the rule matched: message, log, exit_code, timed_out or none",
    )
    reason: str = Field(default="", description="the classifier's verdict, in a sentence")
    error_code: ErrorCode | None = Field(default=None, description="the classifier's code")
    failure_class: FailureClass | None = Field(default=None, description="the classifier's class")
    given: list[Literal["failure_class", "error_code"]] = Field(
        default_factory=list,
        description="what the caller gave (--failure-class, --error-code): the incident has "
        "these instead of the classifier's",
    )


class SignatureInputs(OpenDocument):
    """What `error_signature` is made of: `failure_class | step | normalized`."""

    failure_class: FailureClass
    step: NonEmptyStr
    normalized: NonEmptyStr = Field(description="the message, its volatile parts replaced")
    normalization: int = Field(
        ge=1, description="the version of the normalisation rules (incidents.signature)"
    )
    basis: Literal["failure", "message"] = Field(
        default="message",
        description="failure: made of what the output says failed (tests, tool codes and "
        "files, the exception); message: the output said nothing more",
    )
    failure: str | None = Field(
        default=None, description="what failed, as read from the output (basis failure)"
    )


class GroupDecision(OpenDocument):
    """One `incidents group merge|split` decision, in every incident it moved."""

    kind: Literal["merge", "split"]
    at: Timestamp
    by: str = "human"
    reason: str
    from_group: str = Field(alias="from", description="the group it left")
    to_group: str = Field(alias="to", description="the group it joined")


class Group(OpenDocument):
    """incident.json `group`: its group's key and the decisions that made it."""

    key: NonEmptyStr = Field(description="the group key (a signature, or split:<id>)")
    decisions: list[GroupDecision] = Field(default_factory=list)


class Reproduction(OpenDocument):
    """incident.json `reproduction`: the command `incidents run` ran, and whether it was
    kept as the incident's reproduction (a verification command in `verify`)."""

    command: str = Field(description="the command line that failed (secrets redacted)")
    kept: bool = Field(description="it is in `verify`: every check runs it again")
    why: str | None = Field(default=None, description="why it was not kept (None: kept)")


class InferredTarget(OpenDocument):
    """A file the failure's output named, taken as a target (none was given)."""

    path: NonEmptyStr = Field(description="relative to the workdir, as a given target")
    kind: Literal["python", "powershell", "other"] = Field(
        description="python and powershell files are targets; other files are recorded only"
    )
    source: str = Field(alias="from", description="the tool or kind of output that named it")
    log_line: int = Field(ge=0, description="its line in the log read (0: not one line)")
    evidence: str = Field(description="that line of the output (cut)")


class Inferred(OpenDocument):
    """incident.json `inferred`: what capture took from the failure's output."""

    targets: list[InferredTarget] = Field(default_factory=list)
    tests: list[str] = Field(
        default_factory=list, description="the failed tests' node ids pytest printed"
    )


class Incident(OpenDocument):
    """`incident.json`. The first twelve fields are seed 004's required ones."""

    # validated where a bundle is read and passed inward frozen; its writers (capture,
    # status changes) work on the JSON document itself, under the incident's lock
    model_config = ConfigDict(extra="allow", frozen=True)

    incident_id: IncidentId
    status: IncidentStatus
    created_at: Timestamp
    updated_at: Timestamp
    run_id: NonEmptyStr
    year: int = Field(ge=1970, le=9999)
    month: int = Field(ge=1, le=12)
    ym: str = Field(pattern=r"^\d{4}-\d{2}$")
    step: NonEmptyStr
    failure_class: FailureClass
    message: NonEmptyStr
    error_signature: NonEmptyStr
    error_code: ErrorCode | None = None
    exit_code: int | None = None
    occurrences: int = Field(default=1, ge=1, description="captures folded into this incident")
    last_seen: Timestamp | None = None
    python_files: list[str] = Field(default_factory=list, description="target files to check")
    powershell_files: list[str] = Field(default_factory=list)
    verify: list[str] = Field(
        default_factory=list, description="verification commands (argv strings, no shell)"
    )
    workdir: str | None = Field(default=None, description="where checks and commands run")
    target_digests: dict[str, str] = Field(
        default_factory=dict,
        description="target -> sha256 of its bytes when the failure was captured ('missing' "
        "when unreadable): a check that passes with the same bytes saw the failure vanish "
        "without a fix (not reproduced); empty: not recorded",
    )
    resolution: str | None = Field(default=None, description="why it was closed")
    classified_by: ClassifiedBy | None = Field(
        default=None, description="which rule classified it (absent: captured before issue 16)"
    )
    signature_inputs: SignatureInputs | None = Field(
        default=None,
        description="what its signature was made of (absent: made by normalisation rules 1)",
    )
    group: Group | None = Field(
        default=None,
        description="the group a person's decision put it in (`incidents group`); absent: "
        "the group of its error_signature",
    )
    regression_of: IncidentId | None = Field(
        default=None, description="the resolved incident of its group that it regresses"
    )
    inferred: Inferred | None = Field(
        default=None,
        description="targets and tests read from the failure's output, none being given",
    )
    reproduction: Reproduction | None = Field(
        default=None,
        description="`incidents run`: its command as the reproduction, or why it is not one",
    )
    recurrence_of: IncidentId | None = Field(
        default=None,
        description="the resolved incident of its group it follows when that close verified "
        "no fix (flaky, recovered, by hand): linked, not counted as a regression",
    )
    recurrence_after: str | None = Field(
        default=None, description="how that incident closed (its outcome)"
    )
    regression_count: int = Field(
        default=0, ge=0, description="regressions of its group so far, this one included"
    )

    @property
    def group_key(self) -> str:
        """Its group (incidents.grouping): budgets and regressions count per group."""
        return self.group.key if self.group is not None else self.error_signature


class HumanDecision(OpenDocument):
    """One entry of `decisions.json`: a person's decision on an escalated incident."""

    at: NonEmptyStr = Field(description="when it was taken (ISO 8601, UTC)")
    decision: Literal["requeue", "resolved", "accept_fix"]
    guidance: str
    by: str = "human"
    escalation_reason: str | None = Field(default=None, description="why it had escalated")
    signature: str | None = None
    escalated_at: str | None = Field(
        default=None,
        description="when the escalation it decides began (the quarantine bundle's "
        "finished_at): the mirror's escalation record is rebuilt with this time",
    )


class CaptureContext(OpenDocument):
    """`context.json`: what the capturing process knew, plus anything `--context-json` gave."""

    cwd: str | None = None
    host: str | None = None
    pid: int | None = None
    argv: list[str] | None = None
    command: list[str] | None = Field(default=None, description="the argv `incidents run` ran")
    duration_s: float | None = None
    timed_out: bool | None = None


class AuditEntry(OpenDocument):
    """One line of `audit_tail.jsonl`: any JSON object. A line that was not valid JSON is
    kept as `{"raw": "...", "invalid": "reason"}` rather than dropped."""

    raw: str | None = None
    invalid: str | None = None
