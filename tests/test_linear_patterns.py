"""Untrusted text is parsed in linear time: an audit of every regular expression of the
package against text crafted for it, and every parser on a crafted log.

Logs, tool output and bundle files are an attacker's to write. A backtracking engine
(Python's `re`) is super-linear on a pattern that retries a long run from every position
(`\\d+x` on a line of digits), or backtracks into nested or adjacent overlapping repeats
(`(a+)+`, `\\s*:?\\s*`). The audit finds those by their effect: for each pattern, text aimed
at each of its unbounded repeats (tests/hostile_text.py), at two sizes; the cost of a
linear pattern grows 4x from the first to the second, of a quadratic one 16x.

A pattern that is super-linear on unbounded text is allowed only where its input is
bounded, and `BOUNDED` says by what; the rules of `incidents.classify` are searched on
windows of at most `LINE_MAX` bytes, which the end-to-end test below holds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from tests.hostile_text import attacks, crafted_log, package_patterns

# (where it is, a prefix of `module:line` or of a rule's place; how its source starts, or
# "" for every pattern there) -> what bounds its input
BOUNDED = {
    ("incidents.rules.", ""): "searched by classify on windows of at most LINE_MAX bytes",
    ("incidents.fsutil:", r"\..+\."): "file names: at most NAME_MAX (255) bytes",
    ("incidents.redact:", ".*(?:"): "is_secret_key: a fullmatch of a key, anchored",
    ("incidents.redact_vetoes:", r"[ \t]*(?:- )?"): "fullmatch or match from a line's start",
    ("incidents.redact_vetoes:", r"test\w*\["): "fullmatch on the 80 characters before a key",
    ("incidents.review.gather:", "error_report_attempt_"): "file names: at most NAME_MAX bytes",
    ("incidents.signature:", ""): "a message cut to 16 * MAX_MESSAGE characters first",
    ("incidents.mirror.dialect:", ""): "the product's own SQL, not untrusted text",
    ("incidents.config_check:", ""): "the user's configuration, not untrusted text",
    ("incidents.serve.openapi:", ""): "the product's own routes, not untrusted text",
    ("incidents.fixers.sandbox:", r"\$\{"): "a tier's configured paths, not untrusted text",
}
SMALL, LARGE = 1024, 4096
GROWTH_MAX = 8.0  # linear: ~4 from SMALL to LARGE; quadratic: ~16


def _time(compiled: re.Pattern[str], text: str) -> float:
    start = time.perf_counter()
    for _m in compiled.finditer(text):
        pass
    return time.perf_counter() - start


def _growth(compiled: re.Pattern[str], source: str) -> float:
    """How much slower the pattern is on the LARGE texts aimed at it than on the SMALL ones:
    the slowest text of each size, each timed at its best of 3 (a loaded machine only slows
    a run down). Only a text that is slow at LARGE is timed again."""
    large = list(attacks(source, LARGE))
    worst = max(((_time(compiled, t), i) for i, t in enumerate(large)), default=(0.0, -1))
    if worst[0] < 0.002:
        return 1.0  # too fast to be super-linear at this size
    small = list(attacks(source, SMALL))[worst[1]]
    slow = min(_time(compiled, large[worst[1]]) for _ in range(3))
    return slow / max(min(_time(compiled, small) for _ in range(3)), 1e-6)


PATTERNS = package_patterns()


def _bounded(where: str, source: str) -> bool:
    return any(where.startswith(w) and source.startswith(s) for w, s in BOUNDED)


def test_the_audit_sees_every_kind_of_pattern() -> None:
    """The collector finds the patterns of each parser: were it to find none, the audit
    would pass on nothing."""
    places = set(PATTERNS.values())
    for module in ("incidents.redact:", "incidents.rules.", "incidents.signature",
                   "incidents.checks.testscan:", "incidents.checks.parsers.nunit:",
                   "incidents.checks.tamper"):  # fmt: skip
        assert any(p.startswith(module) for p in places), module
    assert len(PATTERNS) > 300
    # patterns built from parts at run time are seen too
    assert any("?P<keep>" in source for source in PATTERNS)


def test_every_pattern_on_unbounded_text_runs_in_linear_time() -> None:
    super_linear = []
    for source, where in PATTERNS.items():
        if _bounded(where, source):
            continue
        try:
            compiled = re.compile(source)
        except re.error:
            continue  # a bytes pattern shown as text: it holds no repeat it did not have
        growth = _growth(compiled, source)
        if growth > GROWTH_MAX:  # measured again: a burst of load can fake one
            growth = min(growth, _growth(compiled, source))
        if growth > GROWTH_MAX:
            super_linear.append(f"{where}: x{growth:.0f} :: {source[:80]}")
    assert super_linear == []


def test_the_audit_finds_super_linear_patterns() -> None:
    """The audit's positive control: the shapes it must catch, each caught."""
    for source in (r"\d+x", r"pragma\s*:?\s*no"):  # a retry at every position; adjacent
        assert _growth(re.compile(source), source) > GROWTH_MAX, source


def _parsers() -> dict[str, Callable[[str], object]]:
    from incidents.checks import testscan
    from incidents.checks.parsers import ToolOutput, _registry
    from incidents.classify import classify
    from incidents.redact import redact, redact_json
    from incidents.signature import normalize_message

    def tool(parse: Callable[[ToolOutput], object]) -> Callable[[str], object]:
        def run(text: str) -> object:
            try:
                return parse(ToolOutput(stdout=text, stderr=text, exit_code=1, report=text))
            except ValueError:
                return None  # ParseError: not that tool's output

        return run

    found: dict[str, Callable[[str], object]] = {
        "redact": redact,
        "redact_json": lambda text: redact_json({"log": text, "password": text}),
        "classify": lambda text: classify(text[:2000], text, 1),
        "signature": normalize_message,
        "testscan": testscan.named_tests,
    }
    for name, parse in _registry().items():
        found[f"parser:{name}"] = tool(parse)
    return found


@pytest.fixture(scope="module")
def crafted() -> str:
    return crafted_log(2 << 20, PATTERNS)


@pytest.mark.parametrize("name", sorted(_parsers()))
def test_every_parser_takes_a_crafted_log_in_bounded_time(crafted: str, name: str) -> None:
    """2 MiB crafted against every pattern: a super-linear pattern on it takes minutes;
    the bound is wide for a loaded machine (bench/hostile_text.py measures 16 MiB)."""
    parse = _parsers()[name]
    start = time.perf_counter()
    parse(crafted)
    assert time.perf_counter() - start < 20.0
