"""Helpers shared by the tests: where things are, the files and config pieces several tests
break and fix, the in-process `cli` runner's type, real subprocesses of `incidents` and of
the scripts, a capture through the CLI, and what the mirror and a bundle's state.json say
about an incident. Fixtures are in conftest.py; stand-in executables in stand_ins.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from incidents.layout import Root
from incidents.models import ErrorPipelineContext

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SCRIPTS = REPO / "scripts"
FIXTURES = TESTS / "fixtures"

# files the tests capture failures of
BROKEN = "def f(:\n    pass\n"  # a syntax error: no autofix, a fixer must mend it
FIXED = "def f() -> None:\n    pass\n"
CLEAN = "def total(amounts: list[int]) -> int:\n    return sum(amounts)\n"
MESSY = "import os\nimport json\n\n\ndef build(rows):\n    return json.dumps({'n':len(rows)})\n"
TWO_TYPE_ERRORS = 'def first() -> int:\n    return "one"\n\n\ndef second() -> str:\n    return 2\n'
# pieces of incidents.toml
FAST = '[checks]\ntools = ["ruff", "ruff-format"]\n'
TYPED = '[checks]\ntools = ["ruff", "ruff-format", "mypy"]\n'
TIERS_OFF = (
    '[tiers.aider]\nmode = "off"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)


@dataclass
class Result:
    """What one in-process `incidents ARGS` gave: exit code, stdout, stderr."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Cli(Protocol):
    """The `cli` fixture: runs `incidents ARGS` in-process."""

    def __call__(self, *args: str) -> Result: ...


def capture(
    cli: Cli,
    *extra: str,
    step: str = "lint",
    message: str | None = None,
    ws: Path | None = None,
    target: str | None = None,
    content: str | None = None,
) -> str:
    """`incidents capture --no-dedupe` in-process; asserts it succeeded, returns the incident id.
    `ws` is its workdir and `target` its --python-file, written into `ws` with `content` first
    when that is given; the message defaults to "<target> failed its checks". `extra` are
    more options."""
    if message is None:
        message = f"{target} failed its checks"
    args = ["capture", "--step", step, "--message", message, "--no-dedupe"]
    if ws is not None:
        args += ["--workdir", str(ws)]
    if target is not None:
        if content is not None:
            assert ws is not None, "a target's content is written into ws"
            (ws / target).write_text(content)
        args += ["--python-file", target]
    r = cli(*args, *extra)
    assert r.code == 0, r.err
    return r.out.strip()


def incidents(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`python -m incidents ARGS` as a real process; `env` is its whole environment (this
    process's by default)."""
    return subprocess.run(
        [sys.executable, "-m", "incidents", *args],
        capture_output=True, text=True, env=dict(os.environ if env is None else env),
        cwd=cwd, timeout=timeout, check=check,
    )  # fmt: skip


def run_script(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `scripts/<name>` as a real subprocess, the way a failing pipeline would."""
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args],
        capture_output=True, text=True, env=dict(os.environ), cwd=cwd,
    )  # fmt: skip


def use_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, name: str = "incidents"
) -> Path:
    """Write `text` to `tmp_path/<name>.toml` and point INCIDENTS_CONFIG at it."""
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    monkeypatch.setenv("INCIDENTS_CONFIG", str(path))
    return path


def ctx_of(root: Root, incident_id: str) -> ErrorPipelineContext:
    """The incident's state.json, wherever its folder is."""
    _, folder = root.locate(incident_id)
    return ErrorPipelineContext.model_validate_json((folder / "state.json").read_text())


def events(root: Root, incident_id: str | None = None) -> list[str]:
    """The mirror's event types, oldest first: of one incident, or of all."""
    with sqlite3.connect(root.db_path) as conn:
        if incident_id is None:
            rows = conn.execute("SELECT event_type FROM events ORDER BY id")
        else:
            rows = conn.execute(
                "SELECT event_type FROM events WHERE incident_id = ? ORDER BY id", (incident_id,)
            )
        return [r[0] for r in rows]


def tree(path: Path) -> dict[str, bytes]:
    """Every file under `path` with its bytes: to prove a command changed nothing."""
    if not path.exists():
        return {}
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }
