"""What a person needs to see of one incident, derived from its bundle's documents: the
headline (the failure itself, not a count), the failing tests with their messages, the
findings with file:line and code, the log tail, and the decision that fits its kind.

Pure: documents and text in, an `Evidence` out (no files, no clock, no environment), so the
review page, the dashboard (through the API's incident answer) and the alerts say the
same thing. It reads what every bundle has (its classification, log tail, last canonical
report, escalation record), so it works whatever wording the step service chose for the
escalation's reason. The texts it is given are expected to be redacted already.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

GUIDANCE = "describe what a human changed"
MAX_LINE = 2000  # characters of one log line that are searched (the patterns stay linear)
MAX_SHOWN = 50  # failing tests and findings kept for a card
TEST_CODES = ("test-failure", "test-error", "collection-error", "test-not-run", "no-tests")
REVIEW_KINDS = ("review_fix",)  # an escalation that holds a fix a person must review

# a variable named as missing: `environment variable X is not set`, `X is not set`,
# `X: missing, ...`, bash's `X: unbound variable` and `X: parameter null or not set`,
# `KeyError: 'X'` (os.environ['X']), `missing environment variable: X`, `set X`
_NAME = r"[A-Z][A-Z0-9_]{1,80}"
_MISSING_WORDS = (
    r"(?:is not set|not set|is not defined|not defined|is unset|unset|is missing|missing"
    r"|is empty|must be set|is required|required|unbound variable|parameter null or not set"
    r"|parameter not set)"
)
_VARIABLE_PATTERNS = (
    re.compile(rf"(?i:environment variables?)\s+[`'\"]?({_NAME})\b"),
    re.compile(rf"\b({_NAME})[`'\"]?\s+(?i:environment variable)"),
    re.compile(rf"\b({_NAME})[`'\"]?:?\s+{_MISSING_WORDS}\b"),
    re.compile(rf"\b({_NAME}):\s[^\n]{{0,40}}?\b(?:missing|not set|unset|required|must be set)\b"),
    re.compile(rf"\bKeyError: [`'\"]({_NAME})[`'\"]"),
    re.compile(
        rf"(?i:missing (?:required )?(?:env(?:ironment)? )?(?:variables?|vars?)):?\s+[`'\"]?({_NAME})\b"
    ),
    re.compile(rf"(?i:\b(?:please )?(?:set|export))\s+[`'\"]?({_NAME})\b(?=[`'\"]?\s*(?:$|[.,;]))"),
)
# words in capitals that are a log's levels, not a variable's name
_NOT_NAMES = frozenset(("ERROR", "WARNING", "WARN", "FATAL", "INFO", "DEBUG", "FAILED"))
_NOT_NAMES |= {"FAIL", "NOTE", "CRITICAL", "TRACE", "PANIC", "OK", "ENV"}
# each shell's own sentence for a program it could not find; the program is the name that
# sentence is about, never the shell's prefix (zsh: `zsh: command not found: X`)
_PROGRAM_PATTERNS = (
    re.compile(r"\b([\w.+-]{1,80}): command not found\b(?!:)"),  # bash
    re.compile(r"\bcommand not found: [`'\"]?([\w.+-]{1,80})"),  # zsh
    re.compile(r"^\S{1,200}: (?:line )?\d+: ([\w.+-]{1,80}): not found\b"),  # dash, sh
    re.compile(r"\b(?:env|exec): [`'\"]?([\w.+-]{1,80})[`'\"]?: No such file or directory"),
    re.compile(r"\b(?i:no such (?:command|program)|unknown command)[:\s]+[`'\"]?([\w.+-]{1,80})"),
    re.compile(r"[`'\"]([\w.+-]{1,80})[`'\"] is not recognized as"),  # cmd.exe, PowerShell
)
# the path a "no such file" sentence names: quoted after it (Python's FileNotFoundError,
# Node's ENOENT), else just before it (a shell's, Go's, ssh's `X: No such file...`), or a
# `file X was not found`
_FILE_PATTERNS = (
    re.compile(r"(?i:no such file or directory)[:,]?\s*(?:\w+ )?[`'\"]([^`'\"\n]{1,300})[`'\"]"),
    re.compile(r"[`'\"]?([^\s`'\":]{1,300})[`'\"]?: (?i:no such file or directory)"),
    re.compile(r"\b(?i:file) [`'\"]?(\S{1,300}?)[`'\"]? (?:was |is )?not found"),
)
_ENV_LINE = re.compile(
    r"(?i:\bmissing\b|\bnot set\b|\bunset\b|\bnot found\b|\bno such file\b|\bnot installed\b"
    r"|\bpermission denied\b|\bno (?:api[ _-]?key|credentials?|token|password)\b"
    r"|\b(?:unable to|could not|cannot) (?:discover|find|locate)\b|\bmust be set\b)"
)
_ENV_LINES = 200  # the log's last lines searched for an env failure's own line
_VARIABLE_LIKE = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b")
# the log's own account of a failing test: pytest's summary, unittest's header, go test
_LOG_TESTS = (
    re.compile(r"^(?:FAILED|ERROR) (\S{1,500}::\S{1,500})(?: - (.{0,1000}))?$"),
    re.compile(r"^(?:FAIL|ERROR): (\w{1,200}) \(([\w.]{1,300})\)"),
    re.compile(r"^--- FAIL: (\S{1,300})"),
)
_ERROR_LINE = re.compile(
    r"^(?:E\s+)?(?:[\w.]{0,200}?(?:Error|Exception|Failure)\b|(?i:error|fatal)\b)|\berror:"
)


@dataclass(frozen=True, slots=True)
class FailingTest:
    name: str
    where: str  # path:line ("" when the log alone named it)
    message: str  # its assertion message, first line


@dataclass(frozen=True, slots=True)
class Finding:
    where: str  # path:line
    code: str
    tool: str
    category: str
    message: str


@dataclass(frozen=True, slots=True)
class Suggestion:
    kind: str  # set_env, install, provide_file, accept_fix, requeue, none
    text: str  # what a person does, in a sentence
    argv: list[str] = field(default_factory=list)  # the `incidents` arguments that decide


@dataclass
class Evidence:
    headline: str
    kind: str  # env, tests, findings, log, message
    missing: list[str]
    tests: list[FailingTest]
    findings: list[Finding]
    log_tail: str
    occurrences: int
    recurrences: int
    suggestion: Suggestion


def as_object(doc: Any) -> dict[str, Any]:
    """A JSON document's object, or {} for anything else."""
    return doc if isinstance(doc, dict) else {}


