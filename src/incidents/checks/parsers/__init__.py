"""Pure parsers: a tool's captured output in, raw findings out. No I/O, no subprocess.

A parser raises `ParseError` when the output is not what the tool prints on success or
on findings (a crash, a usage error, a missing report): the engine records that as an
infrastructure failure, never as "0 issues".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from incidents.vocab import Category, Severity


class ParseError(ValueError):
    """The output cannot be read as findings; the message says why."""


@dataclass(frozen=True)
class ToolOutput:
    stdout: str
    stderr: str
    exit_code: int | None
    report: str | None = None  # the {report} file's text, when the profile has one
    # a test runner's selection: files that must yield a test, test ids that must pass
    selected: tuple[str, ...] = ()
    guarded: bool = False  # pytest ran with our guard plugin: its verdict must be in the report


@dataclass(frozen=True)
class RawFinding:
    path: str
    line: int | None
    column: int | None
    code: str | None
    message: str
    severity: Severity | None = None
    category: Category | None = None  # a parser's hint; else the profile's mapping

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "message": self.message,
            "severity": self.severity.value if self.severity else None,
            "category": self.category.value if self.category else None,
        }

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> RawFinding:
        line, column, code = doc.get("line"), doc.get("column"), doc.get("code")
        sev, cat = doc.get("severity"), doc.get("category")
        return cls(
            path=str(doc["path"]),
            line=line if isinstance(line, int) else None,
            column=column if isinstance(column, int) else None,
            code=code if isinstance(code, str) else None,
            message=str(doc["message"]),
            severity=Severity(sev) if isinstance(sev, str) else None,
            category=Category(cat) if isinstance(cat, str) else None,
        )


Parser = Callable[[ToolOutput], list[RawFinding]]


def tail(text: str, limit: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def _registry() -> dict[str, Parser]:
    from incidents.checks.parsers import bandit, black, junit, mypy, nunit, pssa, ruff

    return {
        "ruff-json": ruff.parse_check,
        "ruff-format-json": ruff.parse_format,
        "black-text": black.parse,
        "mypy-json": mypy.parse,
        "junit-xml": junit.parse,
        "bandit-json": bandit.parse,
        "pssa-json": pssa.parse,
        "nunit-xml": nunit.parse,
        "pester-json": nunit.parse_pester_json,
    }


PARSERS: dict[str, Parser] = _registry()
