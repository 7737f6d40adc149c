"""Shared fixtures. Every test runs in its own temp dir with its own reports root, and a
guard fails any test that writes into the checkout's real `reports/`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from incidents.cli import main
from incidents.layout import Root

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _real_reports_snapshot() -> set[str]:
    base = REPO / "reports"
    return {str(p.relative_to(base)) for p in base.rglob("*")} if base.exists() else set()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    before = _real_reports_snapshot()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INCIDENTS_ROOT", str(tmp_path / "reports"))
    monkeypatch.setenv("INCIDENTS_CRASH_DIR", str(tmp_path / "crash"))
    monkeypatch.delenv("INCIDENTS_CONFIG", raising=False)
    yield
    assert _real_reports_snapshot() == before, "a test wrote into the checkout's reports/"


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder first on PATH for stand-in executables (tests/stand_ins.py)."""
    from tests.stand_ins import on_path

    return on_path(tmp_path, monkeypatch)


@pytest.fixture
def root(tmp_path: Path) -> Root:
    return Root(tmp_path / "reports")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> object:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run `incidents ARGS` in-process; returns exit code, stdout, stderr."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def run_script(name: str, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run `scripts/<name>` as a real subprocess, the way a failing pipeline would."""
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **kwargs.pop("env", {})},  # type: ignore[dict-item]
        **kwargs,  # type: ignore[arg-type]
    )


def tree(path: Path) -> dict[str, bytes]:
    """Every file under `path` with its bytes: to prove a command changed nothing."""
    if not path.exists():
        return {}
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }
