"""Suppressions a fix added (pure): the text before and after -> what was added.

A fixer can make a check pass without fixing anything: a `# noqa` on the failing line, a
skipped test, a module that exits 0 while pytest imports it, a config that ignores the
rule. Each such change is a kind (`KINDS`) an operator may accept with `[policy]
allow_suppressions`; every other one becomes a hard `tamper` finding.

Comments are read with `tokenize` (a `# noqa` inside a string is no comment) and compared
line by line along a diff, so a suppression that was there before, or stays on a line the
fix edited, is not new, while one moved to another line is. Code is read with `ast`, with
import aliases resolved (`import pytest as p; @p.mark.skip`, `from os import _exit`,
`__import__("os")._exit`). Tests are compared by name: deleted, renamed, shadowed by a
second definition or hollowed out (`pass`, `...`, a docstring, an early `return`, a body
that swallows its own failure) is a removed test.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from incidents.checks import tamper_types
from incidents.checks.tamper_code import code_marks, removed_tests
from incidents.checks.tamper_names import Mark
from incidents.checks.tamper_runner import is_test_file
from incidents.models.report import Finding
from incidents.vocab import Category, Severity

KINDS: dict[str, str] = {
    "noqa": "ruff/flake8 comments: `# noqa`, `# noqa: E501`, `# ruff: noqa`, `# flake8: noqa`, "
    "`# isort: skip`",
    "type-ignore": "`# type: ignore`, `# type: ignore[code]`, `# mypy: ...`, `@no_type_check`",
    "pyright-ignore": "`# pyright: ignore`, `# pyright: basic`, `# pyre-ignore`",
    "pragma-no-cover": "`# pragma: no cover`, `# pragma: no branch`",
    "nosec": "bandit's `# nosec`",
    "fmt-skip": "`# fmt: off`, `# fmt: skip`",
    "test-skip": "`pytest.mark.skip`/`skipif`/`xfail` (decorators, `pytestmark`, `marks=`), "
    "`pytest.skip()`, `pytest.xfail()`, `pytest.importorskip()`, `unittest.skip*`, "
    "`expectedFailure`, `SkipTest`, `self.skipTest()`, `__test__`, a skip marker added at run "
    "time, `parametrize` with no parameter sets; Pester's `-Skip`, `-Pending`, `Set-ItResult "
    "-Skipped`",
    "exit": "leaving the process while the module is imported (`sys.exit()`, `exit()`, "
    "`raise SystemExit`), or anywhere: `os._exit`, `os.abort`, `os.kill`, `os.exec*`, "
    '`pytest.exit`, however reached (`vars(os)["_ex" + "it"]`, `os.__dict__`, `getattr`), '
    "and a member of `os`/`sys`/`signal`/`builtins`/`atexit` reached by a computed name; in "
    "PowerShell `exit`, `[Environment]::Exit()`",
    "test-removed": "a test function deleted, renamed, shadowed or emptied (its body "
    "`pass`, `...`, a docstring, an early `return`, or a `try` that swallows its failure), "
    "or one that lost all its assertions; a Pester `It` deleted or renamed",
    "unreadable": "a target the fix made impossible to compare: over 4 MiB, or no longer a "
    "regular file",
    "ps-suppress": "PSScriptAnalyzer's `[Diagnostics.CodeAnalysis.SuppressMessageAttribute(...)]`",
    "runner-patch": "code that patches the test runner: writes to `pytest`, `_pytest`, "
    "`unittest`, `pluggy` or `builtins` (assignment, `setattr`), to `sys.modules`, a "
    "`TestCase` overriding `run`, `exec`/`eval`/`compile`, imports of computed names, frame or "
    "`gc` introspection, `ctypes`; in a non-test file any use of `_pytest`/`pluggy` or a "
    "`pytest_*` hook; and, at run time, the pytest guard finding the runner's functions "
    "replaced",
    "process-hook": "in a target that is not a test file: an `atexit` handler that writes, "
    "moves or removes files, runs a program, exits or is not defined in the file (or any, in "
    "a file that looks for or imports its test runner); `signal.signal()`/`alarm()`/`setitimer()` run "
    "while the module is imported; `sys.excepthook`, `sys.unraisablehook` or "
    "`threading.excepthook` replaced; `sys.settrace()`/`setprofile()`, "
    "`threading.settrace()`/`setprofile()`; any `faulthandler` call",
    "test-aware": "in a target that is not a test file: code that asks whether it runs under "
    "a test (a string naming pytest, `unittest` or nose beside `sys.modules`, `sys.argv`, "
    '`os.environ`, `os.getenv()` or `find_spec()`: `"pytest" in sys.modules`, '
    "`PYTEST_CURRENT_TEST`), a `try: import pytest`, a class whose `__eq__` returns a "
    "constant true (`__ne__` a constant false), `unittest.mock.ANY`",
    "assert-weakened": "in a test file: an assertion that cannot fail added or made so "
    '(`assert True`, `assert <x> or True`, `assert (x, "msg")`, `assert x == x`, `assert not '
    "False`, `self.assertTrue(1)`, `self.assertEqual(x, x)`)",
    "type-weakened": "a name bound under `if TYPE_CHECKING:` that the same block also binds at "
    "run time (a stub over the real definition), `cast(Any, ...)`, a variable annotated "
    "`Any`, and, per function by "
    "qualified name, a return or parameter annotation removed or changed to `Any`",
    "check-config": "a file a check tool reads its configuration from created, changed or "
    "removed (`pyproject.toml`, `ruff.toml`, `setup.cfg`, `mypy.ini`, `pytest.ini`, "
    "`tox.ini`, `conftest.py`, ... in the targets' folders and every folder above them)",
}

ADVICE = "a suppression is not a fix: undo it and fix the cause"
_ADVICE = {
    "test-removed": "a removed test is not a fix: restore it and fix the code it tests",
    "check-config": "a changed check config is not a fix: put it back and fix the cause",
    "runner-patch": "a patched test runner is not a fix: remove that code and fix the cause",
    "assert-weakened": "an assertion that cannot fail is not a test: restore what it checked",
    "type-weakened": "a weakened type is not a fix: restore the annotation and fix the types",
    "test-aware": "code that behaves differently under a test is not a fix: remove it and "
    "fix the cause",
    "unreadable": "a target that cannot be compared is not a fix: keep it a regular file "
    "under 4 MiB",
}

_COMMENTS = (
    ("noqa", re.compile(r"noqa|\b(?:ruff|flake8|isort)\s*:", re.I)),
    ("type-ignore", re.compile(r"\btype\s*:\s*ignore|\bmypy\s*:", re.I)),
    ("pyright-ignore", re.compile(r"\bpyright\s*:|\bpyre-(?:ignore|fixme)", re.I)),
    ("pragma-no-cover", re.compile(r"pragma\s*(?::\s*)?no\s*(?:cover|branch)", re.I)),
    ("nosec", re.compile(r"\bnosec\b", re.I)),
    ("fmt-skip", re.compile(r"\b(?:fmt|yapf)\s*:\s*(?:off|skip|disable)", re.I)),
)


@dataclass(frozen=True)
class Added:
    """One suppression a change added: its kind (`KINDS`), where, and what it is."""

    kind: str
    path: str
    line: int | None
    what: str


def python_added(path: str, before: str | None, after: str | None) -> list[Added]:
    """The suppressions in `after` that `before` did not have (`None`: no such file)."""
    if after is None:
        after = ""  # a deleted file: its tests are gone
    old_text, new_text = _lines_of(before or ""), _lines_of(after)
    old, new = old_text.split("\n"), new_text.split("\n")
    found = _new_marks(old, new, _comment_marks(old_text), _comment_marks(new_text))
    new_tree = _parse(new_text)
    if new_tree is not None:
        old_tree = _parse(old_text) if before is not None else ast.Module(body=[], type_ignores=[])
        after_marks = code_marks(new_tree, path)
        if old_tree is not None:
            found += _new_marks(old, new, code_marks(old_tree, path), after_marks)
        else:  # the code did not parse before the fix: a line it already had is not new
            had = {line.strip() for line in old}
            found += [m for m in after_marks if new[m.line - 1].strip() not in had]
        found += removed_tests(old_tree, new_tree, old_text if old_tree is None else None)
        if old_tree is not None:
            found += tamper_types.weakened(old_tree, new_tree, is_test_file(path))
    found.sort(key=lambda m: (m.line, m.kind, m.what))
    return [Added(m.kind, path, m.line, m.what) for m in found]


# PowerShell, read line by line: PSScriptAnalyzer's suppression attribute, Pester's skips,
# a script that exits; each compared along the same diff as Python's comments
_POWERSHELL = (
    ("ps-suppress", re.compile(r"SuppressMessage(?:Attribute)?\s*\(", re.I)),
    (
        "test-skip",
        re.compile(r"\s-(?:Skip|Pending)\b|Set-ItResult\s+-(?:Skipped|Pending|Inconclusive)", re.I),
    ),
    (
        "exit",
        re.compile(
            r"^\s*exit\b|\[(?:System\.)?Environment\]::Exit\s*\(|Stop-Process\b.*\$PID\b", re.I
        ),
    ),
)
_PESTER_TEST = re.compile(r"^\s*It\s+(['\"])(.+?)\1", re.I | re.M)


def powershell_added(path: str, before: str | None, after: str | None) -> list[Added]:
    """The suppressions in a PowerShell file's `after` that `before` did not have."""
    old_text, new_text = _lines_of(before or ""), _lines_of(after or "")
    old, new = old_text.split("\n"), new_text.split("\n")
    found = _new_marks(old, new, _line_marks(old), _line_marks(new))
    kept = set(_PESTER_TEST.findall(new_text))
    found += [
        Mark(1, "test-removed", f"removed:{name}", f"Pester test {name!r} deleted or renamed")
        for name in sorted({n for _, n in _PESTER_TEST.findall(old_text)} - {n for _, n in kept})
    ]
    found.sort(key=lambda m: (m.line, m.kind, m.what))
    return [Added(m.kind, path, m.line, m.what) for m in found]


def _line_marks(lines: list[str]) -> list[Mark]:
    marks = []
    for n, line in enumerate(lines, 1):
        for kind, pattern in _POWERSHELL:
            match = pattern.search(line)
            if match:
                text = " ".join(line[match.start() :].split()).lower()
                marks.append(Mark(n, kind, f"{kind}:{text}", f"added `{line.strip()[:120]}`"))
    return marks


def config_changed(path: str, before: str | None, after: str | None) -> Added | None:
    """A check config that is not what it was (`None`: absent; else its text or digest)."""
    if before == after:
        return None
    if before is None:
        how = "created"
    elif after is None:
        how = "removed"
    else:
        how = "changed"
    lines = [
        d[2:].strip()
        for d in difflib.ndiff((before or "").splitlines(), (after or "").splitlines())
        if d.startswith("+ ") and d[2:].strip() and "\0" not in d
    ]
    shown = f" (added: {' | '.join(lines[:3])[:200]})" if lines else ""
    return Added("check-config", path, None, f"check config {how}{shown}")


def to_findings(added: Iterable[Added], allowed: Collection[str] = ()) -> list[Finding]:
    """Hard `tamper` findings for the added suppressions whose kind is not allowed."""
    return [
        Finding(
            tool="tamper", path=a.path, line=a.line, column=None, code=a.kind,
            category=Category.TAMPER, severity=Severity.ERROR, hard=True,
            message=f"{a.what} ({a.kind}): {_ADVICE.get(a.kind, ADVICE)}",
        )  # fmt: skip
        for a in added
        if a.kind not in allowed
    ]


# -- comparing marks along a diff ---------------------------------------------------------


def _lines_of(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _take(counter: Counter[str], key: str) -> bool:
    if counter[key] > 0:
        counter[key] -= 1
        return True
    return False


def _new_marks(
    old: list[str], new: list[str], old_marks: list[Mark], new_marks: list[Mark]
) -> list[Mark]:
    """The marks of `new` that the aligned block of `old` does not have."""
    if not new_marks:
        return []
    by_line_old: defaultdict[int, list[Mark]] = defaultdict(list)
    by_line_new: defaultdict[int, list[Mark]] = defaultdict(list)
    for m in old_marks:
        by_line_old[m.line].append(m)
    for m in new_marks:
        by_line_new[m.line].append(m)
    out: list[Mark] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for _, i1, i2, j1, j2 in matcher.get_opcodes():
        kept = Counter(m.key for i in range(i1 + 1, i2 + 1) for m in by_line_old[i])
        out += [m for j in range(j1 + 1, j2 + 1) for m in by_line_new[j] if not _take(kept, m.key)]
    return out


def _comment_marks(text: str) -> list[Mark]:
    marks = []
    for line, comment in _comments(text):
        for kind, pattern in _COMMENTS:
            match = pattern.search(comment)
            if match:
                directive = "".join(comment[match.start() :].split()).lower()
                marks.append(Mark(line, kind, f"{kind}:{directive}", f"added `{comment.strip()}`"))
    return marks


def _comments(text: str) -> list[tuple[int, str]]:
    try:
        return [
            (tok.start[0], tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):  # not Python: every `#` may start one
        return [(n, line[line.index("#") :]) for n, line in enumerate(text.split("\n"), 1)
                if "#" in line]  # fmt: skip


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
