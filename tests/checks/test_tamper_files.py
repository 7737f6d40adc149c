"""The files `checks.tamper` compares: targets and check configs on disk, kept at the
baseline check and compared later (real folders, a FIFO, a coding cookie, a huge file)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from incidents.checks import tamper_files
from incidents.checks.tamper_files import MAX_TEXT_BYTES, capture, config_paths, findings

CODE = "def value() -> int:\n    return undefined_name\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project" / "ws"
    (path / "pkg").mkdir(parents=True)
    (path / "pkg" / "names.py").write_text(CODE)
    return path


def codes(
    ws: Path, before: tamper_files.State, allowed: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    found = findings(before, ws, ["pkg/names.py"], ["pkg/names.py"], allowed)
    return [(f.code or "", f.path) for f in found]


def test_the_places_a_tool_reads_its_config_from(ws: Path, tmp_path: Path) -> None:
    paths = set(config_paths(ws, ["pkg/names.py"]))
    for folder in (ws / "pkg", ws, ws.parent, tmp_path, Path("/")):
        for name in ("pyproject.toml", "ruff.toml", ".ruff.toml", "setup.cfg", "mypy.ini",
                     "pytest.ini", "tox.ini", "conftest.py"):  # fmt: skip
            assert folder / name in paths, folder / name
    assert Path(os.path.expanduser("~/.config/ruff/ruff.toml")) in paths
    conftest = ws / "pkg" / "conftest.py"
    assert conftest not in set(config_paths(ws, ["pkg/conftest.py"]))  # a target is no config


def test_a_config_created_above_the_workdir_and_one_changed_in_it(ws: Path) -> None:
    (ws / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    before = capture(ws, ["pkg/names.py"])
    (ws.parent / "ruff.toml").write_text("[lint]\nignore = ['F821']\n")
    (ws / "pyproject.toml").write_text("[project]\nname = 'x'\n[tool.mypy]\nignore_errors = true\n")
    assert codes(ws, before) == [
        ("check-config", str(ws.parent / "ruff.toml")),
        ("check-config", "pyproject.toml"),
    ]
    assert codes(ws, before, ("check-config",)) == []


def test_a_fifo_as_config_neither_blocks_nor_passes(ws: Path) -> None:
    before = capture(ws, ["pkg/names.py"])
    os.mkfifo(ws.parent / "setup.cfg")
    done: list[list[tuple[str, str]]] = []
    thread = threading.Thread(target=lambda: done.append(codes(ws, before)), daemon=True)
    thread.start()
    thread.join(10)
    assert done == [[("check-config", str(ws.parent / "setup.cfg"))]]


def test_a_target_in_another_encoding_is_still_read(ws: Path) -> None:
    target = ws / "pkg" / "names.py"
    before = capture(ws, ["pkg/names.py"])
    target.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + CODE.replace(
        "undefined_name", "undefined_name  # noqa").encode())  # fmt: skip
    assert codes(ws, before) == [("noqa", "pkg/names.py")]
    target.write_bytes(b"\xff\xfe" + CODE.replace("name\n", "name  # type: ignore\n").encode())
    assert codes(ws, before) == [("type-ignore", "pkg/names.py")]


def test_a_target_grown_too_large_to_compare_is_a_finding(ws: Path) -> None:
    before = capture(ws, ["pkg/names.py"])
    padding = "#" * 100 + "\n"
    text = CODE + "x = 1  # noqa\n" + padding * (MAX_TEXT_BYTES // len(padding) + 1)
    (ws / "pkg" / "names.py").write_text(text)
    assert codes(ws, before) == [("unreadable", "pkg/names.py")]


def test_the_first_baseline_before_the_step(ws: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    assert tamper_files.first_baseline(runs, 5) is None
    tamper_files.save_baseline(runs, 1, ws, ["pkg/names.py"])
    (ws / "pkg" / "names.py").write_text("x = 1\n")
    tamper_files.save_baseline(runs, 1, ws, ["pkg/names.py"])  # a redo keeps the first
    tamper_files.save_baseline(runs, 4, ws, ["pkg/names.py"])  # a requeued incident's
    (runs / "tamper_baseline_step_0.json").write_text("{}")
    first = tamper_files.first_baseline(runs, 5)
    assert first is not None and first["targets"] == {}  # step 0's, however empty
    (runs / "tamper_baseline_step_0.json").unlink()
    first = tamper_files.first_baseline(runs, 5)
    assert first is not None and first["targets"] == {"pkg/names.py": CODE}
    assert tamper_files.first_baseline(runs, 1) is None


def test_a_powershell_target_is_compared_as_powershell(ws: Path) -> None:
    script = ws / "pkg" / "calc.ps1"
    script.write_text("Describe 'x' {\n    It 'adds' {\n        1 | Should -Be 1\n    }\n}\n")
    before = capture(ws, ["pkg/names.py", "pkg/calc.ps1"])
    script.write_text(script.read_text().replace("It 'adds' {", "It 'adds' -Skip {"))
    found = findings(before, ws, ["pkg/names.py", "pkg/calc.ps1"], ["pkg/names.py"])
    assert [(f.code, f.path, f.line) for f in found] == [("test-skip", "pkg/calc.ps1", 2)]
