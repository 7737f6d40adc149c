"""Small real executables standing in for the programs that cannot run here (aider, codex,
claude, pwsh): a Python script with the program's name, first on PATH. Never a patch of
our own code (DEVELOPERS.md: real parts, not mocks)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`tmp_path/bin`, created and put first on PATH (once, however often it is asked)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != str(bin_dir):
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir


def stand_in(bin_dir: Path, name: str, body: str) -> str:
    """`bin_dir/name` runs `body` with os, sys, pathlib and time imported; returns `name`."""
    exe = bin_dir / name
    exe.write_text(f"#!{sys.executable}\nimport os, sys, pathlib, time\n{body}\n")
    exe.chmod(0o755)
    return name
