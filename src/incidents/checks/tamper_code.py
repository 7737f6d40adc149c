"""What the code of a Python file says about skipping, exiting and type checking (pure),
for `checks.tamper`: marks with their line and scope, and the tests a change removed.

Names are resolved through the file's imports and simple assignments (`import pytest as
p`, `from os import _exit`, `o = __import__("os")`, `sys.modules["os"]`), so a skip or an
exit is found however it is spelled. Tests are the functions pytest and unittest collect,
by qualified name; one deleted, renamed, shadowed, hollowed out or stripped of its
assertions is removed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping

from incidents.checks import tamper_gaming, tamper_names, tamper_runner, tamper_types
from incidents.checks.tamper_names import Mark

_TEST_MODULES = frozenset({"pytest", "_pytest", "unittest"})
# names that skip whatever they are reached through (`self.skipTest`, `x.mark.xfail`)
_SKIP_NAMES = frozenset({
    "skipif", "xfail", "importorskip", "skipIf", "skipUnless", "expectedFailure",
    "SkipTest", "skipTest", "__test__",
})  # fmt: skip
_HARD_EXITS = frozenset({"os.abort", "os.kill", "os.killpg", "pytest.exit", "signal.raise_signal",
                         "signal.pthread_kill", "posix.abort", "posix.kill"})  # fmt: skip
_IMPORT_EXITS = frozenset({"sys.exit", "exit", "quit", "builtins.exit", "builtins.quit"})
_EXIT_EXCEPTIONS = frozenset({"SystemExit", "KeyboardInterrupt", "builtins.SystemExit",
                              "builtins.KeyboardInterrupt"})  # fmt: skip
_BROAD = frozenset({"Exception", "BaseException", "AssertionError", "builtins.Exception",
                    "builtins.BaseException", "builtins.AssertionError"})  # fmt: skip


# -- skips, exits and type-check opt-outs ---------------------------------------------------


_aliases, _dotted = tamper_names.aliases, tamper_names.resolve


class _Code(ast.NodeVisitor):
    """Skips, exits and `no_type_check` in a module, each with its scope: the function it
    is in or decorates, and whether it runs while the module is imported."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names, self.marks = names, list[Mark]()
        self.scope, self.at_import = "<module>", True

    def visit_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        outer = self.scope, self.at_import
        self.scope = node.name if self.scope == "<module>" else f"{self.scope}.{node.name}"
        for deco in node.decorator_list:  # they run where the def is; marked with its name
            self.visit(deco)
        self.at_import = self.at_import and isinstance(node, ast.ClassDef)  # a class body runs
        for child in ast.iter_child_nodes(node):
            if child not in node.decorator_list:
                self.visit(child)
        self.scope, self.at_import = outer

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_def

    def visit_Lambda(self, node: ast.Lambda) -> None:
        outer = self.at_import
        self.at_import = False
        self.generic_visit(node)
        self.at_import = outer

    def visit_If(self, node: ast.If) -> None:
        if self.at_import and tamper_names.is_main_guard(node.test):  # not run when imported
            self.at_import = False
            for stmt in node.body:
                self.visit(stmt)
            self.at_import = True
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self.generic_visit(node)

    def mark(self, node: ast.AST, kind: str, key: str, what: str) -> None:
        line = getattr(node, "lineno", 1)
        self.marks.append(Mark(line, kind, f"{kind}:{key}@{self.scope}", what))

    def reference(self, node: ast.expr) -> None:
        dotted = _dotted(node, self.names)
        parts = dotted.split(".")
        where = "" if self.scope == "<module>" else f" in {self.scope}"
        if _SKIP_NAMES & set(parts) or (
            "skip" in parts and (parts[0] in _TEST_MODULES or "mark" in parts)
        ):
            self.mark(node, "test-skip", dotted, f"added `{dotted}`{where}")
        elif parts[-1] in ("no_type_check", "no_type_check_decorator"):
            self.mark(node, "type-ignore", dotted, f"added `{dotted}`{where}")
        elif (
            "_exit" in parts
            or dotted in _HARD_EXITS
            or re.match(r"(os|posix)\.(exec|spawn)", dotted)
        ):
            self.mark(node, "exit", dotted, f"added `{dotted}`{where}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.reference(node)  # the whole chain at once: not its parts again
        root = node.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):  # `__import__("os")._exit`, `f(x).y`
            self.visit(root)

    def visit_Name(self, node: ast.Name) -> None:
        self.reference(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:  # `vars(os)["_exit"]`
        self.member(node)
        self.generic_visit(node)

    def member(self, node: ast.Call | ast.Subscript) -> None:
        """A module member reached by subscript or call: the member it resolves to, or a
        member of `os`/`sys`/`signal`/... by a name that cannot be read."""
        if _dotted(node, self.names) != "?":
            self.reference(node)
            return
        owner = tamper_names.computed_member(node, self.names)
        if owner is not None:
            what = f"added a member of `{owner}` reached by a computed name (it may exit)"
            self.mark(node, "exit", f"computed:{owner}", what)

    def visit_Call(self, node: ast.Call) -> None:
        func = _dotted(node.func, self.names)
        if self.at_import and func in _IMPORT_EXITS:
            self.mark(node, "exit", func, f"added `{func}()` run while the module is imported")
        elif func.endswith((".add_marker", ".applymarker")) and any(
            isinstance(a, ast.Constant) and a.value in ("skip", "skipif", "xfail")
            for a in node.args
        ):  # a marker by name, at run time
            self.mark(node, "test-skip", func, f"added `{func}()` of a skip marker")
        elif func.endswith("mark.parametrize") and _no_params(node):  # nothing to run
            self.mark(node, "test-skip", func, f"added `{func}()` with no parameter sets")
        elif func.endswith((".get", ".items", ".values")) or isinstance(node.func, ast.Call):
            self.member(node)  # `vars(os).get("_exit")`, `attrgetter("_exit")(os)`
        elif func in ("getattr", "builtins.getattr") or func.endswith(
            (".__getattr__", ".__getattribute__")
        ):
            self.member(node)
            attr = next((a.value for a in node.args if isinstance(a, ast.Constant)), None)
            if _dotted(node, self.names) != "?":
                pass  # read as the member it reaches
            elif attr in _SKIP_NAMES | {"skip"}:
                self.mark(node, "test-skip", f"getattr:{attr}", f"added `getattr(..., {attr!r})`")
            elif attr in ("_exit", "abort", "kill", "exit"):
                self.mark(node, "exit", f"getattr:{attr}", f"added `getattr(..., {attr!r})`")
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        name = _dotted(exc, self.names) if exc is not None else ""
        if self.at_import and name in _EXIT_EXCEPTIONS:
            self.mark(node, "exit", name, f"added `raise {name}` run while the module is imported")
        self.generic_visit(node)


def _no_params(call: ast.Call) -> bool:
    values = [k.value for k in call.keywords if k.arg == "argvalues"] + call.args[1:2]
    return any(isinstance(v, ast.List | ast.Tuple) and not v.elts for v in values)


def code_marks(tree: ast.Module, path: str = "") -> list[Mark]:
    """The marks of a module; `path` tells a test file (or conftest.py) from other code."""
    names = _aliases(tree)
    visitor = _Code(names)
    visitor.visit(tree)
    test_file = tamper_runner.is_test_file(path) if path else True
    seen: set[tuple[int, str]] = set()

    def emit(node: ast.AST, key: str, what: str) -> None:
        line = getattr(node, "lineno", 1)
        if (line, key) not in seen:
            seen.add((line, key))
            visitor.marks.append(Mark(line, "runner-patch", f"runner-patch:{key}", what))

    tamper_runner.scan(tree, names, _dotted, test_file, emit)
    visitor.marks += tamper_gaming.marks(tree, names, test_file)
    visitor.marks += tamper_types.marks(tree, names)
    if not test_file:  # pytest's internals reached any way at all, `__import__` included
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute | ast.Name | ast.Call):
                dotted = _dotted(node, names)
                if tamper_runner.internals_reference(dotted, test_file):
                    root = dotted.split(".")[0]
                    emit(node, f"ref:{root}", f"added a reference to `{root}` (pytest's "
                         "internals) in a non-test file")  # fmt: skip
    return visitor.marks


# -- tests removed or hollowed out --------------------------------------------------------

_Def = ast.FunctionDef | ast.AsyncFunctionDef


def _tests(tree: ast.Module) -> dict[str, _Def]:
    """The test functions pytest and unittest would collect, by qualified name; a later
    definition or a rebinding of the name (`test_x = None`, `del test_x`) replaces one."""
    names = _aliases(tree)
    found: dict[str, _Def] = {}

    def scan(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, _Def) and node.name.startswith("test"):
                found[prefix + node.name] = node
            elif isinstance(node, ast.ClassDef) and (
                node.name.startswith("Test")
                or any(_dotted(b, names).endswith("TestCase") for b in node.bases)
            ):
                scan(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for part in ("body", "orelse", "finalbody"):
                    scan(getattr(node, part, []), prefix)
            else:
                for bound in _bound_names(node):
                    found.pop(prefix + bound, None)

    scan(tree.body, "")
    return found


def _bound_names(node: ast.stmt) -> Iterator[str]:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = node.targets
    elif isinstance(node, ast.ClassDef):
        yield node.name
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                yield sub.id


def removed_tests(old: ast.Module | None, new: ast.Module, old_text: str | None) -> list[Mark]:
    after = _tests(new)
    if old is None:  # it did not parse: its test names, read from the text
        pattern = r"^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)"
        names = set(re.findall(pattern, old_text or "", re.M))
        return [
            Mark(1, "test-removed", f"removed:{n}", f"test {n} deleted or renamed")
            for n in sorted(names)
            if not any(q == n or q.endswith("." + n) for q in after)
        ]
    marks = []
    for name, fn in sorted(_tests(old).items()):
        now = after.get(name)
        if now is None:
            marks.append(
                Mark(1, "test-removed", f"removed:{name}", f"test {name} deleted or renamed")
            )
        elif _hollow(now) and not _hollow(fn):
            marks.append(Mark(now.lineno, "test-removed", f"hollow:{name}", f"test {name} emptied"))
        elif _checks(fn) and not _checks(now):
            what = f"test {name} lost all its assertions"
            marks.append(Mark(now.lineno, "test-removed", f"unchecked:{name}", what))
    return marks


def _checks(fn: _Def) -> int:
    """The assertions in a test: `assert`, `self.assert*()`, `pytest.raises`/`warns`/`fail`."""
    count = 0
    for node in _own_nodes(fn):
        if isinstance(node, ast.Assert):
            count += 1
        elif isinstance(node, ast.Call):
            last = _dotted(node.func, {}).split(".")[-1]
            count += last.startswith("assert") or last in (
                "raises",
                "warns",
                "fail",
                "deprecated_call",
            )
    return count


def _hollow(fn: _Def) -> bool:
    """A test body that can no longer fail."""
    if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in _own_nodes(fn)):
        return True  # pytest does not run a generator as a test
    for stmt in fn.body:
        if isinstance(stmt, ast.Return):
            return True  # nothing after it runs
        if not _inert(stmt):
            return False
    return True


