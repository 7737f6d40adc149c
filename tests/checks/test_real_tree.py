"""On a real package with injected errors, our per-tool counts equal the tools' own."""

from __future__ import annotations

from pathlib import Path

from incidents.checks.engine import run_error_pipeline
from incidents.checks.settings import ChecksSettings
from incidents.models.pipeline import ErrorPipelineContext
from tests.checks.realtree import direct_counts, make_tree

TOOLS = ["ruff", "ruff-format", "mypy", "pytest", "bandit"]


def test_counts_equal_direct_runs(
    tmp_path: Path, ctx: ErrorPipelineContext, shared_cache: Path
) -> None:
    tree = tmp_path / "tree"
    files = make_tree(tree)
    settings = ChecksSettings(cache_dir=str(shared_cache))
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tree, tools=TOOLS)
    assert report.infra_failures == []
    direct = direct_counts(tree, files, str(tmp_path / "mypy-direct"), TOOLS)
    ours = {t: report.summary.issues_by_tool.get(t, 0) for t in TOOLS}
    assert ours == direct
    assert all(n > 0 for n in direct.values()), direct  # each tool has something to find
    assert set(report.summary.error_categories_present) >= {
        "import", "format", "type", "test", "security", "lint",
    }  # fmt: skip
    injected = {(f.path, f.code) for f in report.issues}
    assert {
        ("pluggy/_inject_import.py", "F401"),
        ("pluggy/_inject_format.py", "unformatted"),
        ("pluggy/_inject_type.py", "return-value"),
        ("pluggy/_inject_security.py", "B602"),
        ("pluggy/_hooks.py", "F841"),
        ("tests/test_inject.py", "test-failure"),
    } <= injected


def test_syntax_error_counts_equal_direct_runs(
    tmp_path: Path, ctx: ErrorPipelineContext, shared_cache: Path
) -> None:
    tree = tmp_path / "tree"
    files = make_tree(tree, syntax_error=True)
    settings = ChecksSettings(cache_dir=str(shared_cache))
    tools = ["ruff", "mypy"]
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tree, tools=tools)
    assert report.infra_failures == []
    direct = direct_counts(tree, files, str(tmp_path / "mypy-direct"), tools)
    assert {t: report.summary.issues_by_tool.get(t, 0) for t in tools} == direct
    syntax = {f.tool for f in report.issues if f.category.value == "syntax"}
    assert syntax == {"ruff", "mypy"}
