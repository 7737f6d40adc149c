"""Classify a failure: an error code (seed 002) and a failure class (seed 003).

Pure and table-driven; stdlib only (`re`, plus the enums of `incidents.vocab`), patterns
compiled on first use. The order of checks:

1. `timed_out` -> TIMEOUT / transient.
2. The exit code: 124 (`timeout(1)`) and 137 or -9 (SIGKILL, as `timeout -s KILL` sends)
   -> TIMEOUT / transient; 127 (command not found) -> UNKNOWN / env.
3. `_RULES`, first match wins (each gated by literal `_TRIGGERS`, see there), over the message first and then over the log text (the
   last `LOG_WINDOW` characters of it): the caller's own summary says what failed more
   surely than whatever else the log holds. The groups, in order:
   a. what a tool reports about the code: SYNTAX, TEST_FAILURE, LINT_FAILURE (code);
      a failing test or lint run wins over the words it happens to contain;
   b. HOOK_FAILURE (never_retry): a hook that failed *without* test or lint output
      (those are (a), as seed 002 says of `post_done_hook`);
   c. never_retry: credentials, permissions, licences, exhausted quotas;
   d. env: missing modules and programs, unset variables, full disk, no memory;
   e. RATE_LIMIT (transient), then TIMEOUT (transient), then other transient network
      and server failures;
   f. TASK_FAILED (code): the task's own marker; then Python runtime errors (code).
4. Nothing matched: UNKNOWN / unknown. A non-zero exit alone is *not* TASK_FAILED:
   seed 002 keeps TASK_FAILED for the literal marker and says "everything else" is
   UNKNOWN, and both are retried alike; the reason names the exit code.

Decisions on seed 002's "not retried" codes:

- RATE_LIMIT -> **transient**. Seed 002 does not re-run the task at once ("return
  API_ERROR immediately"); a rate limit still clears by itself, which is what transient
  means here: the check is retried with backoff and no code is touched. So the
  immediate retry seed 002 forbids never happens, and no human is paged for a limit
  that lifts in a minute. The exception is a quota that only a human can lift
  (`insufficient_quota`, billing): RATE_LIMIT / never_retry.
- HOOK_FAILURE -> **never_retry**. Seed 002: "infrastructure problem, fail fast", and
  no fixer can repair a broken hook; it escalates at once. Hook output that shows test
  or lint failures, or a formatter hook that modified files, is classified by what it
  shows (TEST_FAILURE / LINT_FAILURE, code) because those rules come first.
"""

from __future__ import annotations

import re

from incidents.vocab import Category, ErrorCode, FailureClass

__all__ = ["LOG_WINDOW", "Classification", "classify"]

LOG_WINDOW = 64 * 1024

_C, _T, _E, _N = (
    FailureClass.CODE,
    FailureClass.TRANSIENT,
    FailureClass.ENV,
    FailureClass.NEVER_RETRY,
)


def _http(codes: str) -> str:
    """An HTTP status among `codes` (`401|403`), only where a status is being reported."""
    return rf"(?i:\b(?:http|status|error|code|returned|response)\b[^\n\d]{{0,12}}\b(?:{codes})\b)"


