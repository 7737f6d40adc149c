"""What a name in a Python file stands for (pure, for `checks.tamper_code` and
`checks.tamper_runner`): one resolver for every rule, so a module member is the same
member however it is reached.

`resolve` reads `import os as o; o._exit`, `from os import _exit as x`, `p = pytest`,
`__import__("o" + "s")`, `importlib.import_module(...)`, `sys.modules["os"]`,
`sys.modules.get("os")`, `getattr(os, "_e" + "xit")`, `vars(os)["_exit"]`,
`os.__dict__["_exit"]`, `os.__dict__.get("_exit")` and `globals()["name"]` as the dotted
name they reach (`os._exit`), with strings spelled in pieces joined (`const_str`).
`computed_member` names the module whose member a computed name reaches (`getattr(os,
name)`, `vars(sys)[key]`): what it is cannot be read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

UNKNOWN = "?"
# modules whose members can end or hook the process: reaching one by a computed name
# is no ordinary code
PROCESS_MODULES = frozenset({"os", "posix", "nt", "sys", "signal", "builtins", "atexit"})
_KNOWN_ROOTS = frozenset({
    "pytest", "_pytest", "unittest", "os", "sys", "posix", "nt", "builtins", "signal",
    "typing", "pluggy", "gc", "inspect", "importlib", "ctypes", "atexit", "faulthandler",
    "threading",
})  # fmt: skip
_IMPORTERS = frozenset({"__import__", "builtins.__import__", "importlib.import_module"})
_GETATTRS = frozenset({"getattr", "builtins.getattr", "object.__getattribute__"})
_VARS = frozenset({"vars", "builtins.vars"})
_GLOBALS = "<globals>"


def const_str(node: ast.expr) -> str | None:
    """A string the code spells in pieces (`"_py" + "test"`, `"".join([...])`, an f-string
    of constants), or None when it is computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = const_str(node.left), const_str(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [const_str(v) if not isinstance(v, ast.FormattedValue) else const_str(v.value)
                 for v in node.values]  # fmt: skip
        return "".join(p for p in parts if p is not None) if None not in parts else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.List | ast.Tuple)
    ):
        sep = const_str(node.func.value)
        items = [const_str(e) for e in node.args[0].elts]
        return (
            sep.join(i for i in items if i is not None)
            if sep is not None and None not in items
            else None
        )
    return None


_Scoped = list[tuple[ast.AST, str, bool]]
# what a comparison reads of its two trees, several times: kept by the tree's identity
_CACHE: dict[tuple[int, str], tuple[ast.Module, dict[str, str] | _Scoped]] = {}


def _cached(tree: ast.Module, what: str) -> dict[str, str] | _Scoped:
    key = (id(tree), what)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is tree:
        return hit[1]
    value = _aliases(tree) if what == "aliases" else list(scoped_walk(tree))
    if len(_CACHE) >= 8:
        _CACHE.clear()
    _CACHE[key] = (tree, value)
    return value


def aliases(tree: ast.Module) -> Mapping[str, str]:
    """Local names bound to modules and their members, anywhere in the file (read-only)."""
    return cast(dict[str, str], _cached(tree, "aliases"))


def scoped(tree: ast.Module) -> Sequence[tuple[ast.AST, str, bool]]:
    """`scoped_walk` of a module, as a list kept for the comparison (read-only)."""
    return cast(_Scoped, _cached(tree, "scoped"))


def _aliases(tree: ast.Module) -> dict[str, str]:
    names: dict[str, str] = {}
    assigns: list[ast.Assign] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:  # `import a.b` binds `a`; `import a.b as c` binds `a.b`
                bound = a.name if a.asname else a.name.split(".")[0]
                names[a.asname or bound] = bound
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            assigns.append(node)
    for _ in range(2):  # `p = pytest`, `m = p.mark`, `o = __import__("os")`
        for node in assigns:
            value = resolve(node.value, names)
            if value.split(".")[0] in _KNOWN_ROOTS:
                names[cast(ast.Name, node.targets[0]).id] = value
    return names


def resolve(node: ast.expr, names: Mapping[str, str]) -> str:
    """`a.b.c` with its root resolved through the file's imports; `?` for what is not."""
    if isinstance(node, ast.Name):
        return names.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        return f"{resolve(node.value, names)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _call(node, names)
    if isinstance(node, ast.Subscript):
        owner, key = resolve(node.value, names), const_str(node.slice)
        if key is None:
            return UNKNOWN
        return _member(owner, key, names)
    return UNKNOWN


