"""Types weakened so that mypy passes without a fix (pure, for `checks.tamper`): kind
`type-weakened`.

mypy does not check the body of a function without annotations (`--check-untyped-defs`
is off by default), believes a stub under `if TYPE_CHECKING:` over the real definition,
and accepts anything typed `Any`. So, in any target:

- `marks` (compared along the diff, like every code mark): a name that an `if
  TYPE_CHECKING:` block binds (a `def`, a class, an assignment, an import) and that the
  same block also binds at run time (its `else:`, or a statement beside the `if`): mypy
  reads the one, Python runs the other; a `cast(Any, ...)`; a variable annotated `Any`.
- `weakened` (the functions compared by qualified name, `Class.method`): a return or
  parameter annotation the function had before and lost (also a parameter replaced by an
  unannotated `*args`/`**kwargs`), or one that became `Any`; and, in a file whose every
  function was annotated, a new function without any annotation (a typed function can
  hand its work to it unchecked). A renamed function is compared with nothing, so a
  refactor is no finding.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from incidents.checks.tamper_names import (
    Mark,
    aliases,
    const_str,
    is_main_guard,
    resolve,
    scoped,
)

_Fn = ast.FunctionDef | ast.AsyncFunctionDef
_TYPE_CHECKING = frozenset({"typing.TYPE_CHECKING", "typing_extensions.TYPE_CHECKING",
                            "TYPE_CHECKING"})  # fmt: skip
_ANY = frozenset({"typing.Any", "typing_extensions.Any", "Any"})


def marks(tree: ast.Module, names: Mapping[str, str]) -> list[Mark]:
    out: list[Mark] = []
    for node, scope, _ in scoped(tree):
        for block in _blocks(node):
            out += _shadowed(block, names, scope)
        if (
            isinstance(node, ast.Call)
            and resolve(node.func, names) in ("typing.cast", "typing_extensions.cast", "cast")
            and node.args
            and _is_any(node.args[0], names)
        ):
            key = f"type-weakened:cast-any@{scope}"
            out.append(Mark(node.lineno, "type-weakened", key, "added `cast(Any, ...)`"))
        elif isinstance(node, ast.AnnAssign) and _is_any(node.annotation, names):
            target = ast.unparse(node.target)  # `x: Any = "5"`: mypy lets x pass anywhere
            key = f"type-weakened:any-var:{target}@{scope}"
            out.append(Mark(node.lineno, "type-weakened", key, f"added `{target}: Any`"))
    return out


def _blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(node, "handlers", []):
        yield handler.body


def _is_type_checking(stmt: ast.stmt, names: Mapping[str, str]) -> bool:
    return isinstance(stmt, ast.If) and resolve(stmt.test, names) in _TYPE_CHECKING


def _shadowed(block: list[ast.stmt], names: Mapping[str, str], scope: str) -> list[Mark]:
    """Names an `if TYPE_CHECKING:` in `block` binds that the block binds at run time too."""
    checking = [s for s in block if _is_type_checking(s, names)]
    if not checking:
        return []
    runtime: set[str] = set()
    for stmt in block:
        if _is_type_checking(stmt, names):
            assert isinstance(stmt, ast.If)
            runtime |= {n for s in stmt.orelse for n, _ in _bound(s, runtime=True)}
        elif not (isinstance(stmt, ast.If) and is_main_guard(stmt.test)):  # not when imported
            runtime |= {n for n, _ in _bound(stmt, runtime=True)}
    out = []
    for stmt in checking:
        assert isinstance(stmt, ast.If)
        for inner in stmt.body:
            for name, line in _bound(inner, runtime=False):
                if name in runtime:
                    what = (f"added `{name}` under `if TYPE_CHECKING:` over its run-time "
                            "definition: mypy checks the one, Python runs the other")  # fmt: skip
                    out.append(
                        Mark(line, "type-weakened", f"type-weakened:tc:{name}@{scope}", what)
                    )
    return out


def _bound(stmt: ast.stmt, runtime: bool) -> Iterator[tuple[str, int]]:
    """The names a statement binds in its block (into `if`/`try`/`with`, not into defs)."""
    if isinstance(stmt, _Fn | ast.ClassDef):
        yield stmt.name, stmt.lineno
    elif isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    yield sub.id, stmt.lineno
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        if stmt.value is not None or not runtime:  # `x: int` alone binds nothing at run time
            yield stmt.target.id, stmt.lineno
    elif isinstance(stmt, ast.Import | ast.ImportFrom):
        for alias in stmt.names:
            yield (alias.asname or alias.name.split(".")[0]), stmt.lineno
    elif isinstance(stmt, ast.If | ast.Try | ast.With | ast.For | ast.While):
        for block in _blocks(stmt):
            for inner in block:
                yield from _bound(inner, runtime)


def _is_any(node: ast.expr, names: Mapping[str, str]) -> bool:
    text = const_str(node)
    return (text is not None and text.strip() in _ANY) or resolve(node, names) in _ANY


# -- annotations lost -----------------------------------------------------------------------


def _functions(tree: ast.Module) -> dict[str, _Fn]:
    """Every function by qualified name (`C.f`, `outer.inner`); a later one replaces."""
    every = [(node, scope) for node, scope, _ in scoped(tree) if isinstance(node, _Fn)]
    every.sort(key=lambda pair: (pair[0].lineno, pair[0].col_offset))
    return {
        (node.name if scope == "<module>" else f"{scope}.{node.name}"): node
        for node, scope in every
    }


def _params(fn: _Fn) -> dict[str, ast.expr | None]:
    a = fn.args
    every = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p)]
    return {p.arg: p.annotation for p in every}


def _annotated(fn: _Fn) -> bool:
    """mypy checks the body: the function has a return or a parameter annotation."""
    return fn.returns is not None or any(a is not None for a in _params(fn).values())


def weakened(old: ast.Module, new: ast.Module, test_file: bool = False) -> list[Mark]:
    """Annotations a function had before and lost or turned into `Any`; a function without
    any added to a typed file (not a test file: a new test is often left unannotated)."""
    old_names, new_names = aliases(old), aliases(new)
    after, earlier = _functions(new), _functions(old)
    out = []
    if not test_file and earlier and all(_annotated(fn) for fn in earlier.values()):
        for qual, fn in sorted(after.items()):  # a typed file gains a function mypy skips
            if qual not in earlier and not _annotated(fn):
                key = f"type-weakened:untyped:{qual}"
                what = f"added `{qual}` without annotations to a typed file: mypy does not check it"
                out.append(Mark(fn.lineno, "type-weakened", key, what))
    for qual, before in sorted(earlier.items()):
        now = after.get(qual)
        if now is None:
            continue
        pairs = [("return", before.returns, now.returns)]
        new_params = _params(now)
        catch_all = [p for p in (now.args.vararg, now.args.kwarg) if p and p.annotation is None]
        for p, a in _params(before).items():
            if p in new_params:
                pairs.append((p, a, new_params[p]))
            elif a is not None and catch_all:  # `def f(x: int)` -> `def f(*args)`
                pairs.append((p, a, None))
        for what, was, is_ in pairs:
            if was is None:
                continue
            label = "return annotation" if what == "return" else f"annotation of `{what}`"
            if is_ is None:
                key = f"type-weakened:unannotated:{qual}:{what}"
                out.append(Mark(now.lineno, "type-weakened", key,
                                f"removed the {label} of `{qual}`: mypy no longer checks it"))  # fmt: skip
            elif _is_any(is_, new_names) and not _is_any(was, old_names):
                key = f"type-weakened:any:{qual}:{what}"
                out.append(Mark(now.lineno, "type-weakened", key,
                                f"changed the {label} of `{qual}` to `Any`"))  # fmt: skip
    return out
