"""The closed vocabularies of the seeds, as StrEnums (stdlib only: capture uses them)."""

from __future__ import annotations

from enum import StrEnum


class IncidentStatus(StrEnum):
    """Coarse status of seed 004 (`status.txt`)."""

    NEW = "new"
    PLANNED = "planned"
    RUNNING = "running"
    RESOLVED = "resolved"
    ESCALATED = "escalated"


class FailureClass(StrEnum):
    """Seed 003's classes, plus `unknown` when nothing says which."""

    TRANSIENT = "transient"
    CODE = "code"
    ENV = "env"
    NEVER_RETRY = "never_retry"
    UNKNOWN = "unknown"


class ErrorCode(StrEnum):
    """Seed 002's structured error codes."""

    TIMEOUT = "TIMEOUT"
    RATE_LIMIT = "RATE_LIMIT"
    SYNTAX = "SYNTAX"
    TEST_FAILURE = "TEST_FAILURE"
    LINT_FAILURE = "LINT_FAILURE"
    TASK_FAILED = "TASK_FAILED"
    HOOK_FAILURE = "HOOK_FAILURE"
    UNKNOWN = "UNKNOWN"


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
    check found it clean, and no fix is claimed by the machine."""

    FIXED = "fixed"
    NOT_REPRODUCED = "not_reproduced"
    CHANGED_BEFORE_CHECK = "changed_before_check"
    ESCALATED = "escalated"
    RESOLVED_BY_HUMAN = "resolved_by_human"


class FinalStatus(StrEnum):
    """Seed 001's `final_status` of the escalation machine."""

    SUCCESS = "success"
    QUARANTINED = "quarantined"
    INFRA_FAILURE = "infra_failure"
