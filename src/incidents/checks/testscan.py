"""Which tests exercise a Python file, and which tests a failure's log says failed.

`related_tests` finds, by a static scan of the project's test files (`ast`, nothing is
imported or run), the test files that import a target's module, and the ones named after
it (`test_<stem>.py`, `<stem>_test.py`). `named_tests` reads the node ids pytest prints in
its short summary (`FAILED path::name - why`, `ERROR path`) out of a log; `resolve_named`
keeps those whose file is inside the working directory.

Stdlib only: `related_tests` and `resolve_named` are probes the check replay re-runs
(incidents.checks.inputs).
"""

from __future__ import annotations

import ast
import os
import re
from fnmatch import fnmatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

SCAN_MAX_FILES = 20_000  # test files read; beyond, the scan gives up (None)
SCAN_MAX_ENTRIES = 200_000  # files and folders walked; beyond, the scan gives up
SCAN_MAX_BYTES = 4 << 20  # a larger test file is selected by its name only
NODE_ID_MAX_CHARS = 1000
# pytest's default `norecursedirs`, plus caches and site-packages
_SKIP_DIRS = frozenset({"build", "dist", "node_modules", "venv", "CVS", "_darcs", "{arch}",
                        "__pycache__", "site-packages"})  # fmt: skip
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# `FAILED path::name[params] - why`, `ERROR path::name`, `ERROR path` (a collection error),
# and the verbose form `path::name FAILED`.
# The `[params]` of a node are found by `_params_end`, not by the pattern: a lazy scan for
# their `]` from every `FAILED` of a long line would cost the line's length each time.
_NODE = r"[^\s:]+?\.py(?:::[^\s\[\]:]+)*"
# Starts with its words, so that `re` skips to them; that a line or a space comes before
# them is checked by `named_tests`.
_SHORT = re.compile(rf"(?:FAILED|ERROR) ({_NODE})(?=\[| - |\s*$)", re.MULTILINE)
_VERBOSE = re.compile(r"^([^\s:]+?\.py::\S+) (?:FAILED|ERROR)\b", re.MULTILINE)
_IMPORTERS = frozenset({"import_module", "__import__", "importorskip"})


# -- node ids named in a log --------------------------------------------------------


def named_tests(text: str) -> list[str]:
    """The test node ids (or, for a collection error, test files) a pytest log names as
    failed or errored, in order, once each."""
    text = _ANSI.sub("", text)
    found: dict[str, None] = {}
    for pattern in (_SHORT, _VERBOSE):
        for m in pattern.finditer(text):
            node = m.group(1)
            if pattern is _SHORT and m.start() and not text[m.start() - 1].isspace():
                continue
            if pattern is _SHORT and text.startswith("[", m.end()):
                end = _params_end(text, m.end())
                if end is None:
                    continue
                node = text[m.start(1) : end]
            if len(node) <= NODE_ID_MAX_CHARS:
                found.setdefault(node, None)
    return list(found)


def _params_end(text: str, start: int) -> int | None:
    """Where the `[params]` opening at `start` end (after their `]`): the first `]` followed
    by ` - why`, or the `]` that ends the line; looked for within `NODE_ID_MAX_CHARS`
    characters (a longer node id is not kept), so each costs a bounded scan."""
    limit = start + NODE_ID_MAX_CHARS
    line_end = text.find("\n", start, limit)
    stop = line_end if line_end >= 0 else min(len(text), limit)
    dash = text.find("] - ", start, stop + 3)
    if dash >= 0:
        return dash + 1
    if line_end < 0 and limit < len(text):
        return None
    tail = text[start:stop].rstrip()
    return start + len(tail) if tail.endswith("]") else None


def resolve_named(cwd: str, *nodes: str) -> list[list[str]]:
    """[node id as given, node id relative to cwd, why it cannot be run ("" if it can)]
    for each: its file must be a regular `.py` file inside cwd, symlinks followed."""
    base = os.path.realpath(cwd)
    files: dict[str, tuple[str, str]] = {}  # a log names many tests of one file
    resolved: list[list[str]] = []
    for node in nodes:
        path, sep, rest = node.partition("::")
        if path not in files:
            files[path] = _resolve_file(cwd, base, path)
        rel, problem = files[path]
        resolved.append([node, rel + sep + rest, problem])
    return resolved


def _resolve_file(cwd: str, base: str, path: str) -> tuple[str, str]:
    full = os.path.normpath(os.path.join(cwd, path))
    rel = os.path.relpath(full, cwd)
    real = os.path.realpath(full)
    if not _under(real, base) or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return rel, "its file is outside the working directory"
    if not os.path.isfile(real):
        return rel, "no such file in the working directory"
    if rel.startswith("-"):
        return rel, "its file name starts with '-'"
    return rel, ""


# -- test files that exercise a module ----------------------------------------------