# (label, pattern, error code, failure class). Order is the documented precedence.
_RULES: tuple[tuple[str, str, ErrorCode, FailureClass], ...] = (
    # a. the code, as tools report it
    ("SyntaxError", r"\b(?:SyntaxError|IndentationError|TabError)\b", ErrorCode.SYNTAX, _C),
    ("invalid syntax", r"(?i)\binvalid syntax\b", ErrorCode.SYNTAX, _C),
    ("shell syntax error", r"\bsyntax error near unexpected token\b", ErrorCode.SYNTAX, _C),
    ("PowerShell ParserError", r"\bParserError\b|\bParseException\b", ErrorCode.SYNTAX, _C),
    ("pytest N failed", r"\b[1-9]\d* failed(?:,| in \d)", ErrorCode.TEST_FAILURE, _C),
    ("FAILED tests/...", r"(?m)^FAILED \S", ErrorCode.TEST_FAILURE, _C),
    ("AssertionError", r"\bAssertionError\b", ErrorCode.TEST_FAILURE, _C),
    (
        "Pester Failed:",
        r"(?m)\bTests Passed: \d+, Failed: [1-9]|^\s*Failed: [1-9]|^\s*\[-\] \S",
        ErrorCode.TEST_FAILURE,
        _C,
    ),
    (
        "lint rule code",
        r"(?m)^\S+:\d+:\d+: [A-Z]{1,4}\d{3,4}\b|^[A-Z]{1,4}\d{3,4} (?:\[\*\] )?\S.*\n\s*--> ",
        ErrorCode.LINT_FAILURE,
        _C,
    ),
    ("mypy error:", r"(?m)^\S+:\d+(?::\d+)?: error: ", ErrorCode.LINT_FAILURE, _C),
    (
        "would reformat",
        r"(?i)\bwould reformat\b|\bwould be reformatted\b",
        ErrorCode.LINT_FAILURE,
        _C,
    ),
    ("Found N errors", r"\bFound [1-9]\d* errors?\b", ErrorCode.LINT_FAILURE, _C),
    ("hook modified files", r"(?i)files were modified by this hook", ErrorCode.LINT_FAILURE, _C),
    # seed 002: "post_done_hook fail + test errors" / "+ lint errors", in a summary's words
    (
        "tests failed",
        r"(?i)\btests? (?:failed|failing)\b|\btest failures?\b",
        ErrorCode.TEST_FAILURE,
        _C,
    ),
    (
        "lint errors",
        r"(?i)\blint(?:ing)? (?:errors?|failed|failures?)\b",
        ErrorCode.LINT_FAILURE,
        _C,
    ),
    # b. hooks
    ("pre-commit hook id", r"(?m)^- hook id: \S", ErrorCode.HOOK_FAILURE, _N),
    ("pre_start_hook", r"(?i)\bpre[_-]start[_-]hook\b", ErrorCode.HOOK_FAILURE, _N),
    (
        "hook failed",
        r"(?i)\bhook\b[^\n]{0,60}\b(?:failed|declined|rejected)\b|\bpre-commit\b[^\n]{0,60}\bfail",
        ErrorCode.HOOK_FAILURE,
        _N,
    ),
    # c. never retry
    (
        "quota exhausted permanently",
        r"(?i)\binsufficient_quota\b|check your plan and billing|credit balance is too low"
        r"|quota (?:exhausted|exceeded) permanently",
        ErrorCode.RATE_LIMIT,
        _N,
    ),
    (
        "HTTP 401/403",
        _http("401|403") + r"|\b401 Unauthorized\b|\b403 Forbidden\b",
        ErrorCode.UNKNOWN,
        _N,
    ),
    (
        "permission denied",
        r"(?i)\bpermission denied\b|\boperation not permitted\b|\bPermissionError\b|\bEACCES\b",
        ErrorCode.UNKNOWN,
        _N,
    ),
    (
        "authentication failed",
        r"(?i)\bauthentication (?:failed|failure|required)\b|\binvalid (?:credentials|api[ _-]?key)\b"
        r"|\bbad credentials\b|\bnot authori[sz]ed\b|\bunauthori[sz]ed\b|\baccess denied\b"
        r"|\binvalid username or password\b",
        ErrorCode.UNKNOWN,
        _N,
    ),
    (
        "license",
        r"(?i)\blicen[cs]e\b[^\n]{0,30}\b(?:expired|invalid|required|not found|missing)\b"
        r"|\b(?:invalid|expired|no valid) licen[cs]e\b",
        ErrorCode.UNKNOWN,
        _N,
    ),
    # d. environment
    (
        "disk full",
        r"(?i)\bno space left on device\b|\bENOSPC\b|\bdisk quota exceeded\b",
        ErrorCode.UNKNOWN,
        _E,
    ),
    (
        "out of memory",
        r"\bMemoryError\b|(?i:cannot allocate memory)|\bENOMEM\b|\bOOMKilled\b",
        ErrorCode.UNKNOWN,
        _E,
    ),
    ("cannot import name", r"\bImportError: cannot import name\b", ErrorCode.UNKNOWN, _C),
    (
        "missing module",
        r"\bModuleNotFoundError\b|\bNo module named\b|\bImportError\b",
        ErrorCode.UNKNOWN,
        _E,
    ),
    (
        "pwsh not found",
        r"(?i)\b(?:pwsh|powershell)\b[^\n]{0,20}\bnot (?:found|installed)\b",
        ErrorCode.UNKNOWN,
        _E,
    ),
    (
        "command not found",
        r"(?i)\bcommand not found\b|is not recognized as (?:an internal or external command|the name of a cmdlet)"
        r"|\bCommandNotFoundException\b",
        ErrorCode.UNKNOWN,
        _E,
    ),
    (
        "program not found",
        r"(?m)^(?:\S*/)?(?:ba|z|da|k)?sh: (?:line \d+: )?\S+: No such file or directory"
        r"|FileNotFoundError: \[Errno 2\] No such file or directory: '[^'/.]+'"
        r"|\bspawn \S+ ENOENT\b",
        ErrorCode.UNKNOWN,
        _E,
    ),
    (
        "missing environment variable",
        r"(?i:environment variable\b[^\n]{0,60}\b(?:not set|not defined|missing|required|unset))"
        r"|(?i:missing (?:required )?environment variable)|\bunbound variable\b"
        r"|\bKeyError: '[A-Z][A-Z0-9_]{2,}'",
        ErrorCode.UNKNOWN,
        _E,
    ),
    # e. transient
    ("HTTP 429", _http("429") + r"|\b429 Too Many Requests\b", ErrorCode.RATE_LIMIT, _T),
    (
        "rate limit",
        r"(?i)\brate[ _-]?limit(?:ed|ing|s)?\b|\btoo many requests\b|\bquota exceeded\b"
        r"|\bRESOURCE_EXHAUSTED\b|\bResourceExhausted\b|\boverloaded(?:_error)?\b",
        ErrorCode.RATE_LIMIT,
        _T,
    ),
    (
        "timed out",
        r"(?i:\btimed out\b|\bdeadline exceeded\b|\bDEADLINE_EXCEEDED\b|\bETIMEDOUT\b)"
        r"|(?<![\w-])(?:[A-Z]\w*)?Timeout(?:Error|Exception|Expired)?(?![\w=.-])"
        # lowercase "timeout" only in prose: it is also every other argument name in code
        r"|(?i:\btime-?out (?:during|while|when|after|of|on|occurred|exceeded|expired|reached|error)\b"
        r"|\b(?:network|read|connect|connection|request|socket|operation|response|idle) time-?out\b)",
        ErrorCode.TIMEOUT,
        _T,
    ),
    (
        "connection refused/reset",
        r"(?i)\bconnection (?:reset|refused|aborted|closed by peer)\b|\bECONN(?:RESET|REFUSED|ABORTED)\b"
        r"|couldn't connect to server|\bfailed to connect to\b|\bRemoteDisconnected\b|\bbroken pipe\b",
        ErrorCode.UNKNOWN,
        _T,
    ),
    (
        "DNS failure",
        r"(?i)\bname or service not known\b|temporary failure in name resolution|\bgetaddrinfo failed\b"
        r"|nodename nor servname|could not resolve host|\bEAI_AGAIN\b|\bENOTFOUND\b",
        ErrorCode.UNKNOWN,
        _T,
    ),
    (
        "network unreachable",
        r"(?i)\bnetwork is unreachable\b|\bno route to host\b|\bE(?:NET|HOST)UNREACH\b",
        ErrorCode.UNKNOWN,
        _T,
    ),
    (
        "HTTP 502/503/504",
        _http("502|503|504")
        + r"|(?i:\bbad gateway\b|\bservice unavailable\b|\bgateway time-?out\b)",
        ErrorCode.UNKNOWN,
        _T,
    ),
    (
        "temporarily unavailable",
        r"(?i)\btemporarily unavailable\b|\bEAGAIN\b",
        ErrorCode.UNKNOWN,
        _T,
    ),
    # f. the task and the code at run time
    ("TASK_FAILED", r"\bTASK_FAILED\b", ErrorCode.TASK_FAILED, _C),
    (
        "Python runtime error",
        r"\b(?:TypeError|NameError|AttributeError|KeyError|IndexError|ValueError|ZeroDivisionError"
        r"|UnboundLocalError|RecursionError|NotImplementedError|JSONDecodeError):",
        ErrorCode.UNKNOWN,
        _C,
    ),
)

