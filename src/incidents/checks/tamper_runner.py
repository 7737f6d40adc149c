"""Code that patches the test runner (pure, for `checks.tamper_code`): kind `runner-patch`.

A fix can make every test pass without touching a test: a target that, when imported,
replaces `_pytest.python.Function.runtest`, overrides `unittest.TestCase.run`, swaps a
module in `sys.modules` or a builtin. The static rules here find such code in what a fix
added; the pytest profile's guard plugin (`checks.pytest_guard`) catches at run time what
reading the code cannot (it compares the runner's functions before and after the run).

Found, in any target: an assignment, `setattr`/`delattr` or `__dict__` write on anything
reached through `pytest`, `_pytest`, `unittest`, `pluggy` or `builtins`; a write to
`sys.modules` or `__builtins__`; a `TestCase` subclass that overrides how a test is run
(`run`, `__call__`, `debug`, `_callTestMethod`); code whose target cannot be read:
`exec`, `eval`, `compile`, an import of a computed name, frame and object-graph
introspection (`sys._getframe`, `inspect.currentframe`, `gc.get_objects`,
`gc.get_referrers`), `ctypes`. In a target that is not a test file or conftest.py, also
any reference to pytest's internals (`_pytest`, `pluggy`) and a `pytest_*` hook function.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Mapping

from incidents.checks.tamper_names import const_str

_RUNNER_ROOTS = frozenset({"pytest", "_pytest", "unittest", "pluggy", "builtins", "__builtins__"})
_INTERNALS = frozenset({"_pytest", "pluggy"})
_RUN_METHODS = frozenset({"run", "__call__", "debug", "_callTestMethod", "_callSetUp"})
_DYNAMIC = frozenset({
    "exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile",
    "sys._getframe", "inspect.currentframe", "inspect.stack", "gc.get_objects",
    "gc.get_referrers", "gc.get_referents",
})  # fmt: skip
_IMPORTERS = frozenset({"__import__", "builtins.__import__", "importlib.import_module"})
_ATTR_WRITERS = frozenset({"setattr", "delattr", "builtins.setattr", "builtins.delattr",
                           "object.__setattr__", "type.__setattr__"})  # fmt: skip
TEST_NAMES = ("test_*.py", "*_test.py", "conftest.py")

Emit = Callable[[ast.AST, str, str], None]  # (node, key, what)


def is_test_file(path: str) -> bool:
    from fnmatch import fnmatch

    name = os.path.basename(path)
    return any(fnmatch(name, pattern) for pattern in TEST_NAMES)


def _root(dotted: str) -> str:
    return dotted.split(".")[0]


def check_node(
    node: ast.AST, dotted: Callable[[ast.expr], str], test_file: bool, emit: Emit
) -> None:
    """The runner-patch rules for one node (the caller walks the tree and resolves names)."""
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        for target in targets:
            _check_target(target, dotted, emit)
    elif isinstance(node, ast.Call):
        _check_call(node, dotted, emit)
    elif isinstance(node, ast.ClassDef):
        bases = [dotted(b) for b in node.bases]
        if any(b.split(".")[-1] in ("TestCase", "IsolatedAsyncioTestCase") for b in bases):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    item.name in _RUN_METHODS
                ):
                    emit(item, f"override:{node.name}.{item.name}",
                         f"added `{node.name}.{item.name}`, overriding how a TestCase runs")  # fmt: skip
    elif (
        not test_file
        and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("pytest_")
        and node.col_offset == 0
    ):
        what = f"added the pytest hook `{node.name}` in a non-test file"
        emit(node, f"hook:{node.name}", what)
    if not test_file and isinstance(node, ast.Import | ast.ImportFrom):
        names = (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        for name in names:
            if _root(name) in _INTERNALS:
                emit(node, f"import:{name}", f"added `import {name}` (pytest's internals) in a non-test file")  # fmt: skip


def _check_target(target: ast.expr, dotted: Callable[[ast.expr], str], emit: Emit) -> None:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            _check_target(element, dotted, emit)
        return
    if isinstance(target, ast.Attribute):
        owner = dotted(target.value)
        if _root(owner) in _RUNNER_ROOTS:
            emit(
                target,
                f"set:{owner}.{target.attr}",
                f"added an assignment to `{owner}.{target.attr}`",
            )
    elif isinstance(target, ast.Subscript):
        owner = dotted(target.value)
        if (
            owner in ("sys.modules", "__builtins__")
            or owner.endswith(".__dict__")
            and (_root(owner) in _RUNNER_ROOTS)
        ):
            emit(target, f"item:{owner}", f"added a write to `{owner}[...]`")


def _check_call(node: ast.Call, dotted: Callable[[ast.expr], str], emit: Emit) -> None:
    func = dotted(node.func)
    if func in _ATTR_WRITERS and node.args:
        owner = dotted(node.args[0])
        if _root(owner) in _RUNNER_ROOTS:
            attr = const_str(node.args[1]) if len(node.args) > 1 else None
            emit(node, f"{func}:{owner}.{attr}", f"added `{func}({owner}, {attr!r}, ...)`")
    elif func in _IMPORTERS and node.args and const_str(node.args[0]) is None:
        emit(node, f"dynamic-import:{func}", f"added `{func}()` of a computed name")
    elif func in _DYNAMIC or _root(func) == "ctypes":
        emit(node, f"dynamic:{func}", f"added `{func}()`: what it runs or reaches cannot be read")
    elif func.startswith("sys.modules.") and func.rsplit(".", 1)[-1] in (
        "__setitem__", "update", "setdefault", "pop", "__delitem__",
    ):  # fmt: skip
        emit(node, f"item:{func}", f"added `{func}()`")


def internals_reference(dotted: str, test_file: bool) -> bool:
    """A reference to pytest's internals where none belongs (a non-test file)."""
    return not test_file and _root(dotted) in _INTERNALS


def scan(tree: ast.Module, names: Mapping[str, str], dotted_of: Callable[[ast.expr, Mapping[str, str]], str],
         test_file: bool, emit: Emit) -> None:  # fmt: skip
    """Every runner-patch rule over the whole module."""
    for node in ast.walk(tree):
        check_node(node, lambda e: dotted_of(e, names), test_file, emit)
