"""capture's fast command line (`incidents.capture_argv`) reads every line it accepts as
argparse (`capture.build_parser`) does, and leaves every other line to argparse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from incidents import capture_argv
from incidents.capture import build_parser
from incidents.errors import UsageError
from tests.helpers import SCRIPTS


def by_argparse(argv: list[str]) -> dict[str, object] | None:
    try:
        return vars(build_parser("incidents capture").parse_args(argv))
    except (UsageError, SystemExit):
        return None


PLAIN = [
    ["--step", "build", "--message", "boom"],
    ["--step=build", "--message=a=b", "--no-dedupe", "--json"],
    ["--message", "", "--step", "s", "--exit-code", "3", "--exit-code", "+7"],
    ["--step", "s", "--message", "m", "--python-file", "a.py", "--python-file=b.py",
     "--powershell-file", "c.ps1", "--verify", "pytest -q", "--verify=ruff check ."],
    ["--step", "s", "--message", "m", "--failure-class", "env", "--error-code", "TIMEOUT",
     "--run-id", "r1", "--log-file", "x.log", "--audit-file", "a.jsonl",
     "--context-json", "c.json", "--workdir", ".", "--root", "reports", "--config", "i.toml"],
    ["--step", "s", "--message=--not-an-option"],
]  # fmt: skip

LEFT_TO_ARGPARSE = [
    [],
    ["--help"],
    ["-h"],
    ["--step", "s"],  # --message is required
    ["--step", "s", "--message", "m", "--mess", "x"],  # an abbreviation
    ["--step", "s", "--message", "-x"],  # expected one argument
    ["--step", "s", "--message", "m", "--exit-code", "-1"],  # a negative number
    ["--step", "s", "--message", "m", "--exit-code", "three"],
    ["--step", "s", "--message", "m", "--failure-class", "flaky"],
    ["--step", "s", "--message", "m", "--json=yes"],
    ["--step", "s", "--message", "m", "extra"],
    ["--step", "s", "--message", "m", "--"],
    ["--step", "s", "--message"],
]


@pytest.mark.parametrize("argv", PLAIN)
def test_a_plain_line_reads_as_argparse_reads_it(argv: list[str]) -> None:
    fast = capture_argv.parse(argv)
    assert fast is not None
    assert vars(fast) == by_argparse(argv)


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE)
def test_any_other_line_is_left_to_argparse(argv: list[str]) -> None:
    assert capture_argv.parse(argv) is None


TOKENS = st.sampled_from(
    ["--step", "--message", "--exit-code", "--failure-class", "--error-code", "--verify",
     "--python-file", "--json", "--no-dedupe", "--root", "--mess", "--", "-h", "-1", "12",
     "env", "TIMEOUT", "x", "", "a b", "--step=s", "--message=m", "--json=1", "--verify=v"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, max_size=8))
def test_whatever_it_accepts_argparse_reads_the_same(argv: list[str]) -> None:
    fast = capture_argv.parse(argv)
    if fast is not None:
        assert vars(fast) == by_argparse(argv)


def test_the_script_takes_the_fast_line_without_importing_argparse(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "INCIDENTS_ROOT": str(tmp_path / "reports")}
    script = str(SCRIPTS / "error_capture.py")
    argv = [sys.executable, "-X", "importtime", script, "--step", "s", "--message", "m"]
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if "|" in line}
    assert "argparse" not in imported
    # and --help is still argparse's
    p = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("usage: incidents capture [-h] --step")


def test_the_choices_are_the_values_of_the_codes_enums() -> None:
    """capture_argv spells the choices out (no enum on capture's path): they must stay the
    values argparse offers, those of incidents.codes."""
    from incidents.codes import ErrorCode, FailureClass

    assert {
        "failure_class": frozenset(c.value for c in FailureClass),
        "error_code": frozenset(c.value for c in ErrorCode),
    } == capture_argv.CHOICES