# Literal prefilters (lowercase): a rule's pattern is compiled and searched only when one
# of its triggers is in the lowercased text. Every match of a pattern contains one of its
# triggers (tests/test_classify.py checks this on every fixture and case), so this only
# saves time: compiling all patterns costs ~7 ms, more than half a bare interpreter start.
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "SyntaxError": ("syntaxerror", "indentationerror", "taberror"),
    "invalid syntax": ("invalid syntax",),
    "shell syntax error": ("syntax error near",),
    "PowerShell ParserError": ("parsererror", "parseexception"),
    "pytest N failed": (" failed",),
    "FAILED tests/...": ("failed ",),
    "AssertionError": ("assertionerror",),
    "Pester Failed:": ("failed: ", "[-] "),
    "lint rule code": (": ", "--> "),
    "mypy error:": (": error: ",),
    "would reformat": ("would reformat", "would be reformatted"),
    "Found N errors": ("found ",),
    "hook modified files": ("files were modified by this hook",),
    "tests failed": (
        "test failed",
        "tests failed",
        "test failing",
        "tests failing",
        "test failure",
    ),
    "lint errors": ("lint error", "lint failed", "lint failure", "linting error", "linting failed",
                    "linting failure"),  # fmt: skip
    "pre-commit hook id": ("- hook id: ",),
    "pre_start_hook": ("start_hook", "start-hook"),
    "hook failed": ("hook", "pre-commit"),
    "quota exhausted permanently": (
        "insufficient_quota",
        "check your plan and billing",
        "credit balance is too low",
        "permanently",
    ),
    "HTTP 401/403": ("401", "403"),
    "permission denied": (
        "permission denied",
        "operation not permitted",
        "permissionerror",
        "eacces",
    ),
    "authentication failed": (
        "authentication",
        "invalid credentials",
        "invalid api",
        "bad credentials",
        "authori",
        "access denied",
        "invalid username or password",
    ),
    "license": ("licen",),
    "disk full": ("no space left on device", "enospc", "disk quota exceeded"),
    "out of memory": ("memoryerror", "cannot allocate memory", "enomem", "oomkilled"),
    "cannot import name": ("cannot import name",),
    "missing module": ("modulenotfounderror", "no module named", "importerror"),
    "pwsh not found": ("pwsh", "powershell"),
    "command not found": ("command not found", "is not recognized as", "commandnotfoundexception"),
    "program not found": ("no such file or directory", "enoent"),
    "missing environment variable": ("environment variable", "unbound variable", "keyerror: '"),
    "HTTP 429": ("429",),
    "rate limit": (
        "rate",
        "too many requests",
        "quota exceeded",
        "resource_exhausted",
        "resourceexhausted",
        "overloaded",
    ),
    "timed out": ("timed out", "deadline", "etimedout", "timeout", "time-out"),
    "connection refused/reset": (
        "connection ",
        "econn",
        "couldn't connect to server",
        "failed to connect to",
        "remotedisconnected",
        "broken pipe",
    ),
    "DNS failure": (
        "name or service not known",
        "name resolution",
        "getaddrinfo failed",
        "nodename nor servname",
        "could not resolve host",
        "eai_again",
        "enotfound",
    ),
    "network unreachable": ("unreach", "no route to host"),
    "HTTP 502/503/504": ("502", "503", "504", "bad gateway", "service unavailable", "gateway time"),
    "temporarily unavailable": ("temporarily unavailable", "eagain"),
    "TASK_FAILED": ("task_failed",),
    "Python runtime error": ("error:",),
}

