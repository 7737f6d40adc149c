"""A pytest plugin of ours that tells whether the test runner itself was patched during the
run: loaded by the pytest profile with `-p incidents.checks.pytest_guard`.

Code under test runs in pytest's own process, so a module can make every test pass by
replacing how pytest runs or reports tests (`_pytest.python.Function.runtest = lambda
self: None`), however the import is spelled. The guard is imported before any conftest.py
or test module (pytest imports `-p` plugins while it parses its arguments), notes the
identity (and code object) of each function that decides an outcome, and compares them
after every test's teardown (so a `monkeypatch` a fixture undoes is not a finding) and at
the end of the session. It writes its verdict into the JUnit report as the testsuite
property `incidents-guard`: `intact`, or `patched: <names>`. The JUnit parser turns a
`patched` verdict, or a missing one (the report was written by something else, or the run
was cut short), into a hard `runner-patched` finding. When it cannot attach a verdict (a
pytest that keeps its JUnit writer where the guard does not look), it says so on stderr
(`incidents-guard: unavailable: <why>`) and the parser reports an infrastructure failure:
the check could not be made, which is not evidence of a cheat. Code under test could print
that line too, but it only trades a tamper finding for an infrastructure failure: neither
is a success.

It imports nothing but pytest's own modules, changes nothing, and costs a few dozen attribute
reads per test. Still open: code can restore what it patched before the next teardown, or
rewrite the verdict itself; the static `runner-patch` rules (checks/tamper_runner.py) are
the other half.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

PROPERTY = "incidents-guard"
INTACT = "intact"
# written on stderr when the guard cannot attach its verdict (a pytest it does not know):
# the parser reports the run as an infrastructure failure, not as tamper
UNAVAILABLE = "incidents-guard: unavailable: "

# (module, class or "", attribute): what decides whether a test passed and how it is reported
WATCHED: tuple[tuple[str, str, str], ...] = (
    ("_pytest.python", "Function", "runtest"),
    ("_pytest.python", "Function", "setup"),
    ("_pytest.python", "", "pytest_pyfunc_call"),
    ("_pytest.runner", "", "runtestprotocol"),
    ("_pytest.runner", "", "call_and_report"),
    ("_pytest.runner", "", "call_runtest_hook"),
    ("_pytest.runner", "", "pytest_runtest_call"),
    ("_pytest.runner", "", "pytest_runtest_makereport"),
    ("_pytest.runner", "CallInfo", "from_call"),
    ("_pytest.reports", "TestReport", "from_item_and_call"),
    ("_pytest.reports", "TestReport", "__init__"),
    ("_pytest.reports", "BaseReport", "passed"),
    ("_pytest.reports", "BaseReport", "failed"),
    ("_pytest.junitxml", "LogXML", "pytest_runtest_logreport"),
    ("_pytest.junitxml", "LogXML", "pytest_sessionfinish"),
    ("_pytest.junitxml", "_NodeReporter", "append_failure"),
    ("_pytest.junitxml", "_NodeReporter", "append_error"),
    ("_pytest.junitxml", "_NodeReporter", "to_xml"),
    ("_pytest.unittest", "TestCaseFunction", "runtest"),
    ("_pytest.main", "", "pytest_runtestloop"),
    ("_pytest.outcomes", "", "fail"),
    ("_pytest.outcomes", "", "skip"),
    ("_pytest.outcomes", "", "exit"),
    ("pluggy._callers", "", "_multicall"),
    ("pluggy._manager", "PluginManager", "_hookexec"),
    ("pluggy._hooks", "HookCaller", "__call__"),
    ("unittest.case", "TestCase", "run"),
    ("unittest.case", "TestCase", "__call__"),
    ("unittest.case", "TestCase", "debug"),
    ("builtins", "", "AssertionError"),
)

_MISSING = object()


def _lookup(module: str, owner: str, name: str) -> tuple[object, object, object]:
    """(the module object, the attribute as stored, its code object) now."""
    mod = sys.modules.get(module, _MISSING)
    holder: Any = mod
    if owner and holder is not _MISSING:
        holder = getattr(holder, owner, _MISSING)
    value: Any = _MISSING
    if holder is not _MISSING:
        # as stored on the class, not through descriptors (a property stays a property)
        namespace = getattr(holder, "__dict__", {})
        value = namespace.get(name, _MISSING) if owner else getattr(holder, name, _MISSING)
    target = getattr(value, "fget", value)  # a property's getter
    target = getattr(target, "__func__", target)  # a classmethod's function
    return mod, value, getattr(target, "__code__", None)


def snapshot() -> dict[str, tuple[object, object, object]]:
    for module in {m for m, _, _ in WATCHED}:
        try:
            __import__(module)
        except ImportError:
            continue
    return {".".join(filter(None, key)): _lookup(*key) for key in WATCHED}


_BEFORE = snapshot()  # at import: before any conftest.py or test module runs
_changed: dict[str, None] = {}


def changed() -> list[str]:
    """What differs from the snapshot now (kept: a patch undone later was still there)."""
    now = snapshot()
    for name, (mod, value, code) in _BEFORE.items():
        m, v, c = now[name]
        if m is not mod or v is not value or c is not code:
            _changed.setdefault(name)
    return list(_changed)


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "teardown":
        changed()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: Any) -> None:
    """Before the JUnit report is written (this runs first: see `tryfirst`)."""
    found = changed()
    verdict = INTACT if not found else "patched: " + ", ".join(found)
    if found:
        sys.stderr.write(f"incidents: the test runner was patched during the run: {verdict}\n")
    xml, why = _junit_xml(session.config)
    if xml is not None:
        xml.add_global_property(PROPERTY, verdict)
    else:  # it cannot work here: say so, so the parser reports an infrastructure failure
        sys.stderr.write(f"{UNAVAILABLE}{why}\n")


def _junit_xml(config: Any) -> tuple[Any, str]:
    """pytest's JUnit writer (LogXML) for this run, however this pytest version keeps it,
    or (None, why not)."""
    try:
        from _pytest import junitxml
    except ImportError as exc:
        return None, f"pytest has no junitxml module ({exc})"
    key = getattr(junitxml, "xml_key", None)
    for holder in ("stash", "_store"):  # pytest >= 7; 6.x
        store = getattr(config, holder, None)
        if key is not None and store is not None:
            try:
                return store[key], ""
            except (KeyError, TypeError):
                continue
    xml = getattr(config, "_xml", None)  # pytest < 6
    if xml is not None:
        return xml, ""
    version = getattr(pytest, "__version__", "?")
    return None, f"pytest {version} keeps no JUnit writer this guard can find"
