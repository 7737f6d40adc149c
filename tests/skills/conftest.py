"""The skills' tests run as an agent would: this venv's `incidents` (and the check tools
it installs, which plans name as verification commands) first on PATH."""

from __future__ import annotations

import os

import pytest

from tests.skills.play import BIN


@pytest.fixture(autouse=True)
def _venv_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
