"""Classification on real captured outputs (tests/fixtures/classify) and on the rule table.

A fixture is named `<ERROR_CODE>.<failure_class>.<what>.txt`: a header (`exit_code:`,
`timed_out:`, `message:`, `command:` that produced it, `source:` when handwritten), a
line `---`, then the output (stdout and stderr) as the log text.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from incidents import rules
from incidents.classify import _WORDS, LOG_WINDOW, Classification, classify, code_of_findings
from incidents.vocab import ErrorCode, FailureClass

FIXTURES = Path(__file__).parent / "fixtures" / "classify"
FILES = sorted(FIXTURES.glob("*.txt"))


def run_fixture(path: Path) -> Classification:
    header, sep, log = path.read_text(encoding="utf-8").partition("---\n")
    assert sep, f"{path.name}: no --- line"
    meta = dict(line.split(": ", 1) for line in header.splitlines() if ": " in line)
    exit_code = int(meta["exit_code"]) if "exit_code" in meta else None
    return classify(meta.get("message", ""), log, exit_code, meta.get("timed_out") == "true")


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_fixture(path: Path) -> None:
    code, failure_class = path.name.split(".")[:2]
    result = run_fixture(path)
    assert (result.error_code, result.failure_class) == (
        ErrorCode(code),
        FailureClass(failure_class),
    ), result.reason


def test_every_error_code_and_class_has_fixtures() -> None:
    codes = {p.name.split(".")[0] for p in FILES}
    classes = {p.name.split(".")[1] for p in FILES}
    assert codes == {c.value for c in ErrorCode}
    assert classes == {c.value for c in FailureClass}


def test_most_fixtures_are_real_captures() -> None:
    handwritten = [p for p in FILES if "source: handwritten" in p.read_text(encoding="utf-8")]
    captured = [p for p in FILES if p not in handwritten]
    assert len(captured) >= 30
    for p in captured:
        assert "\ncommand: " in "\n" + p.read_text(encoding="utf-8").partition("---\n")[0], p.name


# (message, error code, failure class, rule label): one line each, the rule table's targets
UNIT_CASES = [
    (
        "post_done_hook failed: 2 tests failed",
        ErrorCode.TEST_FAILURE,
        FailureClass.CODE,
        "tests failed",
    ),
    (
        "post_done_hook failed with lint errors in src/app.py",
        ErrorCode.LINT_FAILURE,
        FailureClass.CODE,
        "lint errors",
    ),
    ("SyntaxError: invalid syntax", ErrorCode.SYNTAX, FailureClass.CODE, "SyntaxError"),
    ("E999 invalid syntax at line 3", ErrorCode.SYNTAX, FailureClass.CODE, "invalid syntax"),
    (
        "x.sh: line 3: syntax error near unexpected token `fi'",
        ErrorCode.SYNTAX,
        FailureClass.CODE,
        "shell syntax error",
    ),
    (
        "ParserError: Missing closing ')'",
        ErrorCode.SYNTAX,
        FailureClass.CODE,
        "PowerShell ParserError",
    ),
    ("3 failed, 10 passed in 2.10s", ErrorCode.TEST_FAILURE, FailureClass.CODE, "pytest N failed"),
    (
        "FAILED tests/test_a.py::test_b - assert 1 == 2",
        ErrorCode.TEST_FAILURE,
        FailureClass.CODE,
        "FAILED tests/...",
    ),
    ("AssertionError: expected 3", ErrorCode.TEST_FAILURE, FailureClass.CODE, "AssertionError"),
    (
        "Tests Passed: 4, Failed: 2, Skipped: 0",
        ErrorCode.TEST_FAILURE,
        FailureClass.CODE,
        "Pester Failed:",
    ),
    (
        "app.py:1:8: F401 [*] `os` imported but unused",
        ErrorCode.LINT_FAILURE,
        FailureClass.CODE,
        "lint rule code",
    ),
    (
        "app.py:2: error: Incompatible return value type",
        ErrorCode.LINT_FAILURE,
        FailureClass.CODE,
        "mypy error:",
    ),
    ("would reformat app.py", ErrorCode.LINT_FAILURE, FailureClass.CODE, "would reformat"),
    ("Found 3 errors.", ErrorCode.LINT_FAILURE, FailureClass.CODE, "Found N errors"),
    (
        "- files were modified by this hook",
        ErrorCode.LINT_FAILURE,
        FailureClass.CODE,
        "hook modified files",
    ),
    (
        "- hook id: check-json",
        ErrorCode.HOOK_FAILURE,
        FailureClass.NEVER_RETRY,
        "pre-commit hook id",
    ),
    (
        "pre_start_hook exited with 3",
        ErrorCode.HOOK_FAILURE,
        FailureClass.NEVER_RETRY,
        "pre_start_hook",
    ),
    (
        "remote: pre-receive hook declined",
        ErrorCode.HOOK_FAILURE,
        FailureClass.NEVER_RETRY,
        "hook failed",
    ),
    (
        "insufficient_quota",
        ErrorCode.RATE_LIMIT,
        FailureClass.NEVER_RETRY,
        "quota exhausted permanently",
    ),
    ("HTTP Error 401: Unauthorized", ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "HTTP 401"),
    ("status code 403", ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "HTTP 403"),
    (
        "open(/etc/x): Permission denied",
        ErrorCode.UNKNOWN,
        FailureClass.NEVER_RETRY,
        "permission denied",
    ),
    (
        "fatal: Authentication failed for repo",
        ErrorCode.UNKNOWN,
        FailureClass.NEVER_RETRY,
        "authentication failed",
    ),
    (
        "Error: invalid credentials",
        ErrorCode.UNKNOWN,
        FailureClass.NEVER_RETRY,
        "authentication failed",
    ),
    (
        "user is not authorized to perform s3:PutObject",
        ErrorCode.UNKNOWN,
        FailureClass.NEVER_RETRY,
        "AWS access denied",
    ),
    ("no valid license found", ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "license"),
    (
        "OSError: [Errno 28] No space left on device",
        ErrorCode.UNKNOWN,
        FailureClass.ENV,
        "disk full",
    ),
    ("MemoryError", ErrorCode.UNKNOWN, FailureClass.ENV, "named out of memory"),
    (
        "ImportError: cannot import name 'x' from 'y'",
        ErrorCode.UNKNOWN,
        FailureClass.CODE,
        "cannot import name",
    ),
    (
        "ModuleNotFoundError: No module named 'boto3'",
        ErrorCode.UNKNOWN,
        FailureClass.ENV,
        "missing module",
    ),
    ("pwsh not found on PATH", ErrorCode.UNKNOWN, FailureClass.ENV, "command not found"),
    ("bash: aws: command not found", ErrorCode.UNKNOWN, FailureClass.ENV, "command not found"),
    (
        "'pwsh' is not recognized as an internal or external command",
        ErrorCode.UNKNOWN,
        FailureClass.ENV,
        "command not found",
    ),
    (
        "FileNotFoundError: [Errno 2] No such file or directory: 'pwsh'",
        ErrorCode.UNKNOWN,
        FailureClass.ENV,
        "program not found",
    ),
    (
        "bash: line 1: REQUIRED: unbound variable",
        ErrorCode.UNKNOWN,
        FailureClass.ENV,
        "missing environment variable",
    ),
    (
        "environment variable AMAZON_TOKEN is not set",
        ErrorCode.UNKNOWN,
        FailureClass.ENV,
        "missing environment variable",
    ),
    ("HTTP Error 429: Too Many Requests", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "HTTP 429"),
    ("You have hit the rate limit", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "rate limit"),
    ("Too Many Requests", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "rate limit"),
    ("Quota exceeded for metric", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "rate limit"),
    # an overloaded service is not a limit on requests (README): UNKNOWN, transient
    ("overloaded_error: Overloaded", ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "overloaded"),
    ("API Error: 529 Overloaded", ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "HTTP 5xx"),
    ("Read timed out. (read timeout=30)", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timed out"),
    (
        "requests.exceptions.ConnectTimeout",
        ErrorCode.TIMEOUT,
        FailureClass.TRANSIENT,
        "named timeout",
    ),
    ("connect ETIMEDOUT 10.0.0.1:443", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "named timeout"),
    ("context deadline exceeded", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timeout phrase"),
    (
        "Network timeout during receipt download",
        ErrorCode.TIMEOUT,
        FailureClass.TRANSIENT,
        "timeout phrase",
    ),
    ("read ECONNRESET", ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "named connection error"),
    (
        "[Errno 111] Connection refused",
        ErrorCode.UNKNOWN,
        FailureClass.TRANSIENT,
        "connection refused/reset",
    ),
    (
        "socket.gaierror: [Errno -2] Name or service not known",
        ErrorCode.UNKNOWN,
        FailureClass.TRANSIENT,
        "DNS failure",
    ),
    (
        "Temporary failure in name resolution",
        ErrorCode.UNKNOWN,
        FailureClass.TRANSIENT,
        "DNS failure",
    ),
    (
        "connect: Network is unreachable",
        ErrorCode.UNKNOWN,
        FailureClass.TRANSIENT,
        "network unreachable",
    ),
    (
        "HTTP Error 503: Service Unavailable",
        ErrorCode.UNKNOWN,
        FailureClass.TRANSIENT,
        "HTTP 5xx",
    ),
    ("upstream returned error: 504", ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "HTTP 5xx"),
    (
        "Resource temporarily unavailable",
        ErrorCode.UNKNOWN,
        FailureClass.TRANSIENT,
        "temporarily unavailable",
    ),
    ("TASK_FAILED: could not apply", ErrorCode.TASK_FAILED, FailureClass.CODE, "TASK_FAILED"),
    (
        "TypeError: unsupported operand",
        ErrorCode.UNKNOWN,
        FailureClass.CODE,
        "Python runtime error",
    ),
    (
        "NameError: name 'x' is not defined",
        ErrorCode.UNKNOWN,
        FailureClass.CODE,
        "Python runtime error",
    ),
    ("KeyError: 'total'", ErrorCode.UNKNOWN, FailureClass.CODE, "Python runtime error"),
    (
        "connect ENETUNREACH 10.0.0.1:443",
        ErrorCode.UNKNOWN,
        FailureClass.TRANSIENT,
        "network unreachable",
    ),
    ("Error: spawn pwsh ENOENT", ErrorCode.UNKNOWN, FailureClass.ENV, "program not found"),
    ("504 Gateway Time-out", ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "HTTP 5xx"),
    ("StatusCode.DEADLINE_EXCEEDED", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "named timeout"),
    ("grpc: RESOURCE_EXHAUSTED", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "named rate limit"),
]


@pytest.mark.parametrize(("message", "code", "failure_class", "label"), UNIT_CASES)
def test_rule(message: str, code: ErrorCode, failure_class: FailureClass, label: str) -> None:
    result = classify(message)
    assert (result.error_code, result.failure_class) == (code, failure_class), result.reason
    assert result.reason == f"pattern {label!r} in message -> {code}/{failure_class}"


@pytest.mark.parametrize(
    "message",
    [
        "step finished",
        "the token was invalid",  # prose about a token is no auth failure by itself
        "return opener.open(url, data, timeout)",  # `timeout` in code is no timeout
        "uv pip install --timeout=30 pkg",
        "kubectl apply -f deploy/ --request-timeout=30s",
        "plugins: timeout-2.1.0",
        "tests/test_net.py::test_timeout_is_respected PASSED",
        "processed 403 files and 429 rows",  # numbers that are not statuses
        "webhook delivered",
        "licensed under the MIT license",
        "0 failed, 12 passed in 1.02s",
        "Found 0 errors",
        "  0 failing",
        "Tests run: 5, Failures: 0, Errors: 0, Skipped: 0",
        "error_handler.py: 3 files changed",
        "   Compiling error-chain v0.12.4",
        "retry_on_timeout=True, socket_keepalive=True",
        "this may slow down the build",
    ],
)
def test_benign_text_is_unknown(message: str) -> None:
    result = classify(message)
    assert (result.error_code, result.failure_class) == (ErrorCode.UNKNOWN, FailureClass.UNKNOWN)
    assert result.reason == "no rule matched"


# Every "what goes wrong today" line of issue 16, in the tools' own words.
ISSUE_16_CASES = [
    ("dial tcp 10.0.0.7:443: i/o timeout", ErrorCode.TIMEOUT, FailureClass.TRANSIENT),
    ('Get "https://registry-1.docker.io/v2/": net/http: TLS handshake timeout', ErrorCode.TIMEOUT,
     FailureClass.TRANSIENT),
    ("ERROR:  canceling statement due to statement timeout", ErrorCode.TIMEOUT,
     FailureClass.TRANSIENT),
    ("PHP Fatal error:  Maximum execution time of 30 seconds exceeded", ErrorCode.TIMEOUT,
     FailureClass.TRANSIENT),
    ("The job running on runner X has exceeded the maximum execution time of 360 minutes.",
     ErrorCode.TIMEOUT, FailureClass.TRANSIENT),
    ('Get "http://10.0.0.7/healthz": context deadline exceeded (Client.Timeout exceeded while'
     " awaiting headers)", ErrorCode.TIMEOUT, FailureClass.TRANSIENT),
    ("rpc error: code = DeadlineExceeded desc = context deadline exceeded", ErrorCode.TIMEOUT,
     FailureClass.TRANSIENT),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", ErrorCode.UNKNOWN,
     FailureClass.ENV),
    ('Exception in thread "main" java.lang.OutOfMemoryError: Java heap space', ErrorCode.UNKNOWN,
     FailureClass.ENV),
    ("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
     ErrorCode.UNKNOWN, FailureClass.ENV),
    ("g++: fatal error: Killed signal terminated program cc1plus", ErrorCode.UNKNOWN,
     FailureClass.ENV),
    ("An error occurred (ThrottlingException) when calling the PutItem operation: Rate exceeded",
     ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT),
    ("An error occurred (Throttling) when calling the DescribeStacks operation (reached max"
     " retries: 4): Rate exceeded", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT),
    ("An error occurred (SlowDown) when calling the PutObject operation: Please reduce your"
     " request rate.", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT),
    ("An error occurred (RequestLimitExceeded) when calling the RunInstances operation",
     ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT),
    ("google.api_core.exceptions.ResourceExhausted: 429 RESOURCE_EXHAUSTED", ErrorCode.RATE_LIMIT,
     FailureClass.TRANSIENT),
    ("gh: HTTP 403: API rate limit exceeded for installation ID 123", ErrorCode.RATE_LIMIT,
     FailureClass.TRANSIENT),
    ("An error occurred (ExpiredToken) when calling the GetObject operation: The provided token"
     " has expired.", ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY),
    ("An error occurred (ExpiredTokenException) when calling the AssumeRole operation: The"
     " security token included in the request is expired", ErrorCode.UNKNOWN,
     FailureClass.NEVER_RETRY),
    ("An error occurred (InvalidClientTokenId) when calling the GetCallerIdentity operation",
     ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY),
    (r"File C:\ci\build.ps1 cannot be loaded because running scripts is disabled on this system.",
     ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY),
    ("Error: Cannot find module 'express'", ErrorCode.UNKNOWN, FailureClass.ENV),
    ("/bin/sh: 1: gcc: not found\nmake: *** [Makefile:2: all] Error 127", ErrorCode.UNKNOWN,
     FailureClass.ENV),
    ("npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
     ErrorCode.UNKNOWN, FailureClass.ENV),
    ("pip._vendor.resolvelib.resolvers.ResolutionImpossible: [RequirementInformation(...)]",
     ErrorCode.UNKNOWN, FailureClass.ENV),
    ("The api_key client option must be set either by passing api_key to the client or by"
     " setting the OPENAI_API_KEY environment variable", ErrorCode.UNKNOWN, FailureClass.ENV),
    ("deploy.sh: line 42: syntax error: unexpected end of file", ErrorCode.SYNTAX,
     FailureClass.CODE),
    ("src/app.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
     ErrorCode.LINT_FAILURE, FailureClass.CODE),
]  # fmt: skip


@pytest.mark.parametrize(("log", "code", "failure_class"), ISSUE_16_CASES)
def test_what_went_wrong_in_issue_16(
    log: str, code: ErrorCode, failure_class: FailureClass
) -> None:
    result = classify("step failed", log, exit_code=1)
    assert (result.error_code, result.failure_class) == (code, failure_class), result.reason


def test_exit_codes_by_meaning() -> None:
    syntax = "SyntaxError: invalid syntax"
    assert classify(syntax, timed_out=True) == Classification(
        ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timed_out -> TIMEOUT", "timed out", "timed_out"
    )
    # decisive: the wrapper or the shell says what happened, whatever the output
    assert classify(syntax, exit_code=124) == Classification(
        ErrorCode.TIMEOUT,
        FailureClass.TRANSIENT,
        "exit code 124 (timeout(1) stopped it) -> TIMEOUT/transient",
        "exit 124",
        "exit_code",
    )
    assert classify("Permission denied", exit_code=126).failure_class is FailureClass.ENV
    assert classify(syntax, exit_code=127).failure_class is FailureClass.ENV
    # a signal says how the process ended, not why: 137 is memory unless the text says timeout
    for killed in (137, -9):
        result = classify("step failed", "3 failed, 1 passed in 9.1s", exit_code=killed)
        assert (result.error_code, result.failure_class, result.rule) == (
            ErrorCode.UNKNOWN,
            FailureClass.ENV,
            "exit 137",
        )
    timed = classify("step failed", "FAILED x - Timeout\nERROR: Job timed out", exit_code=137)
    assert (timed.error_code, timed.rule, timed.where) == (ErrorCode.TIMEOUT, "timed out", "log")
    heap = classify("", "FATAL ERROR: JavaScript heap out of memory", exit_code=137)
    assert (heap.failure_class, heap.rule) == (FailureClass.ENV, "JavaScript heap")
    for terminated in (143, -15):
        result = classify("step failed", "AssertionError: x", exit_code=terminated)
        assert (result.failure_class, result.rule) == (FailureClass.TRANSIENT, "exit 143")
    assert classify(syntax, exit_code=1).error_code is ErrorCode.SYNTAX


def test_non_zero_exit_with_nothing_specific_is_unknown_not_task_failed() -> None:
    assert classify("step failed", "", exit_code=2) == Classification(
        ErrorCode.UNKNOWN, FailureClass.UNKNOWN, "exit code 2, no rule matched"
    )
    assert classify("", "").reason == "no rule matched"


def test_a_message_that_names_a_cause_decides_over_the_log() -> None:
    log = "Traceback ...\nAssertionError: earlier step\n"
    result = classify("Network timeout during receipt download", log)
    assert (result.error_code, result.where) == (ErrorCode.TIMEOUT, "message")
    assert classify("step failed", log).error_code is ErrorCode.TEST_FAILURE


def test_a_bare_message_defers_to_a_more_specific_log() -> None:
    # the message says only "403"; the log says it was a rate limit
    log = '{"message": "API rate limit exceeded for installation ID 42"}'
    result = classify("HTTP 403 from api.github.com", log)
    assert (result.error_code, result.failure_class, result.where) == (
        ErrorCode.RATE_LIMIT,
        FailureClass.TRANSIENT,
        "log",
    )
    # a log with nothing more specific leaves the bare message's verdict
    assert classify("HTTP 403 from api.github.com", "Retrying: HTTP 403").where == "message"
    assert classify("HTTP 403 from api.github.com").failure_class is FailureClass.NEVER_RETRY


def test_specificity_decides_between_rules() -> None:
    # VERDICT over everything it contains: a failing test named test_timeout that printed a
    # refused connection is a test failure
    log = (
        "E   ConnectionRefusedError: [Errno 111] Connection refused\n"
        "FAILED tests/test_api.py::test_timeout - requests.exceptions.ReadTimeout\n"
        "1 failed, 3 passed in 0.5s\n"
    )
    assert classify("", log).error_code is ErrorCode.TEST_FAILURE
    # a hook that shows lint findings is a lint failure (seed 002's post_done_hook)
    log = "ruff.....Failed\n- hook id: ruff\napp.py:1:8: F401 `os` imported but unused\n"
    assert classify("", log).error_code is ErrorCode.LINT_FAILURE
    # a tool's named error beats a generic phrase on the same line
    log = (
        'psycopg2.OperationalError: connection to server at "db" (10.0.0.5), port 5432 failed:'
        ' FATAL:  password authentication failed for user "app"'
    )
    result = classify("", log)
    assert (result.failure_class, result.rule) == (
        FailureClass.NEVER_RETRY,
        "database login refused",
    )
    # REFINED narrows a named cause both ways
    assert classify("KeyError: 'OPENAI_API_KEY'").failure_class is FailureClass.ENV
    assert classify("KeyError: 'total'").failure_class is FailureClass.CODE
    assert (
        classify("ImportError: cannot import name 'x' from 'y'").failure_class is FailureClass.CODE
    )
    assert classify("ImportError: No module named yaml").failure_class is FailureClass.ENV
    assert classify("Error: Cannot find module './routes'").failure_class is FailureClass.CODE
    # GENERIC over BARE: "403 ... rate limit" is a rate limit, a bare 403 is authority
    assert classify("403 Forbidden: secondary rate limit").error_code is ErrorCode.RATE_LIMIT
    assert classify("403 Forbidden").failure_class is FailureClass.NEVER_RETRY
    # same level: the class retrying cannot fix wins, wherever it stands in the log
    for log in ("HTTP Error 401: Unauthorized\nretrying after connection reset\n",
                "connection reset, retrying\nHTTP Error 401: Unauthorized\n"):  # fmt: skip
        assert classify("", log).failure_class is FailureClass.NEVER_RETRY
    # same level and class: the more specific code (a disk quota is no rate limit)
    assert classify("OSError: [Errno 122] Disk quota exceeded").failure_class is FailureClass.ENV
    assert classify("Read timed out; connection reset").error_code is ErrorCode.TIMEOUT


def test_a_word_on_many_lines_still_finds_its_match() -> None:
    # past _MAX_LINES lines holding a prefilter word, the whole text is searched
    log = "INFO request timeout=30 ok\n" * 500 + "ERROR: Read timed out.\n"
    assert classify("", log).error_code is ErrorCode.TIMEOUT


def test_only_the_tail_of_a_long_log_is_read() -> None:
    head = "SyntaxError: invalid syntax\n"
    filler = "INFO ok\n" * (LOG_WINDOW // 8 + 10)
    assert classify("", head + filler).reason == "no rule matched"
    assert classify("", filler + head).error_code is ErrorCode.SYNTAX


def test_classification_is_an_immutable_named_tuple_that_names_its_rule() -> None:
    result = classify("HTTP Error 429: Too Many Requests")
    code, failure_class, reason, rule, where = result
    assert (code, failure_class, reason) == (result.error_code, result.failure_class, result.reason)
    assert (rule, where) == ("HTTP 429", "message")
    assert result == Classification(code, failure_class, reason, rule, where)
    assert hash(result) == hash(Classification(code, failure_class, reason, rule, where))
    with pytest.raises(AttributeError):
        result.reason = "x"  # type: ignore[misc]  # the point: a frozen result refuses it
    assert repr(result).startswith("Classification(RATE_LIMIT, transient, ")


ROWS = [(eco, row) for eco, table in rules.tables().items() for row in table]


@pytest.mark.parametrize(("ecosystem", "row"), ROWS, ids=[row[0] for _, row in ROWS])
def test_every_rule_decides_its_own_example(ecosystem: str, row: rules.Row) -> None:
    name, level, code, failure_class, _, _, example = row
    result = classify(example)
    assert (result.rule, result.error_code, result.failure_class) == (
        name,
        ErrorCode(code),
        FailureClass(failure_class),
    ), result.reason
    assert level in (rules.BARE, rules.GENERIC, rules.NAMED, rules.REFINED, rules.VERDICT)


def _words_of(text: str) -> set[bytes]:
    return set(text.encode().lower().translate(_WORDS).split())


def test_prefilter_words_are_sound() -> None:
    """A rule is searched only where one of its words occurs: wherever its pattern matches a
    line of a fixture, a case or an example, one of its words is in that line."""
    texts = [m for m, *_ in UNIT_CASES] + [log for log, *_ in ISSUE_16_CASES]
    texts += [row[6] for _, row in ROWS]
    for path in FILES:
        texts.extend(path.read_text(encoding="utf-8").splitlines())
    lines = [line for text in texts for line in text.splitlines()]
    for _, (name, _, _, _, words, pattern, _) in ROWS:
        assert all(re.fullmatch(r"[a-z0-9_]+", w) for w in words.split()), name
        wanted = {w.encode() for w in words.split()}
        compiled = re.compile(pattern)
        for line in lines:
            if compiled.search(line):
                assert _words_of(line) & wanted, (name, line)


def test_rule_names_are_unique_and_rows_are_well_formed() -> None:
    names = [row[0] for _, row in ROWS]
    assert len(names) == len(set(names))
    for _, (name, _, code, failure_class, _, pattern, _) in ROWS:
        ErrorCode(code), FailureClass(failure_class)
        assert "\n" not in pattern, f"{name}: a match lies within one line"
        re.compile(pattern)
    for name, numbers, code, failure_class, _, _ in rules.EXIT_CODES:
        ErrorCode(code), FailureClass(failure_class)
        assert name == f"exit {numbers[0]}"


def test_the_issue_s_ecosystems_are_covered() -> None:
    assert set(rules.tables()) >= {
        "python", "shells", "make, gcc, cmake", "node", "typescript", "jvm", "go", "rust",
        "dotnet", "powershell", "docker", "kubernetes", "terraform", "git and ssh", "databases",
        "aws", "gcp", "azure", "github and gitlab", "llm providers", "gpu",
    }  # fmt: skip


def test_import_is_light() -> None:
    code = (
        "import sys, incidents.classify as c; c.classify('x'); print(' '.join(sorted(sys.modules)))"
    )
    mods = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert "incidents.classify" in mods
    assert not mods & {
        "typing", "json", "hashlib", "dataclasses", "pathlib", "pydantic", "tomllib"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("categories", "timed_out", "code"),
    [
        ({"format", "syntax", "test"}, False, ErrorCode.SYNTAX),
        ({"lint", "test"}, False, ErrorCode.TEST_FAILURE),
        ({"verification"}, False, ErrorCode.TASK_FAILED),
        ({"verification"}, True, ErrorCode.TIMEOUT),
        ({"type"}, False, ErrorCode.LINT_FAILURE),
        ({"format", "import"}, False, ErrorCode.LINT_FAILURE),
        ({"security"}, False, ErrorCode.LINT_FAILURE),
        (set(), False, None),
    ],
)
def test_the_code_a_checks_findings_amount_to(
    categories: set[str], timed_out: bool, code: ErrorCode | None
) -> None:
    assert code_of_findings(categories, timed_out) == code


@pytest.mark.parametrize(
    ("log", "code", "failure_class"),
    [
        # an HTTP status inside an exception's arguments (elasticsearch-py; YelpArchive/elastalert#1228)
        ("Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\n"
         "elasticsearch.exceptions.TransportError: TransportError(429, "
         "u'es_rejected_execution_exception', u'rejected execution')",
         ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT),
        # a memory quota is memory, not a limit on requests (Heroku; OWASP-BLT/BLT#3190)
        ("heroku[web.1]: Process running mem=1063M(207.6%)\n"
         "heroku[web.1]: Error R14 (Memory quota exceeded)",
         ErrorCode.UNKNOWN, FailureClass.ENV),
        ("Error: Quota exceeded for quota metric 'Read requests' and limit 'Read requests per "
         "minute'", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT),
        # a blind run (tests/fixtures/corpus_blind/README.md): Go's `log` prefix is not a
        # compiler's diagnostic (helm --debug; helm/helm#9094)
        ("Error: UPGRADE FAILED: create: failed to create: context deadline exceeded\n"
         "helm.go:84: [debug] context deadline exceeded",
         ErrorCode.TIMEOUT, FailureClass.TRANSIENT),
        # a generic exception class whose words say memory ran out (vllm-project/vllm#10439)
        ("ValueError: No available memory for the cache blocks. Try increasing "
         "`gpu_memory_utilization` when initializing the engine.",
         ErrorCode.UNKNOWN, FailureClass.ENV),
        # libcurl's words under a bare CMake error (microsoft/vcpkg#1482)
        ('-- Downloading https://x/boost.tar.bz2... Failed. Status: 56;"Failure when receiving '
         'data from the peer"\nCMake Error at scripts/cmake/vcpkg_download_distfile.cmake:82 '
         "(message):", ErrorCode.UNKNOWN, FailureClass.TRANSIENT),
    ],  # fmt: skip
)
def test_wordings_an_adversarial_tester_found(
    log: str, code: ErrorCode, failure_class: FailureClass
) -> None:
    result = classify("step failed", log)
    assert (result.error_code, result.failure_class) == (code, failure_class), result


TB = 'Traceback (most recent call last):\n  File "job.py", line 9, in <module>\n'


@pytest.mark.parametrize(
    ("log", "code", "failure_class", "rule"),
    [
        # an exception the tables do not name, read by its own name's words wherever a
        # qualifying word marks it (a module `errors.`/`exceptions.`, `Caused by:`, ...)
        (TB + "aiokafka.errors.KafkaConnectionError: No connection to node with id 1",
         ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "exception named a connection failure"),
        ('Exception in thread "main" org.apache.zookeeper.KeeperException$ConnectionLoss'
         "Exception: KeeperErrorCode = ConnectionLoss for /brokers/ids",
         ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "exception named a connection failure"),
        (TB + "pymongo.errors.ServerSelectionTimeoutError: mongo:27017: [Errno -3] Temporary"
         " failure in name resolution",
         ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "exception named a timeout"),
        (TB + "pyairtable.errors.RateLimitExceededError",
         ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "exception named a rate limit"),
        (TB + "paramiko.ssh_exception.BadAuthenticationType: Bad authentication type;"
         " allowed types: ['publickey']",
         ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "exception named a refused credential"),
        (TB + "acme_sdk.exceptions.NoCredentialsConfigured: pass a token to Client()",
         ErrorCode.UNKNOWN, FailureClass.ENV, "exception named a missing credential"),
        # a refused credential is never_retry, in words or by a protocol's code, and it
        # beats the connection failure it comes in
        ("smtp: 535 5.7.3 Authentication unsuccessful",
         ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "named credential refusal"),
        ("ldap_bind: wrong password or username for cn=admin",
         ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "credential refused"),
        ("Could not connect to the FTP server: 530 Login incorrect.",
         ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY,
         "credential refused in a connection or exception"),
        # a missing one is env, even under a name that says authentication
        ("AuthenticationError: api key not set",
         ErrorCode.UNKNOWN, FailureClass.ENV, "credential missing"),
        ("Error: no API token provided; export CLOUDFLARE_API_TOKEN first",
         ErrorCode.UNKNOWN, FailureClass.ENV, "credential missing"),
        # `status_code` is a status
        ("upload rejected (status_code=429)",
         ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "HTTP 429"),
        # a server that cannot be reached or connected to
        ("FATAL: unable to reach broker at amqp://mq:5672 after 3 attempts",
         ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "server unreachable"),
        ("Error: cannot connect to Vault at https://vault:8200",
         ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "server unreachable"),
        ("Redis::CannotConnectError: Error connecting to Redis on redis:6379",
         ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "server unreachable"),
        # an answer that never came; a guess about memory does not outweigh a timeout
        ("Error: node 10.0.0.3 did not respond within 5000 ms",
         ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timeout phrase"),
        ("job timeout after 600s\nthe runner killed it, perhaps out of memory?",
         ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timeout phrase"),
        # SIGKILL and the OOM killer as systemd and the kernel word them
        ("app.service: Main process exited, code=killed, status=9/KILL",
         ErrorCode.UNKNOWN, FailureClass.ENV, "out of memory"),
        ("kernel: python3 invoked oom-killer: gfp_mask=0x100cca, order=0",
         ErrorCode.UNKNOWN, FailureClass.ENV, "out of memory"),
        # what the machine lacks: a package, a configure dependency, an include file, a
        # cloud resource, a matching version of another program
        ("Error: package or namespace load failed for ‘ggplot2’:\n there is no package called"
         " ‘rlang’", ErrorCode.UNKNOWN, FailureClass.ENV, "package not installed"),
        ("configure: error: libxml2 not found. Please check your libxml2 installation.",
         ErrorCode.UNKNOWN, FailureClass.ENV, "configure found a dependency missing"),
        ("[FAILURE:/src/api.thrift:3] Could not find include file shared.thrift",
         ErrorCode.UNKNOWN, FailureClass.ENV, "imported file not found"),
        ("BucketNotFoundException: 404 gs://ci-artifacts bucket does not exist.",
         ErrorCode.UNKNOWN, FailureClass.ENV, "cloud resource missing"),
        ("session not created: This version of Microsoft Edge WebDriver only supports"
         " Microsoft Edge version 114",
         ErrorCode.UNKNOWN, FailureClass.ENV, "installed versions mismatch"),
    ],  # fmt: skip
)
def test_general_wordings_of_the_reviewer_s_misses(
    log: str, code: ErrorCode, failure_class: FailureClass, rule: str
) -> None:
    """Each class of message the reviewer's blind set (tests/fixtures/corpus/reviewer.md)
    missed, in wordings that are not in the corpus: the rules read the class, not the file."""
    result = classify("step failed", log)
    assert (result.error_code, result.failure_class, result.rule) == (
        code,
        failure_class,
        rule,
    ), result