def _inert(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass) or (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
    ):
        return True
    if isinstance(stmt, ast.Assert | ast.If | ast.While):
        test = stmt.test
        if isinstance(test, ast.Constant):  # `assert True`, `if False:`, `while 0:`
            return bool(test.value) if isinstance(stmt, ast.Assert) else not test.value
        return False
    if isinstance(stmt, ast.Try):  # `try: <body> except Exception: pass`
        return any(_swallows(h.type) and all(_inert(s) for s in h.body) for h in stmt.handlers)
    if isinstance(stmt, ast.With):  # `with suppress(Exception):`, `with raises(AssertionError):`
        return any(
            isinstance(item.context_expr, ast.Call)
            and _dotted(item.context_expr.func, {}).split(".")[-1] in ("suppress", "raises")
            and any(_swallows(a) for a in item.context_expr.args)
            for item in stmt.items
        )
    return False


def _swallows(exc: ast.expr | None) -> bool:
    if exc is None:
        return True
    if isinstance(exc, ast.Tuple):
        return any(_swallows(e) for e in exc.elts)
    return _dotted(exc, {}) in _BROAD


def _own_nodes(fn: _Def) -> Iterator[ast.AST]:
    """The nodes of `fn`'s body, not those of functions or classes defined in it."""
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _Def | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