_compiled: dict[str, re.Pattern[str]] = {}


class Classification(tuple[ErrorCode, FailureClass, str, str, str]):
    """What decided a failure's code and class: `(error_code, failure_class, reason, rule, where)`.

    `rule` names the rule (or the exit-code meaning) that decided, "" when nothing did;
    `where` is the input it matched: "timed_out", "exit_code", "message", "log" or "none".
    `reason` is the sentence for people. `classified_by` in incident.json records these.
    (A tuple subclass rather than `typing.NamedTuple`: capture does not import `typing`.)
    """

    __slots__ = ()

    def __new__(
        cls,
        error_code: ErrorCode,
        failure_class: FailureClass,
        reason: str,
        rule: str = "",
        where: str = "none",
    ) -> Classification:
        return super().__new__(cls, (error_code, failure_class, reason, rule, where))

    @property
    def error_code(self) -> ErrorCode:
        return self[0]

    @property
    def failure_class(self) -> FailureClass:
        return self[1]

    @property
    def reason(self) -> str:
        return self[2]

    @property
    def rule(self) -> str:
        return self[3]

    @property
    def where(self) -> str:
        return self[4]

    def __repr__(self) -> str:
        return f"Classification({self[0].value}, {self[1].value}, {self[2]!r})"


def _pattern(label: str, source: str) -> re.Pattern[str]:
    pattern = _compiled.get(label)
    if pattern is None:
        pattern = _compiled[label] = re.compile(source)
    return pattern


