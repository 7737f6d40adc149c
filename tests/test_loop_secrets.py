"""Credentials on a failed command's line never reach what the loops store: the tracker's
and the executor's records of real `CalledProcessError` and `TimeoutExpired` objects, whose
`str()` prints the argv as a Python list (`['curl', '-u', 'admin:PW', ...]`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from incidents.executor import ExecutorConfig, ExecutorState
from incidents.layout import Root
from incidents.tracker import ErrorSignatureTracker
from tests.helpers import use_config

SECRETS = ("SuperSecret99", "Xk29pwSecret", "Hunter2pwSecret", "Tok3nSecret77")


def _failures(tmp_path: Path) -> list[BaseException]:
    """Real exceptions from real processes, each with a credential on its command line."""
    sshpass = tmp_path / "bin" / "sshpass"
    sshpass.parent.mkdir()
    sshpass.write_text("#!/bin/sh\nexit 5\n")
    sshpass.chmod(0o755)
    quit3 = [sys.executable, "-c", "import sys; sys.exit(3)"]
    runs = [
        ([*quit3, "-u", "admin:SuperSecret99", "https://x"], None),
        ([str(sshpass), "-p", "Xk29pwSecret", "ssh", "deploy@host"], None),
        ([*quit3, "--password", "Hunter2pwSecret"], None),
        ([sys.executable, "-c", "import time; time.sleep(30)", "--token", "Tok3nSecret77"], 0.3),
    ]
    caught: list[BaseException] = []
    for argv, timeout in runs:
        with pytest.raises((subprocess.CalledProcessError, subprocess.TimeoutExpired)) as info:
            subprocess.run(argv, check=True, timeout=timeout, capture_output=True)
        caught.append(info.value)
    for exc, secret in zip(caught, SECRETS, strict=True):
        assert secret in str(exc)  # the raw form holds it
    return caught


def _leaks(*places: Path) -> list[str]:
    found = []
    for place in places:
        files = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]
        for path in files:
            data = path.read_bytes()
            found += [f"{path}: {s}" for s in SECRETS if s.encode() in data]
    return found


def test_tracker_and_executor_store_no_credential_from_a_failed_commands_argv(
    root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, "[policy]\nsignature_budget = 1\nescalation_threshold = 50\n")
    failures = _failures(tmp_path)
    counts: dict[str, int] = {}
    tracker = ErrorSignatureTracker(root, counts, step="deploy")
    decisions = [tracker.record_and_check(exc, tried="ran it") for exc in failures * 2]
    assert {d.action for d in decisions} == {"retry", "escalate"}
    for d in decisions:
        assert not any(s in d.signature or s in d.reason for s in SECRETS)
        if d.retry_context is not None:
            assert not any(s in d.retry_context.render() for s in SECRETS)
    assert counts and not any(s in key for key in counts for s in SECRETS)

    state_file = tmp_path / "spec" / ".executor-state.db"
    with ExecutorState(ExecutorConfig(state_file=str(state_file), root=root)) as state:
        for n, exc in enumerate(failures):
            state.record_attempt(f"task-{n}", False, 1.0, error=str(exc), output=repr(exc))
    assert _leaks(root.path, state_file.parent) == []
