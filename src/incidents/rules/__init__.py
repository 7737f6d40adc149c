"""The classification rules, as data: one table per ecosystem, read by `incidents.classify`.

A text rule is a row `(name, level, code, class, words, pattern, example)`:

- `name`: unique; incident.json records it as `classified_by.rule`.
- `level`: its specificity (below); when several rules match, the highest level wins.
- `code`, `class`: the error code and failure class it gives (README, "Failure classes
  and error codes").
- `words`: the prefilter, space-separated lowercase words (`[a-z0-9_]`, whole words as
  `\\b` sees them). The pattern is compiled and searched only when one of these words
  occurs in the text, and only on the lines that contain it; so every match of the
  pattern must contain one of them (tests/test_classify.py checks it on every example).
- `pattern`: a regular expression, searched in the message and in the log. A match lies
  within one line.
- `example`: a real message the rule decides (the test classifies it and expects this rule).

Rows are plain tuples of strings and ints: importing the tables costs a few hundred
microseconds (a TOML file would cost tomllib's ~20 ms import, as much as the whole
capture floor).

Specificity, from the least to the most specific. The level says what kind of evidence
the match is, so a reader of one rule can tell where it stands:

- BARE (1): that something failed, not why: the `TASK_FAILED` marker, a hook that
  failed, a bare HTTP 403, `ImagePullBackOff`. Any cause found beside it wins.
- GENERIC (2): one cause, in words many tools print: "timed out", "connection refused",
  "permission denied", "rate limit", "No space left on device", HTTP 401/429/5xx.
- NAMED (3): one cause, by a tool's own stable name: an exception class or error code
  (`ETIMEDOUT`, `ENOSPC`, `ThrottlingException`, `ERESOLVE`, `OOMKilled`, `ExpiredToken`,
  SQLSTATE words).
- REFINED (4): a named cause narrowed by what follows it: `ImportError: cannot import
  name` (the code, not a missing package), `KeyError: 'API_TOKEN'` (an unset variable),
  `Cannot find module './x'` (a path in the repository).
- VERDICT (5): what a parser, compiler, type checker, linter or test runner reports about
  the code: failing tests, findings, diagnostics (`error TS2322`, `error[E0308]`,
  `SyntaxError`). Everything else in that output is a detail of the run it judged: a
  test named `test_timeout` that fails is a TEST_FAILURE.

Ties (same level) go to the class that retrying cannot fix (never_retry, env, code,
transient), then to the more specific code (SYNTAX, TEST_FAILURE, LINT_FAILURE,
HOOK_FAILURE, RATE_LIMIT, TIMEOUT, TASK_FAILED, UNKNOWN), then to the earlier row.

Exit codes have their own table, `EXIT_CODES`: `(name, exit codes, code, class, decisive,
example reason)`. A decisive exit code (124, 126, 127) decides before any text; the
others (SIGKILL 137, SIGTERM 143) say how the process ended, not why, so the text decides
when it names a timeout or a cause of the same class, and the exit code otherwise.
"""

from __future__ import annotations

BARE, GENERIC, NAMED, REFINED, VERDICT = 1, 2, 3, 4, 5

# error codes and failure classes, as the rows spell them (incidents.vocab's values)
TIMEOUT, RATE_LIMIT, SYNTAX = "TIMEOUT", "RATE_LIMIT", "SYNTAX"
TEST, LINT, TASK, HOOK, UNKNOWN = (
    "TEST_FAILURE",
    "LINT_FAILURE",
    "TASK_FAILED",
    "HOOK_FAILURE",
    "UNKNOWN",
)
T, C, E, N = "transient", "code", "env", "never_retry"

CLASS_ORDER = (N, E, C, T)
CODE_ORDER = (SYNTAX, TEST, LINT, HOOK, RATE_LIMIT, TIMEOUT, TASK, UNKNOWN)

Row = tuple[str, int, str, str, str, str, str]


def http(codes: str) -> str:
    """An HTTP status among `codes` (`401|403`), only where a status is being reported
    (`error` also as the end of a name: `TransportError(429, ...)`)."""
    return (
        r"(?i:(?:\b(?:http(?:/[\d.]+)?|status(?:[ _]?code)?|code|returned|response)|error)"
        rf"\b[^\n\d]{{0,12}}\b(?:{codes})\b)"  # error: also ending a name, TransportError(429
    )


def words_of(names: str, prefix: str = "") -> str:
    """The prefilter words of space-separated `names` (`ThrottlingException` ->
    `throttlingexception`), each after `prefix`."""
    return " ".join(prefix.lower() + name.lower() for name in names.split())


def any_of(names: str, prefix: str = "") -> str:
    """A pattern for any of space-separated `names`, each after `prefix`, as whole words."""
    return rf"\b{prefix}(?:" + "|".join(names.split()) + r")\b"


def tables() -> dict[str, tuple[Row, ...]]:
    """Every ecosystem's rows, in table order (imports the rule modules)."""
    from incidents.rules import (
        checkers,
        databases,
        exceptions,
        general,
        languages,
        microsoft,
        network,
        others,
        platforms,
        runtimes,
        services,
        toolchains,
    )

    out: dict[str, tuple[Row, ...]] = {}
    for module in (
        network,
        general,
        languages,
        runtimes,
        microsoft,
        platforms,
        databases,
        services,
        checkers,
        others,
        toolchains,
        exceptions,
    ):
        out.update(module.RULES)
    return out


# (name, exit codes, code, class, decisive, meaning)
EXIT_CODES: tuple[tuple[str, tuple[int, ...], str, str, bool, str], ...] = (
    ("exit 124", (124,), TIMEOUT, T, True, "timeout(1) stopped it"),
    ("exit 126", (126,), UNKNOWN, E, True, "found but not executable"),
    ("exit 127", (127,), UNKNOWN, E, True, "command not found"),
    ("exit 137", (137, -9), UNKNOWN, E, False, "SIGKILL, most often the OOM killer"),
    ("exit 143", (143, -15), UNKNOWN, T, False, "SIGTERM, stopped from outside"),
)