def first_text(doc: dict[str, Any], *keys: str) -> str:
    """The first of `keys` whose value is a non-empty string."""
    for key in keys:
        value = doc.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _lines(text: str) -> list[str]:
    return [line.strip()[:MAX_LINE] for line in text.splitlines() if line.strip()]


def _where(issue: dict[str, Any]) -> str:
    path, line = str(issue.get("path") or "?"), issue.get("line")
    return f"{path}:{line}" if isinstance(line, int) else path


def _test_of(issue: dict[str, Any]) -> FailingTest:
    """The junit parser writes `test_id: message`: split it back."""
    message = str(issue.get("message") or "")
    name, sep, said = message.partition(": ")
    if not sep or " " in name:
        name, said = message, ""
    return FailingTest(name, _where(issue), said)


def _is_test(issue: dict[str, Any]) -> bool:
    """A failing test, whatever runner reported it (pytest, NUnit, Pester...)."""
    return issue.get("category") == "test" or issue.get("code") in TEST_CODES


def from_report(report: Any) -> tuple[list[FailingTest], list[Finding]]:
    """A canonical report's failing tests and its other findings, hard ones first."""
    issues = [i for i in as_object(report).get("issues") or [] if isinstance(i, dict)]
    issues.sort(key=lambda i: not i.get("hard"))  # stable: the report's order within
    tests = [_test_of(i) for i in issues if _is_test(i)]
    findings = [
        Finding(
            _where(i),
            str(i.get("code") or i.get("category") or "?"),
            str(i.get("tool") or "?"),
            str(i.get("category") or "?"),
            str(i.get("message") or ""),
        )
        for i in issues
        if not _is_test(i)
    ]
    return tests[:MAX_SHOWN], findings[:MAX_SHOWN]