def related_tests(cwd: str, globs: str, skip: str, *targets: str) -> list[str] | None:
    """The path relative to cwd of every test file under cwd (the project root)
    matching `globs` (NUL-separated) that imports one of the targets' modules or is named
    after one; None when there are more than SCAN_MAX_FILES test files to read. Walks as
    pytest's collection does: not into hidden folders, virtualenvs, build output or
    `skip` (the checks cache); symlinks are followed only inside cwd."""
    modules: set[str] = set()
    stems: set[str] = set()
    for target in targets:
        full = os.path.normpath(os.path.join(cwd, target))
        if full.endswith((".py", ".pyi")):
            names = module_names(cwd, full)
            modules.update(names)
            stems.update(n.rpartition(".")[2] for n in names)
    if not modules:
        return []
    conventions = {f"test_{s}.py" for s in stems} | {f"{s}_test.py" for s in stems}
    words = [s.encode() for s in stems]
    base = os.path.realpath(cwd)
    found: list[str] = []
    for n, path in enumerate(_test_files(cwd, globs.split("\0"), skip)):
        if path is None or n >= SCAN_MAX_FILES:
            return None
        real = os.path.realpath(path)
        if not _under(real, base) or not os.path.isfile(real):
            continue
        rel = os.path.relpath(path, cwd)
        if os.path.basename(path) in conventions or _imports_any(path, rel, modules, words):
            found.append(rel)
    return found


def module_names(cwd: str, path: str) -> set[str]:
    """The dotted names under which `path` (absolute, normalized) can be imported: from
    the top of its package, and each longer suffix of its path below cwd (a namespace
    package, or cwd itself on sys.path)."""
    folder, name = os.path.split(path)
    stem = name.rsplit(".", 1)[0]
    parts = [p for p in package_of(folder).split(".") if p]
    if stem != "__init__":
        parts.append(stem)
    names = {".".join(parts)} if parts and all(p.isidentifier() for p in parts) else set()
    rel = os.path.relpath(path, cwd)
    if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
        below = rel.rsplit(".", 1)[0].split(os.sep)
        if below[-1] == "__init__":
            below.pop()
        for i in range(len(below)):
            suffix = below[i:]
            if len(suffix) >= len(parts) and suffix and all(p.isidentifier() for p in suffix):
                names.add(".".join(suffix))
    return names


def imported_modules(tree: ast.AST, package: str) -> Iterator[str]:
    """Every module name a file's imports load (anywhere in it, functions included):
    `import a.b` gives a.b, `from a import b` gives a and a.b, relative imports are
    resolved against `package` (the file's own), `importlib.import_module("a")` and
    `pytest.importorskip("a")` with a literal name give a."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                up = package.split(".") if package else []
                if node.level - 1 > len(up):
                    continue
                up = up[: len(up) - (node.level - 1)]
                module = ".".join([*up, *([module] if module else [])])
            if module:
                yield module
            yield from (f"{module}.{a.name}" if module else a.name for a in node.names)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if (called in _IMPORTERS and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)):  # fmt: skip
                yield first.value


def _imports_any(path: str, rel: str, modules: set[str], words: list[bytes]) -> bool:
    """Does the test file at `path` import one of `modules` (or a module inside one)? A
    file that mentions one of the modules' last names but does not parse counts: pytest
    will report it."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(SCAN_MAX_BYTES + 1)
    except OSError:
        return False
    if len(data) > SCAN_MAX_BYTES:
        return False
    relative = re.search(rb"\bfrom\s+\.", data) is not None
    if not relative and not any(w in data for w in words):
        return False  # no import of them can be spelt without one of these
    try:
        tree = ast.parse(data, filename=rel)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return any(w in data for w in words)
    for name in imported_modules(tree, package_of(os.path.dirname(path))):
        if any(name == m or name.startswith(m + ".") for m in modules):
            return True
    return False


def package_of(folder: str) -> str:
    """The dotted name of the package `folder` is (its chain of `__init__.py` folders),
    or "" when it is not one."""
    parts: list[str] = []
    while _is_package(folder) and os.path.dirname(folder) != folder:
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    return ".".join(parts)


def _test_files(cwd: str, globs: list[str], skip: str) -> Iterable[str | None]:
    """The files matching `globs` below cwd; None once more than SCAN_MAX_ENTRIES entries
    were seen."""
    seen = 0
    for folder, dirs, names in os.walk(cwd):
        seen += len(dirs) + len(names)
        if seen > SCAN_MAX_ENTRIES:
            yield None
            return
        dirs[:] = sorted(
            d for d in dirs
            if not d.startswith(".") and d not in _SKIP_DIRS and not d.endswith(".egg")
            and os.path.join(folder, d) != skip
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        )  # fmt: skip
        for name in sorted(names):
            if any(fnmatch(name, g) for g in globs):
                yield os.path.join(folder, name)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _is_package(folder: str) -> bool:
    return any(os.path.isfile(os.path.join(folder, n)) for n in ("__init__.py", "__init__.pyi"))
