"""What a failure's output says failed: the files it names, the tests that failed, and
the findings (tool codes, test ids, the exception) a signature is made of.

Read line by line from the end of a captured log (`scan`): the locations linters,
formatters and type checkers print (ruff, black, mypy, pyright, flake8, pylint, eslint,
tsc, PSScriptAnalyzer), the frames of a Python traceback (the interpreter's and
pytest's), and the node ids pytest prints for failed tests (`FAILED path::name`).

`targets` turns the named files into targets under the rules a given target obeys
(`bundle_rules.resolve_target`: inside the workdir with symlinks followed, stored
relative, no `..`), each with where it came from. Frames of a traceback give the
deepest frame outside the tests first; a test file is a target only when the failure is
in it (a syntax or import error there, or pytest could not collect it).

The text is untrusted: every line is cut to `MAX_LINE` characters and only the last
`MAX_LINES` lines are read; each pattern is anchored at the start of a line, has no nested
quantifier, and every repetition that can give back characters is bounded (a path is at
most 512 characters, a name 200), so a line costs time linear in its length.
Stdlib only, compiled on first use (the capture path).
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Scan", "imported_by", "scan", "targets", "tests_inside"]

MAX_LINE = 2000
MAX_LINES = 20_000
MAX_TARGETS = 20
MAX_TESTS = 50
MAX_TEST_SOURCE = 1_000_000  # a failing test file read for its imports, at most
EVIDENCE_CHARS = 200

_PATH = r"[^\s:\"'<>|*?(),\[\]]{1,512}"  # a path as tools print it: no spaces, no `:`
_DRIVE = r"(?:[A-Za-z]:)?"
_CODE = r"[A-Z]{1,12}\d{1,6}"  # F841, E0602, TS2322, W605, SIM102
_SOURCES = {
    # `path:line[:col]: CODE msg` (ruff concise, flake8, pylint), `path:line: error: msg
    # [code]` (mypy), `path:line:col - error: msg (rule)` (pyright), `path:line:col -
    # error TS2322: msg` (tsc --pretty)
    "loc": rf"^\s*(?P<path>{_DRIVE}{_PATH})"
    r":(?P<line>\d{1,9})(?::\d{1,9})?(?::\s|\s-\s)(?P<rest>.*)$",
    # ruff's full format: the code on its own line, then ` --> path:line:col`
    "arrow": rf"^\s*-->\s(?P<path>{_DRIVE}{_PATH}):(?P<line>\d{{1,9}})",
    "code_head": rf"^(?P<code>{_CODE})\s(?P<rest>.*)$",
    # tsc: `path(line,col): error TS2322: msg`
    "tsc": rf"^(?P<path>{_DRIVE}{_PATH})\((?P<line>\d{{1,9}}),\d{{1,9}}\):\s(?P<rest>.*)$",
    # black: `would reformat path`, `error: cannot format path: why`, `error: cannot
    # parse: path:1:6`
    "black": r"^(?:would reformat|error: cannot (?:format|parse):)\s(?P<path>[^\s:]{1,512}"
    r"|[A-Za-z]:[^\s:]{1,510})(?::\d{1,9}){0,2}(?::\s(?P<rest>.*))?$",
    # eslint's stylish format: a file on its own line, then `  line:col  error  msg  rule`
    "eslint_file": rf"^(?P<path>{_DRIVE}[/\\]{_PATH}|{_PATH}\.(?:[cm]?[jt]sx?|vue|svelte))\s*$",
    "eslint_row": r"^\s{1,8}\d{1,9}:\d{1,9}\s{1,40}(?P<sev>error|warning)\s{1,40}(?P<rest>.*)$",
    # PSScriptAnalyzer's table: `RuleName Severity ScriptName Line Message`, and its list
    # format's `ScriptPath : C:\x\deploy.ps1`
    "pssa": r"^(?P<code>PS[A-Za-z]{1,80})\s{1,60}(?:Error|Warning|Information|ParseError)"
    r"\s{1,60}(?P<path>[^\s]{1,512}\.ps[dm]?1)\s{1,60}(?P<line>\d{1,9})\s(?P<rest>.*)$",
    "pssa_path": r"^\s*ScriptPath\s{0,20}:\s(?P<path>[^\r\n]{1,512}\.ps[dm]?1)\s*$",
    # a traceback: `  File "path", line 3, in f` (the interpreter), `path:3: in f` and
    # `path:3: TypeError` (pytest)
    "frame": r"^(?:E\s{1,20})?\s{0,20}File \"(?P<path>[^\"]{1,1024})\", line (?P<line>\d{1,9})",
    "pyframe": r"^(?P<path>[^\s:]{1,512}\.py):(?P<line>\d{1,9}):(?:\s(?:in\s\S{1,200}"
    r"|(?P<exc>[A-Za-z_][\w.]{0,200})))?\s*$",
    "exception": r"^(?:E\s{1,20})?(?P<exc>[A-Za-z_][\w.]{0,200}(?:Error|Exception|Exit|Interrupt"
    r"|Warning|Iteration|Failure|Fault))(?::\s(?P<msg>.*))?$",
    "test": r"^(?P<kind>FAILED|ERROR)\s(?P<node>[^\s]{1,1000})(?:\s-\s(?P<why>.*))?\s*$",
    # the line that ends a traceback names its exception whatever the name (`socket.
    # gaierror`, a project's `Boom`): a dotted name at the start of the line, then `: msg`
    "last_exc": r"^(?:E\s{1,20})?(?P<exc>[A-Za-z_]\w{0,100}(?:\.[A-Za-z_]\w{0,100}){0,8})"
    r"(?::\s(?P<msg>.*))?$",
}
_compiled: dict[str, re.Pattern[str]] = {}
# the failure is in the test file itself when a traceback ends there with one of these
_OWN_ERRORS = frozenset(
    {
        "SyntaxError",
        "IndentationError",
        "TabError",
        "ImportError",
        "ModuleNotFoundError",
        "NameError",
    }
)
# installed code, never the project's own (a virtualenv inside the workdir)
_INSTALLED = frozenset({"site-packages", "dist-packages", "node_modules", "__pycache__"})
_PS_EXT = (".ps1", ".psm1", ".psd1")


_EXC_WORDS = ("Error", "Exception", "Exit", "Interrupt", "Warning", "Iteration", "Failure", "Fault")
# What a line must hold for a pattern to match it: checked with string methods first, so
# a pattern is compiled only for output that may need it (capture compiles per process)
_MAY: dict[str, Any] = {
    "frame": lambda s: 'File "' in s,
    "pyframe": lambda s: ".py:" in s,
    "exception": lambda s: any(w in s[:260] for w in _EXC_WORDS),
    "test": lambda s: s.startswith(("FAILED ", "ERROR ")),
    "last_exc": lambda s: s[:1].isalpha() or s[:1] == "_",  # tried only after frames
    "code_head": lambda s: s[:1].isupper() and s[1:2].isalnum(),
    "arrow": lambda s: "-->" in s[:40],
    "pssa": lambda s: s.startswith("PS"),
    "tsc": lambda s: "):" in s,
    "loc": lambda s: ":" in s[:540],
    "black": lambda s: s.startswith(("would reformat", "error: cannot")),
    "pssa_path": lambda s: "ScriptPath" in s[:40],
    "eslint_row": lambda s: s[:1] == " " and ("error" in s or "warning" in s),
    "eslint_file": lambda s: " " not in s.strip() and ("/" in s or "\\" in s or "." in s),
}


def _starts_traceback(line: str) -> bool:
    """`Traceback (most recent call last):`, or pytest's `____ test_name ____` header."""
    if line.startswith("Traceback (most recent call last)"):
        return True
    end = line.rstrip()
    return end.startswith("___") and end.endswith("___") and end.strip("_ ") != ""