def log_tests(log: str) -> list[FailingTest]:
    """The failing tests a log names itself (when no check ran them)."""
    found: list[FailingTest] = []
    lines = _lines(log)
    for n, line in enumerate(lines):
        for i, pattern in enumerate(_LOG_TESTS):
            m = pattern.match(line)
            if m is None:
                continue
            if i == 0:
                test = FailingTest(m.group(1), m.group(1).partition("::")[0], m.group(2) or "")
            elif i == 1:
                after = next((x for x in lines[n + 1 : n + 30] if _ERROR_LINE.search(x)), "")
                test = FailingTest(f"{m.group(2)}.{m.group(1)}", "", after)
            else:
                test = FailingTest(m.group(1), "", "")
            if all(t.name != test.name for t in found):
                found.append(test)
            break
    return found[:MAX_SHOWN]


def missing_names(text: str) -> tuple[list[str], list[str]]:
    """(variables, programs) the text says are missing, in order, each once. When it names
    both, on different lines, the failure is the kind it names last: an earlier line
    (`PYTHONPATH is not set, using the default`) did not stop the step."""
    variables: list[str] = []
    programs: list[str] = []
    last = {"variable": -1, "program": -1}
    for n, line in enumerate(_lines(text)):
        for pattern in _VARIABLE_PATTERNS:
            for m in pattern.finditer(line):
                name = m.group(1)
                if name not in _NOT_NAMES:
                    last["variable"] = n
                    if name not in variables:
                        variables.append(name)
        for pattern in _PROGRAM_PATTERNS:
            for m in pattern.finditer(line):
                last["program"] = n
                if m.group(1) not in programs:
                    programs.append(m.group(1))
    if last["program"] > last["variable"] >= 0:
        variables = []
    elif last["variable"] > last["program"] >= 0:
        programs = []
    return variables, programs


def missing_files(text: str) -> list[str]:
    """The files the text says do not exist, in order, each once (a line's first)."""
    files: list[str] = []
    for line in _lines(text):
        for pattern in _FILE_PATTERNS:
            m = pattern.search(line)
            if m is not None:
                if m.group(1) not in files:
                    files.append(m.group(1))
                break
    return files


def _env_line(text: str) -> str:
    """The line that says what the environment lacks: the last one the classifier's own
    rules take for an env failure by itself (whatever the tool's wording), else one with
    a plain cue (`missing`, `not found`...), else one naming a variable-like word (written
    the same in every language: `Umgebungsvariable DATABASE_URL ist nicht gesetzt`)."""
    from incidents.classify import classify

    lines = _lines(text)[-_ENV_LINES:]
    if classify("", "\n".join(lines)).failure_class == "env":  # then find its line
        for line in reversed(lines):
            if classify(line).failure_class == "env":
                return line
    cued = [line for line in lines if _ENV_LINE.search(line)]
    named = [line for line in lines if _VARIABLE_LIKE.search(line)]
    return cued[0] if cued else (named or [""])[-1]


def _error_line(log: str) -> str:
    """The log's last line that reads as an error (a traceback ends with its exception)."""
    found = [line for line in _lines(log) if _ERROR_LINE.search(line)]
    return found[-1] if found else ""


def _more(count: int) -> str:
    return f" (+{count} more)" if count > 0 else ""


def _headline_of_tests(tests: list[FailingTest]) -> str:
    first = tests[0]
    said = f": {first.message}" if first.message else ""
    return f"{len(tests)} failing test(s): {first.name}{said}"


def _missing(
    variables: list[str], programs: list[str], files: list[str], log: str, otherwise: str
) -> str:
    """An env failure's headline: what is missing, as the output names it."""
    if variables:
        return f"missing environment variable {', '.join(variables)}"
    if programs:
        return f"missing program {', '.join(programs)}"
    if files:
        return f"missing file {', '.join(files)}"
    return "missing: " + (_env_line(log) or _env_line(otherwise) or otherwise)


