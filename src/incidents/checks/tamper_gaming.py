"""Code that games a check without suppressing anything (pure, for `checks.tamper_code`).

`process-hook`, in a target that is not a test file: an `atexit` handler (or a
`weakref.finalize` callback) that writes, moves or removes files, runs a program, exits,
or is not a function of this file (what it does cannot be read), and any such handler in
a file that looks for or imports its test runner; a `__del__` that does so;
`signal.signal`/`alarm`/`setitimer` while the module is imported; `sys.excepthook`,
`sys.unraisablehook` or `threading.excepthook` replaced; `sys.settrace`/`setprofile`,
`threading.settrace`/`setprofile`; any `faulthandler` call. Such code runs outside the
test: after pytest wrote its report, or instead of the failure it should show.

`test-aware`, in a target that is not a test file: code that asks whether it runs under a
test runner (a string naming pytest, `unittest` or nose next to `sys.modules`,
`sys.argv`, `os.environ`, `os.getenv` or `find_spec`: `"pytest" in sys.modules`,
`os.environ.get("PYTEST_CURRENT_TEST")`), and a class whose `__eq__` returns a constant
true (or `__ne__` a constant false) and `unittest.mock.ANY`: a value equal to anything a
test expects; and a `try: import pytest` (`unittest`, nose) that goes on either way.

`assert-weakened`, in a test file: an assertion that cannot fail (`assert True`, `assert
<x> or True`, `assert (x, "msg")`, `assert x == x`, `assert not False`,
`self.assertTrue(1)`, `self.assertEqual(x, x)`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping

from incidents.checks.tamper_names import Mark, computed_member, const_str, resolve, scoped

# a module, option or variable name, not prose: `"_pytest"`, `"PYTEST_CURRENT_TEST"`
_RUNNER_WORD = re.compile(  # from a name's first character only: linear in the text
    r"(?<![\w.\-/])[\w.\-/]*py\.?test[\w.\-]*|unittest[\w.]*|nose2?", re.I
)
_RUNNER_PROBES = ("sys.modules", "sys.argv", "sys.orig_argv", "os.environ", "os.getenv",
                  "os.environb", "importlib.util.find_spec", "pkgutil.find_loader",
                  "importlib.find_loader", "posix.environ")  # fmt: skip
_PROBE_NAMES = frozenset(p.rsplit(".", 1)[-1] for p in _RUNNER_PROBES)
_EXITS = frozenset({"sys.exit", "exit", "quit", "builtins.exit", "builtins.quit", "os.abort",
                    "os.kill", "os.killpg", "pytest.exit", "signal.raise_signal",
                    "os.system", "posix._exit"})  # fmt: skip
_FILE_CALLS = frozenset({"open", "builtins.open", "io.open", "os.open", "os.remove", "os.unlink",
                         "os.rename", "os.renames", "os.replace", "os.truncate", "os.write",
                         "os.rmdir", "os.removedirs", "os.ftruncate", "os.utime",
                         "os.link", "os.symlink", "os.chmod"})  # fmt: skip
_FILE_METHODS = frozenset({"write_text", "write_bytes", "unlink", "rename", "touch",
                           "rmdir", "open", "truncate", "symlink_to", "hardlink_to", "chmod"})  # fmt: skip
_FILE_MODULES = ("shutil.", "subprocess.", "tempfile.", "os.exec", "os.spawn",
                 "os.posix_spawn", "os.popen", "os._exit")  # fmt: skip
_HOOK_SETS = frozenset({"sys.excepthook", "sys.unraisablehook", "threading.excepthook",
                        "sys.__excepthook__", "sys.breakpointhook"})  # fmt: skip
_HOOK_CALLS = frozenset({"sys.settrace", "sys.setprofile", "threading.settrace",
                         "threading.setprofile", "threading.settrace_all_threads",
                         "threading.setprofile_all_threads", "sys.addaudithook"})  # fmt: skip
_SIGNALS = frozenset({"signal.signal", "signal.alarm", "signal.setitimer", "signal.set_wakeup_fd"})
_Fn = ast.FunctionDef | ast.AsyncFunctionDef


def marks(tree: ast.Module, names: Mapping[str, str], test_file: bool) -> list[Mark]:
    """The process hooks, test-aware code and vacuous assertions of a module."""
    out: list[Mark] = []
    if test_file:
        for node, scope, _ in scoped(tree):
            why = _vacuous_check(node, names)
            if why:
                key = f"assert-weakened:{why}@{scope}"
                out.append(Mark(getattr(node, "lineno", 1), "assert-weakened", key,
                                f"added `{why}`, an assertion that cannot fail"))  # fmt: skip
        return out
    functions: dict[str, _Fn] = {}
    probes = False  # anything a file can ask about its runner with: most files have none
    for node in ast.walk(tree):
        if isinstance(node, _Fn):
            functions.setdefault(node.name, node)
        elif isinstance(node, ast.Attribute | ast.Name):
            probes = probes or (node.attr if isinstance(node, ast.Attribute) else node.id) in (
                _PROBE_NAMES
            )
    aware = _test_aware(tree, names, probes)
    imports = any(v.split(".")[0] in ("pytest", "_pytest") for v in names.values())
    looks = bool(aware) or imports  # a file that looks for or imports its test runner
    out += aware
    for node, scope, at_import in scoped(tree):
        for key, what in _hooks(node, names, functions, at_import, looks):
            line = getattr(node, "lineno", 1)
            out.append(Mark(line, "process-hook", f"process-hook:{key}@{scope}", what))
    return out


# -- process hooks --------------------------------------------------------------------------


def _hooks(
    node: ast.AST, names: Mapping[str, str], functions: Mapping[str, _Fn], at_import: bool,
    aware: bool,
) -> Iterator[tuple[str, str]]:  # fmt: skip
    if isinstance(node, ast.Call):
        func = resolve(node.func, names)
        handler = _registered(func, node)
        if handler is not None:
            why = "in a file that looks for or imports its test runner" if aware else None
            yield from _exit_handler(handler, names, functions, why)
        elif func in _HOOK_CALLS or func.startswith("faulthandler."):
            yield func, f"added `{func}()`, which hooks the process"
        elif func in _SIGNALS and at_import:
            yield func, f"added `{func}()` run while the module is imported"
        elif func in ("setattr", "builtins.setattr") and len(node.args) > 1:
            attr = const_str(node.args[1])
            if f"{resolve(node.args[0], names)}.{attr}" in _HOOK_SETS:
                yield f"set:{attr}", f"added `setattr(..., {attr!r})`, which hooks the process"
    elif isinstance(node, ast.ClassDef):  # a `__del__` runs at shutdown too, after the report
        for item in node.body:
            if isinstance(item, _Fn) and item.name == "__del__":
                does = _touches(item, names, functions, set())
                if does:
                    yield f"del:{node.name}", f"added `{node.name}.__del__`, {does}"
    if isinstance(node, _Fn):
        for deco in node.decorator_list:
            if resolve(deco, names) == "atexit.register":
                why = "in a file that looks for or imports its test runner" if aware else None
                yield from _exit_handler(ast.Name(id=node.name), names, functions, why)
    elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            hook = resolve(target, names)
            if hook in _HOOK_SETS:
                yield f"set:{hook}", f"added an assignment to `{hook}`, which hooks the process"


def _registered(func: str, call: ast.Call) -> ast.expr | None:
    """The handler a call registers to run when the process ends, if it is one."""
    if func == "atexit.register" and call.args:
        return call.args[0]
    if func == "weakref.finalize" and len(call.args) > 1:
        return call.args[1]
    return None


def _exit_handler(
    handler: ast.expr, names: Mapping[str, str], functions: Mapping[str, _Fn], why: str | None
) -> Iterator[tuple[str, str]]:
    label = ast.unparse(handler)[:60]
    body: ast.AST | None = None
    if isinstance(handler, ast.Lambda):
        body = handler.body
    elif isinstance(handler, ast.Name) and handler.id in functions:
        body = functions[handler.id]
    if body is None:
        yield f"atexit:{label}", f"added the exit handler `{label}`, whose code is not in this file"
        return
    does = why or _touches(body, names, functions, set())
    if does:
        yield f"atexit:{label}", f"added the exit handler `{label}`, {does}"


def _touches(
    body: ast.AST, names: Mapping[str, str], functions: Mapping[str, _Fn], seen: set[str]
) -> str | None:
    """What a handler does that no handler may: write files, run programs, exit (also
    through the functions of this file it calls)."""
    for node in ast.walk(body):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if resolve(exc, names).split(".")[-1] in ("SystemExit", "KeyboardInterrupt"):
                return "which exits"
        if isinstance(node, ast.Call | ast.Subscript) and computed_member(node, names):
            return "which reaches `os`/`sys` by a computed name"
        if not isinstance(node, ast.Call):
            continue
        func = resolve(node.func, names)
        last = func.rsplit(".", 1)[-1]
        if func in _EXITS or "_exit" in func.split("."):
            return f"which exits (`{func}`)"
        if func in _FILE_CALLS or func.startswith(_FILE_MODULES) or last in _FILE_METHODS:
            return f"which changes files or runs programs (`{func}`)"
        if (
            isinstance(node.func, ast.Name)
            and node.func.id in functions
            and node.func.id not in seen
        ):
            seen.add(node.func.id)
            inner = _touches(functions[node.func.id], names, functions, seen)
            if inner:
                return inner
    return None


# -- code that knows it is tested -----------------------------------------------------------


def _test_aware(tree: ast.Module, names: Mapping[str, str], probes: bool) -> list[Mark]:
    """`probes`: the file names something of `_RUNNER_PROBES` (read fully only then)."""
    out: list[Mark] = []
    seen: set[tuple[int, str]] = set()
    for node, scope, _ in scoped(tree):
        if probes and isinstance(node, ast.Compare | ast.Call | ast.Subscript):
            word = next((s for s in _strings(node) if _RUNNER_WORD.fullmatch(s)), None)
            probe = next((p for p in _probes(node, names)), None) if word else None
            if word and probe and (node.lineno, word) not in seen:
                seen.add((node.lineno, word))
                what = f"added code that asks whether it runs under a test ({word!r} in `{probe}`)"
                out.append(Mark(node.lineno, "test-aware", f"test-aware:{word}@{scope}", what))
        elif isinstance(node, ast.ClassDef):
            out += _equal_to_anything(node, scope)
        elif isinstance(node, ast.Try) and _probing_import(node):
            what = "added a `try: import` of a test runner: code that asks whether it is tested"
            out.append(Mark(node.lineno, "test-aware", f"test-aware:try-import@{scope}", what))
        elif isinstance(node, ast.Attribute | ast.Name) and resolve(node, names) in _ANYTHING:
            what = f"added `{resolve(node, names)}`, a value equal to anything, in a non-test file"
            out.append(Mark(node.lineno, "test-aware", f"test-aware:any@{scope}", what))
    return out


_ANYTHING = frozenset({"unittest.mock.ANY", "mock.ANY"})  # `ANY == x` for every x
_RUNNERS = frozenset({"pytest", "_pytest", "unittest", "nose", "nose2"})


def _probing_import(node: ast.Try) -> bool:
    """`try: import pytest` with a handler: the code goes on either way, knowing which."""
    for stmt in node.body:
        if isinstance(stmt, ast.Import):
            modules = [a.name for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            modules = [stmt.module or ""]
        else:
            continue
        if node.handlers and any(m.split(".")[0] in _RUNNERS for m in modules):
            return True
    return False


def _strings(node: ast.AST) -> Iterator[str]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.expr):
            text = const_str(sub)
            if text:
                yield text


def _probes(node: ast.AST, names: Mapping[str, str]) -> Iterator[str]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute | ast.Name | ast.Call):
            dotted = resolve(sub.func if isinstance(sub, ast.Call) else sub, names)
            if dotted.startswith(_RUNNER_PROBES):
                yield dotted


def _equal_to_anything(cls: ast.ClassDef, scope: str) -> list[Mark]:
    out = []
    for item in cls.body:
        value: object = None
        name = ""
        if isinstance(item, _Fn) and item.name in ("__eq__", "__ne__"):
            body = [s for s in item.body if not _docstring(s)]
            if len(body) == 1 and isinstance(body[0], ast.Return):
                name, value = item.name, _constant(body[0].value)
        elif isinstance(item, ast.Assign) and isinstance(item.value, ast.Lambda):
            target = item.targets[0]
            if isinstance(target, ast.Name) and target.id in ("__eq__", "__ne__"):
                name, value = target.id, _constant(item.value.body)
        if (name, value) in (("__eq__", True), ("__ne__", False)):
            what = f"added `{cls.name}.{name}` returning {value}: equal to anything a test expects"
            key = f"test-aware:{cls.name}.{name}@{scope}"
            out.append(Mark(item.lineno, "test-aware", key, what))
    return out


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _constant(node: ast.expr | None) -> object:
    """The truth of a constant expression (`True`, `1`, `not 0`); None when not constant."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _constant(node.operand)
        return None if inner is None else not inner
    return None


