"""Every regular expression of the package, and text crafted against each: the tools of
tests/test_linear_patterns.py and bench/hostile_text.py.

`package_patterns` finds the patterns two ways, so that none is missed: statically (every
`re.compile`/`re.search`/... call and every redact `_Lazy(...)` whose pattern argument can
be evaluated in its module, and every rule's pattern) and at run time (what `re` compiled
while the parsers ran on text holding every redact trigger, a few paths and numbers).

`attacks` crafts, for each unbounded repeat of a pattern, the literal text that leads to
it followed by a long run of a character the repeat takes (and the same unit repeated
with the lead), the inputs on which a backtracking engine that retries at every position,
or backtracks into nested or adjacent overlapping repeats, is super-linear.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import pkgutil
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import incidents

# the parser's own modules (private, untyped): the audit reads patterns as `re` does
C: Any = importlib.import_module("re._constants")
sre_parse: Any = importlib.import_module("re._parser")

SRC = Path(incidents.__file__).parent
_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _static() -> dict[str, str]:
    found: dict[str, str] = {}
    for name, path in _modules():
        text = path.read_text()
        if not re.search(r"^import re$|_Lazy\(", text, re.MULTILINE):
            continue  # no pattern of its own: not imported (some cost seconds)
        module = importlib.import_module(name)
        for node in ast.walk(ast.parse(text)):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            f = node.func
            attr = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            base = getattr(f.value, "id", "") if isinstance(f, ast.Attribute) else ""
            if not ((base == "re" and attr in _CALLS) or attr == "_Lazy"):
                continue
            try:
                code = compile(ast.Expression(node.args[0]), str(path), "eval")
                source = eval(code, vars(module))
            except Exception:
                continue
            if isinstance(source, bytes):
                source = source.decode("latin-1")
            if isinstance(source, str):
                found.setdefault(source, f"{name}:{node.lineno}")
    from incidents import rules

    for info in pkgutil.iter_modules(rules.__path__):
        table = importlib.import_module(f"incidents.rules.{info.name}")
        for rows in getattr(table, "RULES", {}).values():
            for row in rows:
                found.setdefault(row[5], f"incidents.rules.{info.name}:{row[0]}")
    return found


# Text that holds every trigger of the redact rules, a path, numbers, ids and test ids.
SAMPLE = (
    "password=hunter2 token: abc --api-key x authorization: Bearer abcdefghijklmnopqrstu\n"
    "Cookie: a=b; c=d\nSet-Cookie: s=1\nmysql -u r -pX db\ndocker login -u u -p p r\n"
    "sshpass -p x ssh h\nmachine h login u password p\ncurl -u a:b https://u:p@h/x?sig=1\n"
    "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\nsecret AKIA0123\n"
    "Command '['curl', '-u', 'bob:PW']' failed\nredis-cli -a x\n\"auth\": \"eDp5\"\n"
    "h:5432:d:u:p == hooks.slack.com/services/x ghp_x eyJ sk- xox AIza npm_ hf_ SG.\n"
    "FAILED tests/test_a.py::test_b[x] - assert 1\ntests/test_a.py::test_c FAILED\n"
    "/srv/app/v1.2.3/file_12.py:10: 0x1f 2024-01-01T10:00:00Z 10.0.0.1 "
    "123e4567-e89b-12d3-a456-426614174000 https://example.com/a/1?b=2 deadbeef0123\n"
)


def exercise(text: str) -> None:
    """Run every parser of untrusted text on `text` (each compiles what it needs)."""
    from incidents.checks import testscan
    from incidents.checks.parsers import ToolOutput, _registry
    from incidents.classify import classify
    from incidents.redact import is_secret_key, redact, redact_json
    from incidents.signature import normalize_message

    redact(text)
    redact_json({"password": text, "auths": {"x": {"auth": text}}})
    is_secret_key(text[:64])
    classify(text[:2000], text, 1)
    normalize_message(text)
    testscan.named_tests(text)
    for parse in _registry().values():
        out = ToolOutput(stdout=text, stderr=text, exit_code=1, report=text)
        with contextlib.suppress(ValueError):  # ParseError: not that tool's output
            parse(out)


def _runtime() -> dict[str, str]:
    """What `re` compiles while the parsers run, each with the place that compiled it."""
    found: dict[str, str] = {}
    compile_ = re._compile  # type: ignore[attr-defined]

    def recording(pattern: Any, flags: Any) -> Any:
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_globals.get("__name__") == "re":
            frame = frame.f_back
        source = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
        if isinstance(source, str):
            where = f"{frame.f_globals.get('__name__')}:{frame.f_lineno}"
            found.setdefault(source, where)
        return compile_(pattern, flags)

    getattr(re, "_cache", {}).clear()
    re._compile = recording  # type: ignore[attr-defined]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exercise(SAMPLE)
    finally:
        re._compile = compile_  # type: ignore[attr-defined]
    return found


def package_patterns() -> dict[str, str]:
    """Every pattern of the package: source -> where it is (`module:line` or a rule)."""
    found = _static()
    for source, where in _runtime().items():
        found.setdefault(source, where)
    return found


_CATEGORY_CHAR = {
    C.CATEGORY_DIGIT: "1",
    C.CATEGORY_SPACE: " ",
    C.CATEGORY_WORD: "a",
    C.CATEGORY_NOT_DIGIT: "a",
    C.CATEGORY_NOT_SPACE: "a",
    C.CATEGORY_NOT_WORD: " ",
}
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)


def _first_chars(items: list[Any]) -> list[str]:
    """A few characters the sequence `items` may start with."""
    for op, av in items:
        if op is C.LITERAL:
            return [chr(av)]
        if op is C.NOT_LITERAL:
            return ["b" if av == ord("a") else "a"]
        if op is C.ANY:
            return ["a", " "]
        if op is C.IN:
            out: list[str] = []
            for iop, iav in av:
                if iop is C.LITERAL:
                    out.append(chr(iav))
                elif iop is C.RANGE:
                    out.append(chr(iav[0]))
                elif iop is C.CATEGORY:
                    out.append(_CATEGORY_CHAR.get(iav, "a"))
                elif iop is C.NEGATE:
                    out += ["a", " ", "1", "/", ":"]
            return out[:4] or ["a"]
        if op in _REPEATS:
            return _first_chars(list(av[2]))
        if op is C.SUBPATTERN:
            return _first_chars(list(av[3]))
        if op is C.BRANCH:
            return [c for alt in av[1] for c in _first_chars(list(alt))][:6]
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        return ["a"]
    return ["a"]


def _literal(items: list[Any]) -> str:
    """One short text the sequence `items` matches (roughly: lookarounds are ignored)."""
    out: list[str] = []
    for op, av in items:
        if op is C.LITERAL:
            out.append(chr(av))
        elif op in (C.IN, C.NOT_LITERAL, C.ANY):
            out.append(_first_chars([(op, av)])[0])
        elif op is C.SUBPATTERN:
            out.append(_literal(list(av[3])))
        elif op is C.BRANCH:
            out.append(_literal(list(av[1][0])))
        elif op in _REPEATS:
            out.append(_literal(list(av[2])) * max(av[0], 1))
    return "".join(out)


def attacks(pattern: str, n: int) -> Iterator[str]:
    """Texts of about `n` characters aimed at each unbounded repeat of `pattern`."""
    seen: set[tuple[str, str]] = set()

    def walk(items: Any, prefix: str) -> Iterator[str]:
        items = list(items)
        for i, (op, av) in enumerate(items):
            lead = prefix + _literal(items[:i])
            if op in _REPEATS:
                body = list(av[2])
                if av[1] is C.MAXREPEAT or av[1] > 64:
                    for ch in _first_chars(body):
                        unit = _literal(body) or ch
                        for run in (ch, unit, unit + " "):
                            if (lead[-40:], run) in seen:
                                continue
                            seen.add((lead[-40:], run))
                            yield lead + run * (n // len(run))
                            chunk = lead + run * 8
                            yield chunk * (n // len(chunk) + 1)
                yield from walk(body, lead)
            elif op is C.SUBPATTERN:
                yield from walk(av[3], lead)
            elif op is C.BRANCH:
                for alt in av[1]:
                    yield from walk(alt, lead)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                yield from walk(av[1], lead)

    try:
        tree = sre_parse.parse(pattern)
    except re.error:
        return
    yield from walk(tree, "")


def crafted_log(size: int, patterns: dict[str, str] | None = None, line: int = 1 << 18) -> str:
    """About `size` characters of text crafted against every pattern of the package: each
    pattern's attacks, cycled until the size is reached, run together in lines of `line`
    characters (a run of one character class spans many attacks)."""
    pieces = [text for source in patterns or package_patterns() for text in attacks(source, 2048)]
    out: list[str] = []
    total = 0
    while total < size:
        for piece in pieces:
            out.append(piece)
            total += len(piece)
            if total >= size:
                break
    text = "".join(out)[:size]
    return "\n".join(text[i : i + line] for i in range(0, len(text), line))
