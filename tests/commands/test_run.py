"""`incidents run -- CMD`: output passes through, exit code is kept, failures are captured."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from incidents.layout import Root
from tests.helpers import incidents


def inbox(root: Root) -> list[Path]:
    return sorted(root.inbox.iterdir()) if root.inbox.exists() else []


def test_success_passes_output_through_and_captures_nothing(root: Root) -> None:
    p = incidents(
        "run",
        "--step",
        "ok",
        "--",
        sys.executable,
        "-c",
        "print('hello'); import sys; print('warn', file=sys.stderr)",
    )
    assert p.returncode == 0
    assert p.stdout == "hello\n" and "warn" in p.stderr
    assert inbox(root) == []


def test_failure_keeps_exit_code_and_captures_output_tail(root: Root) -> None:
    code = "import sys; print('step output'); print('Traceback: KeyError', file=sys.stderr); sys.exit(3)"
    p = incidents("run", "--step", "build", "--", sys.executable, "-c", code)
    assert p.returncode == 3
    assert p.stdout == "step output\n"
    [folder] = inbox(root)
    assert folder.name in p.stderr
    doc = json.loads((folder / "incident.json").read_text())
    assert doc["exit_code"] == 3 and doc["step"] == "build"
    log = (folder / "log_tail.txt").read_text()
    assert "step output" in log and "KeyError" in log
    ctx = json.loads((folder / "context.json").read_text())
    assert ctx["command"][0] == sys.executable


def test_timeout_kills_the_command_and_records_TIMEOUT(root: Root) -> None:
    p = incidents(
        "run",
        "--step",
        "slow",
        "--timeout",
        "0.5",
        "--",
        sys.executable,
        "-c",
        "import time; time.sleep(30)",
    )
    assert p.returncode == 124
    [folder] = inbox(root)
    doc = json.loads((folder / "incident.json").read_text())
    assert doc["error_code"] == "TIMEOUT" and doc["exit_code"] == 124
    assert doc["failure_class"] == "transient"


def test_missing_program_exits_127_and_is_captured(root: Root) -> None:
    p = incidents("run", "--step", "x", "--", "definitely-not-a-program-xyz")
    assert p.returncode == 127
    [folder] = inbox(root)
    assert (
        "definitely-not-a-program-xyz"
        in json.loads((folder / "incident.json").read_text())["message"]
    )


def test_run_without_a_command_is_bad_input(root: Root) -> None:
    p = incidents("run", "--step", "x")
    assert p.returncode == 2 and "give the command after --" in p.stderr
    assert not root.path.exists()
