"""config_file: the stdlib reading of incidents.toml that capture and the check replay use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from incidents.capture_config import CAPTURE_KEYS, capture_settings
from incidents.config_file import beside, find_config, read_raw, read_table
from incidents.errors import ConfigError


def test_read_table_fills_defaults_and_keeps_given_values(tmp_path: Path) -> None:
    path = tmp_path / "incidents.toml"
    values = read_table(path, {"capture": {"dedupe": False}}, "capture", CAPTURE_KEYS)
    assert values == {**{k: v[0] for k, v in CAPTURE_KEYS.items()}, "dedupe": False}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (5, "capture: must be a table"),
        ({"bogus": 1}, "capture.bogus: unknown key"),
        ({"dedupe": 1}, "capture.dedupe: must be bool, got 1"),
        ({"log_tail_bytes": True}, "capture.log_tail_bytes: must be int, got True"),
        ({"log_tail_bytes": 10}, "capture.log_tail_bytes: must be >= 1024, got 10"),
        ({"audit_tail_lines": 10**6}, "capture.audit_tail_lines: must be <= 100000, got 1000000"),
    ],
)
def test_read_table_names_file_key_and_reason(tmp_path: Path, table: object, message: str) -> None:
    path = tmp_path / "incidents.toml"
    with pytest.raises(ConfigError) as info:
        read_table(path, {"capture": table}, "capture", CAPTURE_KEYS)
    assert str(info.value) == f"{path}: {message}"


def test_capture_settings_reads_root_and_table(tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text('root = "~/r"\n[capture]\nmax_message_chars = 80\n')
    root, settings = capture_settings(None)
    assert root == str(Path("~/r").expanduser()) and settings["max_message_chars"] == 80
    assert capture_settings(None) == (root, settings)
    (tmp_path / "incidents.toml").unlink()
    assert capture_settings(None) == (None, {k: v[0] for k, v in CAPTURE_KEYS.items()})


def test_paths_in_the_file_are_relative_to_its_folder(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    path = tmp_path / "etc" / "incidents.toml"
    path.write_text("")
    assert find_config(str(path)) == path and read_raw(path) == {}
    assert beside(path, "../cache") == str(tmp_path / "cache")


def test_the_loader_imports_no_pydantic(tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text('root = "r"\n[capture]\ndedupe = false\n')
    code = (
        "import sys, incidents.config_file as f; f.read_raw(f.find_config(None)); "
        "print(sorted(m for m in ('pydantic', 'typer', 'jsonschema') if m in sys.modules))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert (p.returncode, p.stdout.strip()) == (0, "[]"), p.stderr
