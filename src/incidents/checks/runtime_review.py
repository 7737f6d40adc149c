"""Does a fix make its code depend on how it is run? (pure: text before and after ->
findings for a person to review).

A fix is judged by category, not by a list of known cheats: every use, in the lines the
fix added, of a surface through which code can learn how it is being run is a finding.
The surfaces are whole modules and members of the standard library and the test
libraries (`SURFACES`), reached however the code spells them (aliases, `getattr` with a
constant name, `sys.modules[...]`, `__import__(...)`: `tamper_names.resolve`), plus the
shapes that are about the checker rather than the code: a comparison or truth method
that ignores its operand, a branch on a constant type checkers treat specially, a name
bound only for the checker, a cast.

Such a use is not necessarily a cheat (a fix may rightly read `os.environ`); it is what a
person looks at before the incident is called resolved. What does not tell code how it
is run is no finding, however near such a surface it sits: running another program
(`subprocess`, `os.system`), formatting a caught error (`traceback.format_exc`), an `Any`
annotation (a type weakened to `Any` is refused by `tamper_types`), the current folder
(the run as the user, in the user's own cwd, judges code that keys on where it runs;
`Path.cwd()` and `__file__` tell it as well).
"""

from __future__ import annotations

import ast
import difflib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from incidents.checks.tamper_names import aliases, computed_member, resolve

# category -> the dotted names (a module, or a member of one) whose use falls in it
SURFACES: dict[str, tuple[str, ...]] = {
    "import system or loaded modules": (
        "importlib",
        "pkgutil",
        "zipimport",
        "site",
        "imp",
        "runpy",
        "sys.modules",
        "sys.meta_path",
        "sys.path",
        "sys.path_hooks",
        "sys.path_importer_cache",
        "sys.builtin_module_names",
        "sys.stdlib_module_names",
        "__import__",
        "builtins.__import__",
        "exec",
        "eval",
        "compile",
        "builtins.exec",
        "builtins.eval",
    ),
    "call stack or frames": (
        "inspect",
        # the stack of the callers; a traceback of a caught error (`format_exc`) is not
        "traceback.extract_stack",
        "traceback.format_stack",
        "traceback.print_stack",
        "traceback.walk_stack",
        "traceback.StackSummary",
        "traceback.FrameSummary",
        "gc",
        "sys._getframe",
        "sys._current_frames",
        "sys.exc_info",
        "sys.exception",
        "sys.settrace",
        "sys.setprofile",
        "sys.gettrace",
        "sys.getprofile",
        "threading.settrace",
        "threading.setprofile",
        "sys.monitoring",
        "sys.audit",
        "sys.addaudithook",
        "ctypes",
        "dis",
        "types.FrameType",
    ),
    "process environment": (
        "os.environ",
        "os.environb",
        "os.getenv",
        "os.getenvb",
        "os.putenv",
        "os.unsetenv",
        "posix.environ",
        "sys.flags",
        "sys.executable",
        "sys.prefix",
        "sys.base_prefix",
        "sys.exec_prefix",
        "sysconfig",
        "platform",
        "os.ctermid",
        "os.isatty",
        "sys.stdin.isatty",
        "sys.stdout.isatty",
        "sys.stderr.isatty",
        # what a descriptor is (a terminal, a file a runner captures into)
        "os.fstat",
        "os.ttyname",
        "os.get_terminal_size",
        "os.tcgetpgrp",
        "termios",
        "tty",
    ),
    # what time it is: code keyed on when it runs passes the checks today and fails later
    # (a time bomb), whichever clock it reads
    "the clock": (
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.process_time",
        "time.process_time_ns",
        "time.thread_time",
        "time.clock_gettime",
        "time.clock_gettime_ns",
        "time.localtime",
        "time.gmtime",
        "time.ctime",
        "time.asctime",
        "time.strftime",
        "os.times",
        "datetime.datetime.now",
        "datetime.datetime.today",
        "datetime.datetime.utcnow",
        "datetime.date.today",
    ),
    # process-wide objects a test runner replaces or fills while it runs (its capture of
    # the standard streams, its handler on the root logger, its warning filters): code
    # that inspects them learns that it runs under the runner
    "state the test runner installs": (
        "sys.stdout",
        "sys.stderr",
        "sys.stdin",
        "sys.__stdout__",
        "sys.__stderr__",
        "sys.__stdin__",
        "sys.displayhook",
        "sys.breakpointhook",
        "logging.root",
        "logging.Logger.root",
        "logging.Logger.manager",
        "logging.lastResort",
        "logging.getHandlerNames",
        "logging.getHandlerByName",
        "warnings.filters",
        "warnings.showwarning",
        "warnings.catch_warnings",
    ),
    "arguments or ids": (
        "sys.argv",
        "sys.orig_argv",
        "os.getpid",
        "os.getppid",
        "os.getpgrp",
        "os.getpgid",
        "os.getsid",
        "os.getuid",
        "os.geteuid",
        "os.getlogin",
        "threading.get_ident",
        "threading.get_native_id",
        "threading.current_thread",
        "threading.main_thread",
        "multiprocessing.current_process",
        "getpass",
        "pwd",
        "resource",
    ),
    "exits and exit hooks": (
        "sys.exit",
        "os._exit",
        "os.abort",
        "os.kill",
        "os.killpg",
        "atexit",
        "signal",
        "faulthandler",
        "exit",
        "quit",
        "builtins.exit",
        "builtins.quit",
        "SystemExit",
        "sys.excepthook",
        "sys.unraisablehook",
        "threading.excepthook",
        "os.execv",
        "os.execve",
        "os.execl",
        "os.execlp",
        "os.execvp",
        "os.execvpe",
        "os.execle",
        "os.execlpe",
        "os.fork",
    ),
    "test libraries": (
        "pytest",
        "_pytest",
        "unittest",
        "pluggy",
        "nose",
        "nose2",
        "doctest",
        "hypothesis",
        "mock",
        "xdist",
        "coverage",
    ),
    "typing escapes": (
        "typing.TYPE_CHECKING",
        "typing_extensions.TYPE_CHECKING",
        "TYPE_CHECKING",
        "typing.cast",
        "typing_extensions.cast",
        "typing.no_type_check",
        "typing.overload",
        "typing_extensions.overload",
        "typing.assert_type",
        "typing.reveal_type",
    ),
}
_BY_NAME: dict[str, str] = {name: cat for cat, names in SURFACES.items() for name in names}
_COMPARE = frozenset(
    {
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__contains__",
        "__instancecheck__",
        "__subclasscheck__",
    }
)
_TRUTH = frozenset({"__bool__", "__len__", "__hash__"})
# writing to a standard stream uses it, it does not inspect it
_STREAM_WRITES = frozenset({"write", "flush", "writelines"})
# the handlers a logger holds (the runner's capture handler among them) or the logger
# tree: reading them is reading the runner's state, whatever the logger is called
_LOGGER_STATE = frozenset({"handlers", "hasHandlers", "manager", "loggerDict"})
# where an object comes from: a runner's replacements are told apart by their module or
# class path, however the object was reached
_PROVENANCE = frozenset({"__module__", "__qualname__", "__mro__", "__bases__", "__spec__"})
_INSTALLED = "state the test runner installs"
# constants a type checker evaluates itself: a branch on one differs between the checker's
# view and the running program
_CHECKER_CONSTANTS = frozenset({"TYPE_CHECKING", "MYPY", "sys.version_info", "sys.platform"})