def _match(text: str) -> tuple[str, ErrorCode, FailureClass] | None:
    """The first rule of `_RULES` that matches `text`: (label, code, class)."""
    lowered = text.lower()
    for label, source, code, cls in _RULES:
        if any(t in lowered for t in _TRIGGERS[label]) and _pattern(label, source).search(text):
            return label, code, cls
    return None


def classify(
    message: str, log_text: str = "", exit_code: int | None = None, timed_out: bool = False
) -> Classification:
    """Classify one failure from its message, its log, its exit code and whether it timed out."""
    if timed_out:
        return Classification(
            ErrorCode.TIMEOUT, _T, "timed_out -> TIMEOUT", "timed out", "timed_out"
        )
    if exit_code == 124:
        return Classification(
            ErrorCode.TIMEOUT, _T, "exit code 124 (timeout) -> TIMEOUT", "exit 124", "exit_code"
        )
    if exit_code in (137, -9):
        return Classification(
            ErrorCode.TIMEOUT,
            _T,
            f"exit code {exit_code} (SIGKILL) -> TIMEOUT",
            f"exit {exit_code}",
            "exit_code",
        )
    if exit_code == 127:
        return Classification(
            ErrorCode.UNKNOWN,
            _E,
            "exit code 127 (command not found) -> env",
            "exit 127",
            "exit_code",
        )
    for where, text in (("message", message), ("log", log_text[-LOG_WINDOW:])):
        if not text:
            continue
        found = _match(text)
        if found is not None:
            label, code, cls = found
            return Classification(
                code, cls, f"pattern {label!r} in {where} -> {code}/{cls}", label, where
            )
    if exit_code:
        return Classification(
            ErrorCode.UNKNOWN, FailureClass.UNKNOWN, f"exit code {exit_code}, no rule matched"
        )
    return Classification(ErrorCode.UNKNOWN, FailureClass.UNKNOWN, "no rule matched")


# What a check's findings say, in seed 002's codes, most telling first: a file that does
# not parse explains everything after it; a failing test beats the lint around it.
_FINDING_CODES = (
    (Category.SYNTAX, ErrorCode.SYNTAX),
    (Category.TEST, ErrorCode.TEST_FAILURE),
    (Category.VERIFICATION, ErrorCode.TASK_FAILED),
    (Category.TAMPER, ErrorCode.LINT_FAILURE),
    (Category.TYPE, ErrorCode.LINT_FAILURE),
    (Category.SECURITY, ErrorCode.LINT_FAILURE),
    (Category.LINT, ErrorCode.LINT_FAILURE),
    (Category.IMPORT, ErrorCode.LINT_FAILURE),
    (Category.FORMAT, ErrorCode.LINT_FAILURE),
)


def code_of_findings(categories: set[str], timed_out: bool = False) -> ErrorCode | None:
    """The error code a canonical check's findings amount to (None: no finding)."""
    if timed_out:
        return ErrorCode.TIMEOUT
    return next((code for cat, code in _FINDING_CODES if cat.value in categories), None)
