"""A report's findings and their summary: a tool's raw finding as a `Finding` (category,
hardness and severity from its profile), and the counts seed 001's report carries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from incidents.checks.parsers import RawFinding
from incidents.checks.profiles import ToolProfile
from incidents.models.report import ErrorReport, Finding, ReportSummary
from incidents.vocab import HARD_CATEGORIES, Category, Severity


def summarize(findings: Sequence[Finding]) -> ReportSummary:
    hard = sum(1 for f in findings if f.hard)
    by_category = Counter(f.category.value for f in findings)
    return ReportSummary(
        total_issues=len(findings),
        issues_by_tool=dict(sorted(Counter(f.tool for f in findings).items())),
        issues_by_category=dict(sorted(by_category.items())),
        hard_error_count=hard,
        style_error_count=len(findings) - hard,
        security_issue_count=by_category.get(Category.SECURITY.value, 0),
        error_categories_present=sorted(by_category),
        has_hard_fail=hard > 0,
        style_only=bool(findings) and hard == 0,
    )


def is_blocking(report: ErrorReport, strict: bool) -> bool:
    """Seed 001: hard findings always block; in strict mode any finding does."""
    return report.summary.has_hard_fail or (strict and report.summary.total_issues > 0)


def to_finding(profile: ToolProfile, raw: RawFinding) -> Finding:
    category = raw.category or profile.category_of(raw.code)
    hard = category in HARD_CATEGORIES or profile.is_hard_code(raw.code)
    severity = raw.severity or (Severity.ERROR if hard else Severity.WARNING)
    return Finding(tool=profile.name, path=raw.path, line=raw.line, column=raw.column,
                   code=raw.code, category=category, severity=severity,
                   message=raw.message, hard=hard)  # fmt: skip