def _match(name: str, line: str) -> re.Match[str] | None:
    return _re(name).match(line) if _MAY[name](line) else None


def _re(name: str) -> re.Pattern[str]:
    pattern = _compiled.get(name)
    if pattern is None:
        pattern = _compiled[name] = re.compile(_SOURCES[name])
    return pattern


class Named:
    """A file the output names: `path` as printed, `source` (the tool or the kind of
    output), `line` (its line number in the log), `evidence` (that line, cut)."""

    __slots__ = ("path", "source", "line", "evidence", "test_ok")

    def __init__(self, path: str, source: str, line: int, evidence: str, test_ok: bool) -> None:
        self.path, self.source, self.line, self.evidence = path, source, line, evidence
        self.test_ok = test_ok  # a test file may be a target: the failure is in it


class Scan:
    """What one output says: the files it names (in order of preference), the failed
    tests (node ids), and the findings a signature is made of."""

    def __init__(self) -> None:
        self.named: list[Named] = []
        self.tests: list[str] = []
        self.findings: list[str] = []  # "CODE path", "test-id ExcType"
        self.exception: str = ""  # the last exception: "Type: message"


def scan(text: str, tool: str = "") -> Scan:
    """Read `text` (a log) for what failed. `tool`: the program that printed it, when
    known (`incidents run`'s command), named as the source of what it names."""
    lines = text.splitlines()[-MAX_LINES:]
    out = Scan()
    state = _State(tool or "")
    for number, raw in enumerate(lines, 1):
        line = _plain(raw[:MAX_LINE])
        state.read(out, number, line)
    state.end_block(out)
    return out