def _member(owner: str, key: str, names: Mapping[str, str]) -> str:
    """What `owner[key]` (or `owner.get(key)`) reaches when `owner` is a namespace."""
    if owner == "sys.modules":
        return key
    if owner == _GLOBALS:
        return names.get(key, key)
    if owner.endswith(".__dict__") and owner != ".__dict__":
        return f"{owner[: -len('.__dict__')]}.{key}"
    return UNKNOWN


def _call(node: ast.Call, names: Mapping[str, str]) -> str:
    if isinstance(node.func, ast.Call) and node.func.args and node.args:
        maker = resolve(node.func.func, names)  # `operator.attrgetter("_exit")(os)`
        attr = const_str(node.func.args[0])
        if maker in ("operator.attrgetter", "operator.methodcaller") and attr:
            return f"{resolve(node.args[0], names)}.{attr}"
    func = resolve(node.func, names)
    if func in ("globals", "builtins.globals") and not node.args:
        return _GLOBALS
    if not node.args:
        return UNKNOWN
    first = const_str(node.args[0])
    if func in _IMPORTERS:
        return first or UNKNOWN
    if func in _VARS and len(node.args) == 1:
        return f"{resolve(node.args[0], names)}.__dict__"
    name = const_str(node.args[1]) if len(node.args) > 1 else None
    if func in _GETATTRS and name:  # `getattr(m, "x")` is `m.x`
        return f"{resolve(node.args[0], names)}.{name}"
    if func.endswith((".get", ".__getitem__")) and first is not None:  # `sys.modules.get("os")`
        return _member(func.rsplit(".", 1)[0], first, names)
    if func.endswith(".__getattribute__") and first is not None:
        return f"{func.rsplit('.', 1)[0]}.{first}"
    return UNKNOWN


def computed_member(node: ast.AST, names: Mapping[str, str]) -> str | None:
    """The module (one of `PROCESS_MODULES`) whose member `node` reaches by a name that
    cannot be read: `getattr(os, name)`, `vars(os)[key]`, `os.__dict__.get(key)`."""
    owner: str | None = None
    if isinstance(node, ast.Call) and node.args:
        func = resolve(node.func, names)
        if func in _GETATTRS and len(node.args) > 1 and const_str(node.args[1]) is None:
            owner = resolve(node.args[0], names)
        elif func.endswith((".__dict__.get", ".__dict__.__getitem__")) and (
            const_str(node.args[0]) is None
        ):
            owner = func.rsplit(".", 2)[0]
    elif isinstance(node, ast.Call):  # `vars(os).items()`: every member, by any name
        func = resolve(node.func, names)
        if func.endswith((".__dict__.items", ".__dict__.values")):
            owner = func.rsplit(".", 2)[0]
    elif isinstance(node, ast.Subscript) and const_str(node.slice) is None:
        base = resolve(node.value, names)
        owner = base[: -len(".__dict__")] if base.endswith(".__dict__") else None
    return owner if owner in PROCESS_MODULES else None


@dataclass(frozen=True)
class Mark:
    line: int
    kind: str
    key: str  # what makes two marks the same suppression
    what: str


def is_main_guard(test: ast.expr) -> bool:
    """`__name__ == "__main__"`: a block that does not run when the module is imported."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
        and isinstance(test.ops[0], ast.Eq)
    )


def scoped_walk(tree: ast.Module) -> Iterator[tuple[ast.AST, str, bool]]:
    """Every node with its scope (the function or class it is in, `<module>` outside)
    and whether it runs while the module is imported (not in a function, a lambda or an
    `if __name__ == "__main__":` block)."""
    stack: list[tuple[ast.AST, str, bool]] = [(tree, "<module>", True)]
    while stack:
        node, scope, at_import = stack.pop()
        yield node, scope, at_import
        inner, runs = scope, at_import
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = node.name if scope == "<module>" else f"{scope}.{node.name}"
            runs = at_import and isinstance(node, ast.ClassDef)
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
                child in node.decorator_list
            ):
                stack.append((child, scope, at_import))  # decorators run where the def is
            elif isinstance(node, ast.Lambda):
                stack.append((child, scope, False))
            elif isinstance(node, ast.If) and child in node.body and is_main_guard(node.test):
                stack.append((child, inner, False))
            else:
                stack.append((child, inner, runs))
