"""incidents.toml: where it is found, defaults, and errors that name file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from incidents.config import load_config
from incidents.errors import ConfigError
from tests.helpers import Cli, run_script


def test_defaults_without_a_file() -> None:
    cfg = load_config(None)
    assert cfg.root is None and cfg.capture.log_tail_bytes == 65536 and cfg.capture.dedupe


def test_found_in_the_current_directory_with_root_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text('root = "r"\n[capture]\ndedupe = false\n')
    cfg = load_config(None)
    assert cfg.root == str(tmp_path / "r") and cfg.capture.dedupe is False
    assert cfg.source == str(tmp_path / "incidents.toml")


def test_env_and_explicit_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = tmp_path / "etc"
    sub.mkdir()
    (sub / "a.toml").write_text('root = "ra"\n')
    (sub / "b.toml").write_text('root = "rb"\n')
    monkeypatch.setenv("INCIDENTS_CONFIG", str(sub / "a.toml"))
    assert load_config(None).root == str(sub / "ra")
    assert load_config(str(sub / "b.toml")).root == str(sub / "rb")
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(str(sub / "missing.toml"))


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("[capture]\nlog_tail_bytes = 'x'\n", "capture.log_tail_bytes", "integer"),
        ("[capture]\nlog_tail_bytes = 10\n", "capture.log_tail_bytes", "must be >= 1024"),
        ("[capture]\nbogus = 1\n", "capture.bogus", "unknown key"),
        ("nonsense = true\n", "nonsense", "unknown key"),
        ("root = 5\n", "root", "string"),
        ("[capture\n", "", "not valid TOML"),
    ],
)
def test_bad_keys_and_values_name_file_key_and_reason(
    tmp_path: Path, text: str, where: str, reason: str
) -> None:
    (tmp_path / "incidents.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(None)
    message = str(info.value)
    assert message.startswith(str(tmp_path / "incidents.toml"))
    assert where in message and reason in message, message


def test_cli_reports_config_errors_with_exit_2(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text("[capture]\nbogus = 1\n")
    r = cli("step", "incident_20260101_000000_x_abcdef")  # a command that acts refuses it
    assert r.code == 2 and "capture.bogus: unknown key" in r.err
    (tmp_path / "reports").mkdir()
    r = cli("status")  # one that only reads says so and reads with the defaults
    assert r.code == 0 and "capture.bogus: unknown key" in r.err


@pytest.mark.parametrize(
    "text",
    ["[capture]\nlog_tail_bytes = 10\n", "[capture]\naudit_tail_lines = 200000\n",
     "[capture]\nmax_message_chars = 5\n"],  # fmt: skip
)
def test_capture_finds_the_same_values_as_the_full_model(
    cli: Cli, tmp_path: Path, text: str
) -> None:
    """capture validates [capture] without pydantic; its bounds are the model's. It names
    the problem and, never losing a failure to it, captures with the default."""
    (tmp_path / "incidents.toml").write_text(text)
    key = text.split("\n")[1].split(" =")[0]
    with pytest.raises(ConfigError, match=f"capture.{key}"):
        load_config(None)
    r = cli("capture", "--step", "s", "--message", "m")
    assert r.code == 0 and f"capture.{key}" in r.err
    assert (tmp_path / "reports" / "error_inbox" / r.out.strip()).is_dir()


def test_a_config_that_is_not_utf8_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "nu.toml").write_bytes(b'root = "\xff"\n')
    argv = ("incident_20260101_000000_x_abcdef", "--resolved", "--reason", "r")
    p = run_script("error_archive.py", *argv, "--config", "nu.toml", cwd=tmp_path)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == f"incidents: {tmp_path / 'nu.toml'}: not UTF-8 (byte 0xff at offset 8)\n"
    assert sorted(q.name for q in tmp_path.iterdir()) == ["nu.toml"]
    p = run_script("error_status.py", "--config", "nu.toml", cwd=tmp_path)  # reads: a warning
    assert "warning" in p.stderr and "not UTF-8 (byte 0xff at offset 8)" in p.stderr


def test_capture_names_a_config_that_is_not_utf8_and_captures(tmp_path: Path) -> None:
    (tmp_path / "nu.toml").write_bytes(b'root = "\xff"\n')
    argv = ("--config", "nu.toml", "--step", "s", "--message", "m")
    p = run_script("error_capture.py", *argv, cwd=tmp_path)
    assert p.returncode == 0
    assert f"incidents: warning: {tmp_path / 'nu.toml'}: not UTF-8 (byte 0xff" in p.stderr
    assert (tmp_path / "reports" / "error_inbox" / p.stdout.strip()).is_dir()