_ANSI: re.Pattern[str] | None = None


def _plain(line: str) -> str:
    global _ANSI
    if "\x1b" not in line:
        return line.rstrip("\r")
    if _ANSI is None:
        _ANSI = re.compile(r"\x1b\[[0-9;]{0,20}[A-Za-z]")
    return _ANSI.sub("", line).rstrip("\r")


class _State:
    """The scan's memory between lines: the ruff code above an arrow, eslint's file,
    the frames of the traceback being read."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.code = ""
        self.eslint_file: tuple[str, int, str] | None = None
        self.frames: list[tuple[str, int, str]] = []
        self.exc = ""
        self.test_frames: list[Named] = []

    def source(self, kind: str) -> str:
        return self.tool or kind

    def read(self, out: Scan, n: int, line: str) -> None:
        if not line.strip():
            return
        if _starts_traceback(line):
            self.end_block(out)
            return
        if self._traceback(out, n, line) or self._test(out, line):
            return
        self._tools(out, n, line)

    def _traceback(self, out: Scan, n: int, line: str) -> bool:
        m = _match("frame", line) or _match("pyframe", line)
        if m is not None:
            self.frames.append((m.group("path"), n, line))
            exc = m.groupdict().get("exc")
            if exc:
                self.exc = self.exc or exc
            return True
        m = _match("exception", line)
        if m is None and self.frames and not self.exc and not line[:1].isspace():
            m = _match("last_exc", line)  # a traceback's frames end with its exception
        if m is not None:
            msg = m.group("msg")
            self.exc = m.group("exc")
            out.exception = f"{self.exc}: {msg}" if msg else self.exc
            return True
        return False

    def end_block(self, out: Scan) -> None:
        """A traceback ended: its frames, deepest first, outside the tests first; a test
        file only when the failure is in it."""
        if not self.frames:
            self.exc = ""
            return
        exc = self.exc.rpartition(".")[2]
        own = exc in _OWN_ERRORS
        deepest = self.frames[-1][0]
        for path, n, line in reversed(self.frames):
            test_ok = own and path == deepest
            named = Named(path, "Python traceback", n, line, test_ok)
            out.named.append(named)
        self.frames, self.exc = [], ""

    def _test(self, out: Scan, line: str) -> bool:
        m = _match("test", line)
        if m is None:
            return False
        node = m.group("node")
        path = node.partition("::")[0]
        if not path.endswith(".py"):
            return False
        why = (m.group("why") or "").partition(":")[0].strip()
        if "::" in node:
            if node not in out.tests and len(out.tests) < MAX_TESTS:
                out.tests.append(node)
            out.findings.append(f"{node} {why}".strip())
        else:  # `ERROR tests/test_x.py`: pytest could not collect the file
            out.named.append(Named(path, "pytest (collection error)", 0, line, True))
            out.findings.append(f"{path} collection error")
        return True

    def _tools(self, out: Scan, n: int, line: str) -> None:
        m = _match("code_head", line)
        if m is not None:
            self.code = m.group("code")
            return
        m = _match("arrow", line)
        if m is not None:
            self._found(out, m.group("path"), n, line, self.source("ruff"), self.code)
            return
        for kind in ("pssa", "tsc", "loc"):
            m = _match(kind, line)
            if m is not None:
                rest = m.group("rest")
                code = m.groupdict().get("code") or _code_in(rest)
                if kind == "loc" and not code and not _is_problem(rest):
                    return
                self._found(out, m.group("path"), n, line, self.source(_KIND[kind]), code)
                return
        m = _match("black", line)
        if m is not None:
            self._found(out, m.group("path"), n, line, self.source("black"), "reformat")
            return
        m = _match("pssa_path", line)
        if m is not None:
            self._found(out, m.group("path").strip(), n, line, "PSScriptAnalyzer", "")
            return
        m = _match("eslint_row", line)
        if m is not None and self.eslint_file is not None:
            path, at, head = self.eslint_file
            rule = m.group("rest").rsplit(None, 1)[-1] if m.group("rest").strip() else ""
            self._found(out, path, at, head, self.source("eslint"), rule)
            return
        m = _match("eslint_file", line)
        self.eslint_file = (m.group("path"), n, line) if m is not None else None

    def _found(self, out: Scan, path: str, n: int, line: str, source: str, code: str) -> None:
        out.named.append(Named(path, source, n, line, False))
        finding = f"{code} {path}".strip()
        out.findings.append(finding)


_KIND = {"pssa": "PSScriptAnalyzer", "tsc": "tsc", "loc": "a tool's path:line output"}
_PROBLEM_WORDS = ("error", "warning", "note:")


def _is_problem(rest: str) -> bool:
    head = rest[:40].lower()
    return any(head.startswith(w) for w in _PROBLEM_WORDS) or head.startswith("- error")


_code_pattern: re.Pattern[str] | None = None


def _code_in(rest: str) -> str:
    """The code of a finding: a leading `F841` / `E0602:` / `error TS2322:`, or a trailing
    `[name-defined]` (mypy) or `(reportUndefinedVariable)` (pyright)."""
    global _code_pattern
    if _code_pattern is None:
        _code_pattern = re.compile(rf"^(?:error\s|warning\s)?({_CODE})\b")
    m = _code_pattern.match(rest)
    if m is not None:
        return m.group(1)
    tail = rest.rstrip()[-120:]
    for open_, close in (("[", "]"), ("(", ")")):
        if tail.endswith(close) and open_ in tail:
            inner = tail[tail.rfind(open_) + 1 : -1].rpartition("/")[2]  # [Error/rule]
            if inner and all(c.isalnum() or c in "-_" for c in inner):
                return inner
    return ""


# -- targets ---------------------------------------------------------------------------


def is_test_file(rel: str) -> bool:
    parts = rel.replace("\\", "/").split("/")
    name = parts[-1]
    return (
        name.startswith("test_")
        or name.endswith(("_test.py", "_tests.py"))
        or name == "conftest.py"
        or any(p in ("tests", "test", "testing") for p in parts[:-1])
    )


def targets(found: Scan, workdir: str, cwd: str) -> list[dict[str, Any]]:
    """The files `found` names that may be targets, each once, in order of preference:
    `{"path", "kind" (python, powershell or other), "from", "log_line", "evidence"}`.
    Relative paths are read from `cwd` (where the command ran), then from the workdir;
    each obeys `bundle_rules.resolve_target` and must be a regular file."""
    from incidents.bundle_rules import resolve_target

    base = os.path.realpath(workdir)
    if base == os.sep:
        return []
    seen: dict[str, dict[str, Any]] = {}
    for named in found.named:
        rel = _resolve(named.path, base, cwd, resolve_target)
        if rel is None or rel in seen or _installed(rel):
            continue
        entry = {
            "path": rel,
            "kind": _kind_of(rel),
            "from": named.source,
            "log_line": named.line,
            "evidence": named.evidence.strip()[:EVIDENCE_CHARS],
        }
        if named.source == "Python traceback" and is_test_file(rel) and not named.test_ok:
            continue  # the test saw the failure; the code it calls is what failed
        seen[rel] = entry
        if len(seen) >= MAX_TARGETS:
            break
    # the code the tests call before the tests themselves (a stable sort keeps the rest)
    return sorted(seen.values(), key=lambda e: is_test_file(e["path"]))


def tests_inside(found: Scan, workdir: str, cwd: str) -> list[str]:
    """The failed tests' node ids whose file is a regular file inside the workdir (by the
    targets' rules), relative to it: `tests/test_x.py::test_y[1]`."""
    from incidents.bundle_rules import resolve_target

    base = os.path.realpath(workdir)
    out: list[str] = []
    for node in found.tests:
        path, sep, rest = node.partition("::")
        rel = _resolve(path, base, cwd, resolve_target) if base != os.sep else None
        if rel is not None and rel.endswith(".py") and not rel.startswith("-"):
            out.append(rel + sep + rest)
    return list(dict.fromkeys(out))