def derive(
    incident_id: str,
    *,
    bucket: str,
    incident: Any,
    state: Any = None,
    metadata: Any = None,
    report: Any = None,
    log_tail: str = "",
) -> Evidence:
    """The evidence of one incident from its documents (each may be missing or None)."""
    doc, ctx, meta = as_object(incident), as_object(state), as_object(metadata)
    tests, findings = from_report(report)
    if not tests:
        tests = log_tests(log_tail)
    message = first_text(doc, "message")
    reason = (
        first_text(meta, "reason")
        or first_text(ctx, "escalation_reason")
        or first_text(doc, "resolution")
    )
    variables, programs = missing_names(f"{log_tail}\n{message}")
    env = first_text(doc, "failure_class") == "env"
    named = variables or programs
    files = missing_files(f"{log_tail}\n{message}") if env and not named else []
    escalation = first_text(meta, "escalation_kind") or first_text(ctx, "escalation_kind")
    if escalation in REVIEW_KINDS:  # its checks passed: what the person reviews is the fix
        kind, headline = "review", f"a fix waits for review: {reason or message}"
    elif env:
        kind, headline = "env", _missing(variables, programs, files, log_tail, message or reason)
    elif tests:
        kind, headline = "tests", _headline_of_tests(tests)
    elif findings:
        first = findings[0]
        kind = "findings"
        headline = f"{first.where} {first.code}: {first.message}{_more(len(findings) - 1)}"
    elif _error_line(log_tail):
        kind, headline = "log", _error_line(log_tail)
    else:
        kind, headline = "message", message or reason or "(nothing recorded)"
    occurrences = doc.get("occurrences")
    recurrences = doc.get("regression_count") if first_text(doc, "regression_of") else 0
    return Evidence(
        headline=headline[:500],
        kind=kind,
        missing=(named or files) if env else [],
        tests=tests,
        findings=findings,
        log_tail=log_tail,
        occurrences=occurrences if isinstance(occurrences, int) else 1,
        recurrences=recurrences if isinstance(recurrences, int) else 0,
        suggestion=suggest(
            incident_id,
            bucket,
            kind,
            variables if env else [],
            programs if env else [],
            meta,
            ctx,
            files=files,
        ),
    )


def suggest(
    incident_id: str,
    bucket: str,
    kind: str,
    variables: list[str],
    programs: list[str],
    metadata: dict[str, Any],
    state: dict[str, Any],
    files: list[str] | None = None,
) -> Suggestion:
    """The decision that fits: a missing variable is set and then requeued (a fixer cannot
    set it: requeued as it is, it only escalates again); a reviewed fix is accepted; a code
    failure is requeued with guidance."""
    if bucket != "escalated":
        return Suggestion("none", "closed: nothing to decide")
    escalation = first_text(metadata, "escalation_kind") or first_text(state, "escalation_kind")
    requeue = ["resolve-escalation", incident_id, "--guidance"]
    if escalation in REVIEW_KINDS:
        return Suggestion(
            "accept_fix",
            "a fix passed the checks and waits for a person: review its diff, then accept it",
            ["resolve-escalation", incident_id, "--accept-fix"],
        )
    if kind == "env" and variables:
        names = ", ".join(variables)
        return Suggestion(
            "set_env",
            f"set {names} in the step's environment (a fixer cannot), then requeue",
            [*requeue, f"{names} is now set in the environment of the step", "--requeue"],
        )
    if kind == "env" and programs:
        names = ", ".join(programs)
        return Suggestion(
            "install",
            f"install {names} (or put it on the step's PATH), then requeue",
            [*requeue, f"{names} installed", "--requeue"],
        )
    if kind == "env" and files:
        names = ", ".join(files)
        return Suggestion(
            "provide_file",
            f"put {names} where the step looks for it (a fixer cannot), then requeue",
            [*requeue, f"{names} provided", "--requeue"],
        )
    if kind == "env":
        return Suggestion(
            "set_env",
            "provide what the step's environment lacks (a fixer cannot), then requeue",
            [*requeue, "the missing setting is provided", "--requeue"],
        )
    return Suggestion(
        "requeue",
        "requeue with guidance for the next fixer (or fix it and resolve)",
        [*requeue, GUIDANCE, "--requeue"],
    )