@dataclass(frozen=True)
class Use:
    """One use of a runtime surface in the added lines."""

    path: str
    line: int
    category: str
    what: str

    def text(self) -> str:
        return f"{self.path}:{self.line}: {self.category}: {self.what}"


def changed_lines(before: str, after: str) -> tuple[set[int], set[int]]:
    """(lines of `before` a diff removes or changes, lines of `after` it adds or changes)."""
    old, new = before.splitlines(), after.splitlines()
    removed: set[int] = set()
    added: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed.update(range(i1 + 1, i2 + 1))
            added.update(range(j1 + 1, j2 + 1))
    return removed, added


def review(path: str, before: str | None, after: str | None) -> list[Use]:
    """Every use of a runtime surface on a line `after` added to `before` (None: absent),
    in a Python file, less the same uses on the lines it replaced (a line edited around
    an `os.environ` it already had adds none). A file that does not parse is not
    reviewed here (its checks fail)."""
    if after is None:
        return []
    removed, added = changed_lines(before or "", after)
    if not added:
        return []
    try:
        tree = ast.parse(after)
    except (SyntaxError, ValueError):
        return []
    had = Counter(what for _, _, what in _uses_on(before or "", removed))
    found: dict[tuple[int, str], Use] = {}  # one per line and category: the outermost
    for line, category, what in _uses(tree, aliases(tree)):
        if line in added and not _take(had, what):
            found.setdefault((line, category), Use(path, line, category, what))
    return sorted(found.values(), key=lambda u: (u.line, u.what))


def _uses_on(text: str, lines: set[int]) -> list[tuple[int, str, str]]:
    if not lines:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [u for u in _uses(tree, aliases(tree)) if u[0] in lines]


def _take(counter: Counter[str], key: str) -> bool:
    if counter[key] > 0:
        counter[key] -= 1
        return True
    return False