def imported_by(tests: list[str], workdir: str, cwd: str) -> list[dict[str, Any]]:
    """When the failing tests saw the failure themselves (an assertion on a wrong result:
    no frame names the code), the code they call is the modules their files import from
    the workdir: each a target under the same rules, never a test file, with the import
    line as its evidence. `tests`: node ids from `tests_inside` (relative to the workdir)."""
    import ast

    from incidents.bundle_rules import resolve_target

    base = os.path.realpath(workdir)
    seen: dict[str, dict[str, Any]] = {}
    for test_file in dict.fromkeys(t.partition("::")[0] for t in tests):
        try:
            with open(os.path.join(base, test_file), "rb") as fh:
                tree = ast.parse(fh.read(MAX_TEST_SOURCE))
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # unreadable or not Python: it names nothing
        for node in ast.walk(tree):
            for names in _modules(node):
                rel = next(
                    (r for m in names if (r := _module_file(m, base, cwd, resolve_target))), None
                )
                if rel is None or rel in seen or is_test_file(rel) or _installed(rel):
                    continue
                evidence = f"{test_file}:{getattr(node, 'lineno', 0)}: {ast.unparse(node)}"
                seen[rel] = {
                    "path": rel,
                    "kind": _kind_of(rel),
                    "from": f"imports of {test_file}",
                    "log_line": 0,
                    "evidence": evidence[:EVIDENCE_CHARS],
                }
                if len(seen) >= MAX_TARGETS:
                    return list(seen.values())
    return list(seen.values())


