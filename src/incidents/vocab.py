"""The closed vocabularies of the seeds, as StrEnums (stdlib only).

`FailureClass` and `ErrorCode`, which capture records, live in `incidents.codes`, which
the capture path imports alone (each StrEnum costs ~0.1 ms to create); they are the
same classes here.
"""

from __future__ import annotations

from enum import StrEnum

from incidents.codes import ErrorCode, FailureClass

__all__ = [
    "HARD_CATEGORIES",
    "Category",
    "ErrorCode",
    "FailureClass",
    "FinalStatus",
    "IncidentStatus",
    "Outcome",
    "Severity",
]


class IncidentStatus(StrEnum):
    """Coarse status of seed 004 (`status.txt`)."""

    NEW = "new"
    PLANNED = "planned"
    RUNNING = "running"
    RESOLVED = "resolved"
    ESCALATED = "escalated"


class Category(StrEnum):
    """What a finding is about; `verification`: a failing command, `tamper`: a suppression added."""

    SYNTAX = "syntax"
    TYPE = "type"
    LINT = "lint"
    FORMAT = "format"
    IMPORT = "import"
    TEST = "test"
    SECURITY = "security"
    VERIFICATION = "verification"
    TAMPER = "tamper"


HARD_CATEGORIES = frozenset(
    {
        Category.SYNTAX,
        Category.TYPE,
        Category.TEST,
        Category.SECURITY,
        Category.VERIFICATION,
        Category.TAMPER,
    }
)


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Outcome(StrEnum):
    """What closed an incident (run_result.json `outcome`, state.json `outcome`): whether
    anyone can claim a fix. `not_reproduced`: the failure was gone with no change to any
    target (flaky, or a fixer that changed nothing); `changed_before_check`: the targets
    changed between the capture and the first check (someone else fixed it);
    `resolved_by_human`: escalated, then resolved by a person (`resolve-escalation`): no
    check found it clean, and no fix is claimed by the machine. `recovered`: a failure
    that clears by itself (transient, or an environment a person mended) is gone: its
    reproduction passes again, or its step succeeded since, or it stayed quiet; no fix is
    credited and nobody is paged."""

    FIXED = "fixed"
    NOT_REPRODUCED = "not_reproduced"
    CHANGED_BEFORE_CHECK = "changed_before_check"
    ESCALATED = "escalated"
    RESOLVED_BY_HUMAN = "resolved_by_human"
    RECOVERED = "recovered"


class FinalStatus(StrEnum):
    """Seed 001's `final_status` of the escalation machine."""

    SUCCESS = "success"
    QUARANTINED = "quarantined"
    INFRA_FAILURE = "infra_failure"