# -- assertions that cannot fail ------------------------------------------------------------

_SAME_ARGS = ("assertEqual", "assertEquals", "assertIs", "assertListEqual", "assertDictEqual",
              "assertTupleEqual", "assertSetEqual", "assertCountEqual", "assertAlmostEqual",
              "assertSequenceEqual", "assertMultiLineEqual", "assertGreaterEqual",
              "assertLessEqual")  # fmt: skip


def _vacuous_check(node: ast.AST, names: Mapping[str, str]) -> str | None:
    """The text of an assertion in `node` that cannot fail, if it is one."""
    if isinstance(node, ast.Assert):
        return f"assert {ast.unparse(node.test)}"[:120] if vacuous(node.test) else None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or not node.args:
        return None
    method, args = node.func.attr, node.args
    text = ast.unparse(node)[:120]
    if method in ("assertTrue", "assert_", "failUnless") and vacuous(args[0]):
        return text
    if method in ("assertFalse", "failIf") and _constant(args[0]) is False:
        return text
    if method in _SAME_ARGS and len(args) > 1 and _same(args[0], args[1]):
        return text
    return None


def vacuous(test: ast.expr) -> bool:
    """An assertion's test that holds whatever the code under test does."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.Tuple | ast.List | ast.Set | ast.Dict):
        return bool(test.elts if not isinstance(test, ast.Dict) else test.keys)
    if isinstance(test, ast.Lambda):
        return True
    if isinstance(test, ast.BoolOp):
        parts = [vacuous(v) for v in test.values]
        return any(parts) if isinstance(test.op, ast.Or) else all(parts)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _constant(test.operand) is False
    if isinstance(test, ast.NamedExpr):
        return vacuous(test.value)
    if isinstance(test, ast.IfExp):
        chosen = _constant(test.test)  # `x if False else True`
        if chosen is not None:
            return vacuous(test.body if chosen else test.orelse)
        return vacuous(test.body) and vacuous(test.orelse)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        same_ok = isinstance(test.ops[0], ast.Eq | ast.Is | ast.LtE | ast.GtE)
        return same_ok and _same(test.left, test.comparators[0])
    return (  # `isinstance(x, object)`
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[1], ast.Name)
        and test.args[1].id == "object"
    )


def _same(a: ast.expr, b: ast.expr) -> bool:
    return ast.dump(a) == ast.dump(b)
