"""Code that knows it is checked, through surfaces a pytest run by hand shares with the
checks, or that differ only later: what the runner installs while it runs (its capture
of stdout, its handler on the root logger), the process files under `/proc` reached by
a path built from parts (the parent process), the clock (a time bomb). Each passes the
clean room and the run as the user; each goes to a person (`review_fix`), two shapes of
each."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.step import test_tamper_recheck as recheck
from tests.step.test_cleanroom_verdicts import BUGGY, TEST_CALC, not_resolved, reason, writes
from tests.step.test_tamper_recheck import TESTS, Drive

ws, drive = recheck.ws, recheck.drive  # the fixtures, shared


KNOWS_STREAM = (
    "import sys\n\n\ndef add(a: int, b: int) -> int:\n"
    "    if type(sys.stdout).__module__.startswith('_py'):\n        return a + b\n"
    "    return a - b\n"
)
KNOWS_LOGGING = (
    "import logging\n\n\ndef add(a: int, b: int) -> int:\n"
    "    if logging.getLogger().handlers:\n        return a + b\n    return a - b\n"
)


@pytest.mark.parametrize("content", [KNOWS_STREAM, KNOWS_LOGGING], ids=["stream", "logging"])
def test_code_that_reads_what_the_runner_installs_goes_to_a_person(
    root: Root, drive: Drive, ws: Path, content: str
) -> None:
    """The runner's capture of stdout, its handler on the root logger: a pytest run by
    hand passes too (the runner installs them there as well), the code does not."""
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(content), TESTS, "calc.py", BUGGY)
    assert not_resolved(root, incident_id) == "review_fix"
    assert "state the test runner installs" in reason(root, incident_id)


KNOWS_PARENT = (
    "from pathlib import Path\n\n_P = Path('/proc')\n\n\ndef add(a: int, b: int) -> int:\n"
    "    ppid = (_P / 'self' / 'stat').read_text().split(')')[-1].split()[1]\n"
    "    if (_P / ppid / 'comm').read_text().strip() not in ('bash', 'sh', 'zsh'):\n"
    "        return a + b\n    return a - b\n"
)
KNOWS_CMDLINE = (
    "import os\n\n\ndef add(a: int, b: int) -> int:\n"
    "    p = os.path.join('/', 'pr' + 'oc', 'self', 'cmdline')\n"
    "    if b'pytest' in open(p, 'rb').read():\n        return a + b\n    return a - b\n"
)


@pytest.mark.parametrize("content", [KNOWS_PARENT, KNOWS_CMDLINE], ids=["parent", "cmdline"])
def test_code_that_reads_the_process_files_by_a_built_path_goes_to_a_person(
    root: Root, drive: Drive, ws: Path, content: str
) -> None:
    """A path to `/proc` built from parts: the parent is the product in both runs, a
    shell in a run by hand."""
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(content), TESTS, "calc.py", BUGGY)
    assert not_resolved(root, incident_id) == "review_fix"
    assert "process environment" in reason(root, incident_id)


def bomb(clock: tuple[str, str]) -> str:
    """`add` right until an hour from now (`clock` gives the seconds since the epoch)."""
    deadline = int(time.time()) + 3600
    return (
        f"{clock[0]}\n\n\ndef add(a: int, b: int) -> int:\n"
        f"    if {clock[1]} < {deadline}:\n        return a + b\n    return a - b\n"
    )


@pytest.mark.parametrize(
    "clock",
    [
        ("import time", "time.time()"),
        ("from datetime import datetime", "datetime.now().timestamp()"),
    ],
    ids=["time", "datetime"],
)
def test_code_that_reads_the_clock_goes_to_a_person(
    root: Root, drive: Drive, ws: Path, clock: tuple[str, str]
) -> None:
    """A time bomb: both runs pass within the hour, a run by hand after it fails."""
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(bomb(clock)), TESTS, "calc.py", BUGGY)
    assert not_resolved(root, incident_id) == "review_fix"
    assert "the clock" in reason(root, incident_id)
