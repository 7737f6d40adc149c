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

from incidents.classify import (
    _RULES,
    _TRIGGERS,
    LOG_WINDOW,
    Classification,
    classify,
    code_of_findings,
)
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


def test_every_rule_decides_at_least_one_fixture_or_unit_case() -> None:
    labels = {run_fixture(p).reason for p in FILES}
    labels |= {classify(m).reason for m, *_ in UNIT_CASES}
    for label, *_ in _RULES:
        assert any(f"pattern {label!r}" in r for r in labels), f"rule {label!r} never decides"


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
    ("HTTP Error 401: Unauthorized", ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "HTTP 401/403"),
    ("status code 403", ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "HTTP 401/403"),
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
        "authentication failed",
    ),
    ("no valid license found", ErrorCode.UNKNOWN, FailureClass.NEVER_RETRY, "license"),
    (
        "OSError: [Errno 28] No space left on device",
        ErrorCode.UNKNOWN,
        FailureClass.ENV,
        "disk full",
    ),
    ("MemoryError", ErrorCode.UNKNOWN, FailureClass.ENV, "out of memory"),
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
    ("pwsh not found on PATH", ErrorCode.UNKNOWN, FailureClass.ENV, "pwsh not found"),
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
    ("overloaded_error: Overloaded", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "rate limit"),
    ("Read timed out. (read timeout=30)", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timed out"),
    ("requests.exceptions.ConnectTimeout", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timed out"),
    ("connect ETIMEDOUT 10.0.0.1:443", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timed out"),
    ("context deadline exceeded", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timed out"),
    (
        "Network timeout during receipt download",
        ErrorCode.TIMEOUT,
        FailureClass.TRANSIENT,
        "timed out",
    ),
    ("read ECONNRESET", ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "connection refused/reset"),
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
        "HTTP 502/503/504",
    ),
    ("upstream returned error: 504", ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "HTTP 502/503/504"),
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
    ("504 Gateway Time-out", ErrorCode.UNKNOWN, FailureClass.TRANSIENT, "HTTP 502/503/504"),
    ("StatusCode.DEADLINE_EXCEEDED", ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timed out"),
    ("grpc: RESOURCE_EXHAUSTED", ErrorCode.RATE_LIMIT, FailureClass.TRANSIENT, "rate limit"),
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
        "plugins: timeout-2.1.0",
        "processed 403 files and 429 rows",  # numbers that are not statuses
        "webhook delivered",
        "licensed under the MIT license",
        "0 failed, 12 passed in 1.02s",
        "Found 0 errors",
    ],
)
def test_benign_text_is_unknown(message: str) -> None:
    result = classify(message)
    assert (result.error_code, result.failure_class) == (ErrorCode.UNKNOWN, FailureClass.UNKNOWN)
    assert result.reason == "no rule matched"


def test_timed_out_and_exit_codes_come_first() -> None:
    syntax = "SyntaxError: invalid syntax"
    assert classify(syntax, timed_out=True) == Classification(
        ErrorCode.TIMEOUT, FailureClass.TRANSIENT, "timed_out -> TIMEOUT", "timed out", "timed_out"
    )
    assert classify(syntax, exit_code=124).error_code is ErrorCode.TIMEOUT
    assert classify(syntax, exit_code=137).error_code is ErrorCode.TIMEOUT
    assert classify(syntax, exit_code=-9).error_code is ErrorCode.TIMEOUT
    assert classify(syntax, exit_code=127).failure_class is FailureClass.ENV
    assert classify(syntax, exit_code=1).error_code is ErrorCode.SYNTAX


def test_non_zero_exit_with_nothing_specific_is_unknown_not_task_failed() -> None:
    assert classify("step failed", "", exit_code=2) == Classification(
        ErrorCode.UNKNOWN, FailureClass.UNKNOWN, "exit code 2, no rule matched"
    )
    assert classify("", "").reason == "no rule matched"


def test_message_is_checked_before_the_log() -> None:
    log = "Traceback ...\nAssertionError: earlier step\n"
    result = classify("Network timeout during receipt download", log)
    assert result.error_code is ErrorCode.TIMEOUT
    assert "in message" in result.reason
    assert classify("step failed", log).error_code is ErrorCode.TEST_FAILURE


def test_table_order_decides_between_rules() -> None:
    # A failing test run that mentions a refused connection is a test failure (code first).
    log = "E   ConnectionRefusedError: [Errno 111] Connection refused\n1 failed in 0.5s\n"
    assert classify("", log).error_code is ErrorCode.TEST_FAILURE
    # A hook failure that shows lint findings is a lint failure (seed 002's post_done_hook).
    log = "ruff.....Failed\n- hook id: ruff\napp.py:1:8: F401 `os` imported but unused\n"
    assert classify("", log).error_code is ErrorCode.LINT_FAILURE
    # Auth failures outrank transient symptoms: retrying cannot fix credentials.
    log = "HTTP Error 401: Unauthorized\nretrying after connection reset\n"
    assert classify("", log).failure_class is FailureClass.NEVER_RETRY
    # A disk quota is the environment, not a rate limit.
    assert classify("OSError: [Errno 122] Disk quota exceeded").failure_class is FailureClass.ENV


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


def test_triggers_are_necessary_for_every_match() -> None:
    """The literal prefilter never hides a match: wherever a rule's pattern matches a
    fixture, a fixture line or a case, one of its triggers is in the lowercased text."""
    texts = [m for m, *_ in UNIT_CASES]
    for path in FILES:
        content = path.read_text(encoding="utf-8")
        texts.append(content)
        texts.extend(content.splitlines())
    for label, pattern, *_ in _RULES:
        compiled = re.compile(pattern)
        for text in texts:
            if compiled.search(text):
                assert any(t in text.lower() for t in _TRIGGERS[label]), (label, text)


def test_rule_labels_are_unique_and_patterns_compile() -> None:
    labels = [label for label, *_ in _RULES]
    assert len(labels) == len(set(labels))
    assert set(labels) == set(_TRIGGERS)
    for _, pattern, *_ in _RULES:
        re.compile(pattern)


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
    assert not mods & {"typing", "json", "hashlib", "dataclasses", "pathlib", "pydantic"}


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
