"""The reproduction run as the user ran it (`checks.as_user`): real subprocesses in a
real folder, a bundle's `context.json` as `incidents run` writes it."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from incidents.checks.as_user import loadable_files, run_as_user, take_back
from incidents.verify import VerifySettings

NEEDS_TOKEN = "import os, sys\nsys.exit(0 if os.environ.get('CALC_API_TOKEN') == 's3cret' else 3)\n"


def bundle(tmp_path: Path, ws: Path, argv: list[str], env: dict[str, str | None]) -> Path:
    folder = tmp_path / "bundle"
    folder.mkdir()
    context = {"command": argv, "cwd": str(ws), "env": env}
    (folder / "context.json").write_text(json.dumps(context))
    return folder


def test_a_secret_recorded_by_name_takes_the_judging_process_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "check.py").write_text(NEEDS_TOKEN)
    argv = [sys.executable, "check.py"]
    env = {"PATH": os.environ["PATH"], "CALC_API_TOKEN": None}
    folder = bundle(tmp_path, ws, argv, env)
    monkeypatch.setenv("CALC_API_TOKEN", "s3cret")
    out = run_as_user(folder, [shlex.join(argv)], VerifySettings())
    assert not out.findings and not out.infra
    assert [r.exit_code for r in out.runs] == [0]
    # the value is the judging process's, never written into the bundle
    assert all("s3cret" not in p.read_text() for p in folder.iterdir())
    # control: a judging process without the secret runs without it, and fails
    monkeypatch.delenv("CALC_API_TOKEN")
    out = run_as_user(folder, [shlex.join(argv)], VerifySettings())
    [finding] = out.findings
    assert finding.hard and "exited with 3" in finding.message


def test_a_name_not_recorded_as_a_secret_does_not_take_the_judging_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "check.py").write_text(NEEDS_TOKEN)
    argv = [sys.executable, "check.py"]
    folder = bundle(tmp_path, ws, argv, {"PATH": os.environ["PATH"]})  # the user had none
    monkeypatch.setenv("CALC_API_TOKEN", "s3cret")
    [finding] = run_as_user(folder, [shlex.join(argv)], VerifySettings()).findings
    assert "exited with 3" in finding.message


def test_leftovers_are_removed_and_all_but_bytecode_fail(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "__pycache__" / "old.cpython-312.pyc").write_bytes(b"x")
    before = loadable_files(str(tmp_path))
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-312.pyc").write_bytes(b"x")
    (tmp_path / "conftest.py").write_text("import sys\n")
    (tmp_path / "pkg" / "evil.pth").write_text("import os\n")
    failing = take_back(str(tmp_path), before)
    assert failing == ["conftest.py", os.path.join("pkg", "evil.pth")]
    assert not (tmp_path / "conftest.py").exists()
    assert not (tmp_path / "pkg" / "__pycache__" / "mod.cpython-312.pyc").exists()
    assert (tmp_path / "pkg" / "__pycache__" / "old.cpython-312.pyc").exists()  # not this run's