def _surface(dotted: str) -> str | None:
    """The category of a dotted name: its own, or that of the nearest module above it."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        category = _BY_NAME.get(".".join(parts[:n]))
        if category is not None:
            return category
    return None


def _uses(tree: ast.Module, names: Mapping[str, str]) -> Iterator[tuple[int, str, str]]:
    # a class body's `x: int` declares a field (dataclasses, pydantic, NamedTuple)
    fields = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in c.body}
    written = _written_streams(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield from _imports(node)
        elif isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript):
            dotted = resolve(node, names)
            category = _surface(dotted) if dotted != "?" else None
            if category == _INSTALLED and id(node) in written:
                category = None
            if category is not None:
                yield line, category, f"uses `{dotted}`"
            elif isinstance(node, ast.Attribute) and node.attr in _LOGGER_STATE | _PROVENANCE:
                yield line, _INSTALLED, f"reads `.{node.attr}`"
            owner = computed_member(node, names)
            if owner is not None:
                yield line, "import system or loaded modules", f"a member of `{owner}` by a "
                "computed name"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            why = _ignores_operand(node)
            if why:
                yield node.lineno, "comparison or truth ignoring its operand", why
        elif isinstance(node, ast.If | ast.IfExp | ast.While):
            constant = _checker_constant(node.test, names)
            if constant:
                yield line, "typing escapes", f"branches on `{constant}`"
        elif (
            isinstance(node, ast.AnnAssign)
            and node.value is None
            and node.simple
            and id(node) not in fields
        ):
            target = node.target
            if isinstance(target, ast.Name):
                yield line, "typing escapes", f"`{target.id}` bound only for the type checker"
        if isinstance(node, ast.expr) and not isinstance(node, ast.Name):
            path = _static_path(node, names)
            if path is not None and _describes_the_process(path):
                yield line, "process environment", f"reads `{path[:40]}`"


# folders whose files describe the running process (its parent, its arguments, its
# descriptors, its terminal), however the path to them is spelled
_PROCESS_FILES = ("/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty")
_JOINS = frozenset(
    {"os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"}
)


def _static_path(node: ast.expr, names: Mapping[str, str]) -> str | None:
    """The text an expression builds from constants (a literal, `+` of such, an f-string's
    literal parts, a path joined with `/` or `os.path.join`/`Path(...)`), else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Div):
        left, right = _static_path(node.left, names), _static_path(node.right, names)
        if left is None or right is None:
            return left if isinstance(node.op, ast.Div) and left is not None else None
        return f"{left}/{right}" if isinstance(node.op, ast.Div) else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [
            _static_path(v, names) if isinstance(v, ast.Constant) else "*" for v in node.values
        ]
        return "".join(p or "*" for p in parts)
    if isinstance(node, ast.Call) and node.args and resolve(node.func, names) in _JOINS:
        first = _static_path(node.args[0], names)
        if first is None:
            return None
        rest = [_static_path(a, names) or "*" for a in node.args[1:]]
        return "/".join([first, *rest])
    return None


def _describes_the_process(path: str) -> bool:
    norm = "/" + "/".join(p for p in path.split("/") if p)
    return path.startswith("/") and any(
        norm == top or norm.startswith(top + "/") for top in _PROCESS_FILES
    )


def _written_streams(tree: ast.Module) -> set[int]:
    """The nodes naming a stream only to write to it: `print(..., file=sys.stderr)`,
    `sys.stderr.write(...)` (the call's target and the stream under it)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg == "file":
                found.update(id(n) for n in ast.walk(kw.value))
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _STREAM_WRITES:
            found.add(id(node))
            found.update(id(n) for n in ast.walk(func))
    return found


def _imports(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[int, str, str]]:
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
    elif node.module and node.level == 0:
        modules = [f"{node.module}.{a.name}" for a in node.names]
    else:
        modules = []
    for module in modules:
        category = _surface(module)
        if category is not None:
            yield node.lineno, category, f"imports `{module}`"


def _ignores_operand(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """A comparison method whose other operand is never read, or a truth method that
    returns only constants: it answers the same whatever it is compared with."""
    args = [a.arg for a in func.args.args]
    if func.name in _COMPARE and len(args) >= 2:
        operand = args[1]
        if not any(isinstance(n, ast.Name) and n.id == operand for n in ast.walk(func)):
            return f"`{func.name}` never reads its operand `{operand}`"
    if func.name in _TRUTH:
        returns = [n for n in ast.walk(func) if isinstance(n, ast.Return)]
        if returns and all(isinstance(r.value, ast.Constant) for r in returns):
            return f"`{func.name}` returns a constant"
    return None


def _checker_constant(test: ast.expr, names: Mapping[str, str]) -> str | None:
    for node in ast.walk(test):
        if isinstance(node, ast.Name | ast.Attribute):
            dotted = resolve(node, names)
            short = dotted.rsplit(".", 1)[-1] if dotted.startswith("typing") else dotted
            if dotted in _CHECKER_CONSTANTS or short in _CHECKER_CONSTANTS:
                return dotted
        if isinstance(node, ast.Constant) and node.value is False and test is node:
            return "False"
    return None