def _modules(node: Any) -> list[list[str]]:
    """For each name an import statement imports, the absolute modules it may be, the most
    specific first (`from a.b import c`: the module `a.b.c`, else a name in `a.b`);
    relative imports are the tests' own helpers."""
    import ast

    if isinstance(node, ast.Import):
        return [[alias.name] for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [[f"{node.module}.{a.name}", node.module] for a in node.names]
    return []


def _module_file(module: str, base: str, cwd: str, resolve: Any) -> str | None:
    stem = module.replace(".", "/")
    for prefix in ("", "src/"):
        for path in (f"{prefix}{stem}.py", f"{prefix}{stem}/__init__.py"):
            rel = _resolve(path, base, cwd, resolve)
            if rel is not None:
                return rel
    return None


def _resolve(path: str, base: str, cwd: str, resolve: Any) -> str | None:
    if not path or "\x00" in path or path.startswith("<"):
        return None  # `<string>`, `<frozen importlib._bootstrap>`
    if ".." in path.replace("\\", "/").split("/"):
        return None  # a target never has `..`, however it resolves
    starts = [path] if os.path.isabs(path) else [os.path.join(cwd, path), os.path.join(base, path)]
    for full in starts:
        rel, _why = resolve(full, base)
        if rel is not None and os.path.isfile(os.path.join(base, rel)):
            return str(rel)
    return None


def _installed(rel: str) -> bool:
    return any(part in _INSTALLED for part in rel.split(os.sep))


def _kind_of(rel: str) -> str:
    if rel.endswith((".py", ".pyi")):
        return "python"
    if rel.lower().endswith(_PS_EXT):
        return "powershell"
    return "other"
