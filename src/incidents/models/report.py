"""The normalized error report of seed 000 §4.3 with seed 001 §2's summary fields."""

from __future__ import annotations

from pydantic import Field

from incidents.models.base import Document, Timestamp
from incidents.vocab import Category, Severity


class Finding(Document):
    """One issue found by one tool."""

    tool: str
    path: str
    line: int | None = None
    column: int | None = None
    code: str | None = None
    category: Category
    severity: Severity
    message: str
    hard: bool = Field(description="blocks success whatever strict_mode says")


class ReportSummary(Document):
    total_issues: int = Field(ge=0)
    issues_by_tool: dict[str, int]
    issues_by_category: dict[str, int]
    hard_error_count: int = Field(ge=0)
    style_error_count: int = Field(ge=0)
    security_issue_count: int = Field(ge=0)
    error_categories_present: list[str]
    has_hard_fail: bool
    style_only: bool = Field(description="there are issues and every one is style/format/import")


class ToolRun(Document):
    tool: str
    argv: list[str]
    exit_code: int | None
    duration_s: float = Field(ge=0)
    version: str | None = None
    files: int = Field(ge=0, description="how many target files this run covered")
    cached: bool = False
    tests: list[str] = Field(
        default_factory=list,
        description="a test runner's selection: the test files it ran, then the test ids the "
        "failure's log names (each of which must have run and passed for a clean report)",
    )
    own_tests: list[str] | None = Field(
        default=None,
        description="the test files of `tests` selected through a target (a target that is "
        "a test, a test that imports a target's module or is named after it, the file of a "
        "test the failure names); the rest came from [checks] test_paths. None in older "
        "reports: every file of `tests`",
    )


class InfraFailure(Document):
    """A tool that could not give an answer: missing, crashed, timed out, unreadable output."""

    tool: str
    argv: list[str]
    exit_code: int | None
    reason: str
    stderr_tail: str = ""


class Judged(Document):
    """What a report's verdict rests on: the content of every file it judged and the
    tools that judged them. A verdict is good only while these files are unchanged."""

    files: dict[str, str] = Field(
        default_factory=dict,
        description="path -> sha256 of each file judged: the targets, the test files run, the "
        "check config files read (pyproject.toml, ruff.toml, conftest.py, ... up the tree) and "
        "files in the workdir a verification command names; relative to the workdir when "
        "inside it, absolute otherwise",
    )
    absent: list[str] = Field(
        default_factory=list,
        description="check config files the tools looked for and did not find (one that "
        "appears since would change the verdict)",
    )
    tools: dict[str, str | None] = Field(
        default_factory=dict, description="tool -> its version (None: not known)"
    )
    tests: list[str] = Field(default_factory=list, description="the tests the test runners ran")
    frozen: dict[str, str] = Field(
        default_factory=dict,
        description="test file -> sha256 of the text the test runners ran in its place: the "
        "test as the first baseline check kept it (the specification as captured)",
    )
    commands: list[str] = Field(
        default_factory=list,
        description="verification commands run (the tests a command runs cannot be known)",
    )


class Verdict(Judged):
    """The canonical report an incident's end was decided on, bound to content
    (run_result.json, a quarantine's metadata.json): audited by `incidents verify-archive`."""

    report: str = Field(description="the label of the report decided on: 0, 0b, 1, 2, 3, ...")
    workdir: str | None = Field(default=None, description="where relative paths are")
    contained: bool | None = Field(
        default=None,
        description="every AI fixer ran in a sandbox (None: no AI fixer ran)",
    )


class ErrorReport(Document):
    """What one canonical check run found. Every FSM decision is made on one of these."""

    attempt_number: int = Field(ge=0)
    ai_agent: str = "none"
    run_id: str
    workstream_id: str
    label: str = Field(default="0", description="seed file label: 0, 0b, 1, 2, 3, 4, ...")
    generated_at: Timestamp | None = None
    mechanical_fix_applied: bool = False
    issues: list[Finding]
    summary: ReportSummary
    tool_runs: list[ToolRun] = Field(default_factory=list)
    infra_failures: list[InfraFailure] = Field(default_factory=list)
    judged: Judged | None = Field(
        default=None, description="the files and tools this report's findings rest on"
    )
