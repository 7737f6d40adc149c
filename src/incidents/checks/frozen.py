"""The specification as captured: which test files a recheck runs as the first baseline
check kept them, whatever the workdir holds now.

A test file that is a target may be changed by a fix. What it asserts is the
specification, so a recheck runs its captured text against the fixed sources; the
changed file is used only when the failure is in that file itself: its captured text
does not parse (a syntax error), or every line the fix changed lies outside its test
functions (a fixture, a helper or an import the tests use). Either way a changed test
file is shown to a person before the incident is called resolved (`review_fix`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from incidents.checks import tamper_files
from incidents.checks.runtime_review import changed_lines
from incidents.checks.tamper_runner import is_test_file


def frozen_tests(
    baseline: tamper_files.State | None, workdir: Path, targets: Sequence[str]
) -> dict[str, str]:
    """{test file: its captured text} for the test files a recheck must run as captured."""
    if baseline is None:
        return {}
    frozen: dict[str, str] = {}
    for target in targets:
        before = baseline["targets"].get(target)
        if not is_test_file(target) or before is None or before.startswith(tamper_files.OPAQUE):
            continue
        after = tamper_files.contents(workdir / target)
        if after != before and not _own_failure(before, after or ""):
            frozen[target] = before
    return frozen


def _own_failure(before: str, after: str) -> bool:
    """Is the fix in the file's own code rather than in what its tests assert?"""
    try:
        old_tree = ast.parse(before)
    except (SyntaxError, ValueError):
        return True  # it could not run as captured: the fix of the file is the fix
    try:
        new_tree = ast.parse(after)
    except (SyntaxError, ValueError):
        return False
    old_lines, new_lines = changed_lines(before, after)
    return not (old_lines & _test_lines(old_tree)) and not (new_lines & _test_lines(new_tree))


def _test_lines(tree: ast.Module) -> set[int]:
    """The lines of the test functions (`test*` at module level or in a `Test*` class),
    their decorators included."""
    lines: set[int] = set()
    for node in tree.body:
        funcs: list[ast.stmt] = [node]
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            funcs = list(node.body)
        for f in funcs:
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name.startswith("test"):
                first = min([f.lineno, *(d.lineno for d in f.decorator_list)])
                lines.update(range(first, (f.end_lineno or f.lineno) + 1))
    return lines
