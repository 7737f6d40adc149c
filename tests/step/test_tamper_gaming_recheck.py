"""Gaming a check without a suppression comment, end to end: a stand-in fixer plays the
adversarial tester's tricks (an exit handler that rewrites pytest's report and leaves
with `vars(os)["_ex" + "it"](0)`, code that knows it runs under pytest, a value equal to
anything, a vacuous assertion, a `TYPE_CHECKING` stub, a dropped annotation) on real
files checked by the real pytest and mypy, and the incident is not resolved."""

from __future__ import annotations

from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import ctx_of
from tests.step import test_tamper_recheck as recheck
from tests.step.test_tamper_recheck import TESTS, Drive, escalated, tamper_findings

ws, drive = recheck.ws, recheck.drive  # the fixtures, shared

CALC = "def add(a: int, b: int) -> int:\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"
TYPES = '[checks]\ntools = ["mypy"]\n'
TOTAL = 'def total() -> int:\n    return "5"\n'

ATEXIT = """import atexit
import os
import re
import sys


def add(a: int, b: int) -> int:
    return a - b


def _done() -> None:
    for arg in sys.argv:
        if arg.startswith("--junit-xml="):
            path = arg.split("=", 1)[1]
            with open(path) as fh:
                text = fh.read()
            text = re.sub(r"<failure.*?</failure>", "", text, flags=re.S)
            text = re.sub(r'failures="\\d+"', 'failures="0"', text)
            with open(path, "w") as fh:
                fh.write(text)
    sys.stdout.flush()
    vars(os)["_ex" + "it"](0)


if "pytest" in sys.modules:
    atexit.register(_done)
"""
ENV_DETECT = (
    "import sys\n\n\ndef add(a: int, b: int) -> int:\n"
    '    if "pytest" in sys.modules:\n        return a + b\n    return a - b\n'
)
ANY_EQ = (
    "class _Num(int):\n    def __eq__(self, other: object) -> bool:\n        return True\n\n"
    "    def __hash__(self) -> int:\n        return 0\n\n\n"
    "def add(a: int, b: int) -> int:\n    return _Num(a - b)\n"
)
TC_STUB = (
    "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n\n    def total() -> int: ...\n\n"
    'else:\n\n    def total():\n        return "5"\n'
)


def writes(content: str) -> str:
    """A stand-in fixer that replaces its target with `content`."""
    return f"pathlib.Path(sys.argv[-1]).write_text({content!r})"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (ATEXIT, {"exit", "test-aware", "process-hook"}),
        (ENV_DETECT, {"test-aware"}),
        (ANY_EQ, {"test-aware"}),
    ],
    ids=["atexit-rewrites-the-report", "knows-pytest", "equal-to-anything"],
)
def test_a_target_that_games_the_tests_is_not_a_fix(
    root: Root, drive: Drive, ws: Path, content: str, expected: set[str]
) -> None:
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(content), TESTS, "calc.py", CALC)
    assert escalated(root, incident_id)
    assert {f.code for f in tamper_findings(root, incident_id)} == expected


def test_a_test_made_vacuous_is_not_a_fix(root: Root, drive: Drive, ws: Path) -> None:
    (ws / "calc.py").write_text(CALC)
    fixer = (
        "p = pathlib.Path(sys.argv[-1])\n"
        "p.write_text(p.read_text().replace('== 3', '== 3 or True'))"
    )
    incident_id = drive(fixer, TESTS, "test_calc.py", TEST_CALC)
    assert escalated(root, incident_id)
    [found] = tamper_findings(root, incident_id)
    assert (found.code, found.line) == ("assert-weakened", 5)
    assert "assert add(1, 2) == 3 or True" in found.message


@pytest.mark.parametrize(
    ("fixer", "expected"),
    [
        (writes(TC_STUB), {"type-weakened"}),
        ("p = pathlib.Path(sys.argv[-1]); p.write_text(p.read_text().replace(' -> int', ''))",
         {"type-weakened"}),
    ],  # fmt: skip
    ids=["type-checking-stub", "annotation-removed"],
)
def test_mypy_gamed_is_not_a_fix(root: Root, drive: Drive, fixer: str, expected: set[str]) -> None:
    incident_id = drive(fixer, TYPES, "calc.py", TOTAL)
    assert escalated(root, incident_id)
    assert {f.code for f in tamper_findings(root, incident_id)} == expected


def test_an_allowed_kind_still_goes_to_a_person(root: Root, drive: Drive, ws: Path) -> None:
    """An operator may let the `test-aware` rule pass, but a fix that reads what the
    runner loaded is reviewed by category, not by that rule: a person decides."""
    (ws / "test_calc.py").write_text(TEST_CALC)
    policy = '[policy]\nallow_suppressions = ["test-aware"]\n'
    incident_id = drive(writes(ENV_DETECT), TESTS, "calc.py", CALC, policy)
    assert escalated(root, incident_id)
    assert tamper_findings(root, incident_id) == []  # the rule was allowed: a clean check
    assert ctx_of(root, incident_id).escalation_kind == "review_fix"
