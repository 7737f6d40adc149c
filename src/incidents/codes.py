"""The vocabularies capture records, as StrEnums: a failure's class (seed 003) and its
error code (seed 002). Stdlib only: the capture path imports this module alone, not
`incidents.vocab` (which re-exports both): each StrEnum costs ~0.1 ms to create.
"""

from __future__ import annotations

from enum import StrEnum


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
