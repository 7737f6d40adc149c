"""Capture never loses a failure to our own configuration: `capture`, `run` and
`error_capture.py` take a problem in incidents.toml (a typo, a bad value, a file that does
not parse) as a warning naming the file and the key, noted in the bundle, and record the
failure with the defaults; `run` always runs its command and exits with its own code. The
commands that act on incidents still refuse the same file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import Cli, incidents, run_script

TYPO = "[policy]\nmax_regresions = 5\n"


def only_bundle(root: Root) -> Path:
    [folder] = sorted(root.inbox.iterdir())
    return folder


def read(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text())


@pytest.fixture
def typo(tmp_path: Path) -> Path:
    path = tmp_path / "incidents.toml"
    path.write_text(TYPO)
    return path


def test_capture_with_a_typo_in_the_config_records_the_failure(
    cli: Cli, root: Root, typo: Path
) -> None:
    r = cli("capture", "--step", "deploy", "--message", "upload failed")
    assert r.code == 0, r.err
    assert f"{typo}: policy.max_regresions" in r.err and "warning" in r.err
    folder = only_bundle(root)
    assert folder.name == r.out.strip()
    assert read(folder, "incident.json")["message"] == "upload failed"
    [note] = read(folder, "context.json")["capture_warnings"]
    assert "policy.max_regresions" in note and str(typo) in note


def test_a_bad_value_falls_back_to_its_default_and_keeps_the_sound_keys(
    cli: Cli, root: Root, tmp_path: Path
) -> None:
    (tmp_path / "incidents.toml").write_text(
        "[capture]\nlog_tail_bytes = 'big'\nmax_message_chars = 80\n"
    )
    r = cli("capture", "--step", "s", "--message", "x" * 500)
    assert r.code == 0 and "capture.log_tail_bytes" in r.err
    assert len(read(only_bundle(root), "incident.json")["message"]) == 80  # the sound key holds


def test_a_config_that_does_not_parse_still_captures(cli: Cli, root: Root, tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text("[capture\n")
    r = cli("capture", "--step", "s", "--message", "m")
    assert r.code == 0 and "not valid TOML" in r.err
    assert only_bundle(root).name == r.out.strip()


def test_error_capture_script_records_the_failure_despite_the_typo(root: Root, typo: Path) -> None:
    p = run_script("error_capture.py", "--step", "nightly", "--message", "boom")
    assert p.returncode == 0, p.stderr
    assert "policy.max_regresions" in p.stderr
    assert only_bundle(root).name == p.stdout.strip()


def test_an_empty_message_becomes_the_steps_default(cli: Cli, root: Root) -> None:
    r = cli("capture", "--step", "backup", "--message", "  ", "--exit-code", "4")
    assert r.code == 0, r.err
    assert (
        read(only_bundle(root), "incident.json")["message"] == "step backup failed with exit code 4"
    )


def test_run_with_a_typo_runs_a_passing_step_and_exits_zero(root: Root, typo: Path) -> None:
    p = incidents("run", "--step", "ok", "--", sys.executable, "-c", "print('did run')")
    assert (p.returncode, p.stdout) == (0, "did run\n"), p.stderr
    assert "policy.max_regresions" in p.stderr
    assert not root.inbox.exists() or not any(root.inbox.iterdir())


def test_run_with_a_typo_captures_a_failing_step_with_its_exit_code(root: Root, typo: Path) -> None:
    p = incidents("run", "--step", "build", "--", sys.executable, "-c", "raise SystemExit(3)")
    assert p.returncode == 3, p.stderr
    folder = only_bundle(root)
    assert read(folder, "incident.json")["exit_code"] == 3
    assert "policy.max_regresions" in read(folder, "context.json")["capture_warnings"][0]


def test_run_with_a_bad_option_still_runs_and_captures(root: Root, tmp_path: Path) -> None:
    bad = ("--python-file", "missing.py", "--timeout", "0", "--message", "")
    p = incidents("run", "--step", "build", *bad, "--", sys.executable, "-c", "raise SystemExit(5)")
    assert p.returncode == 5, p.stderr
    assert "missing.py" in p.stderr and "--timeout" in p.stderr
    doc = read(only_bundle(root), "incident.json")
    assert doc["python_files"] == [] and doc["exit_code"] == 5 and doc["message"]


@pytest.mark.parametrize(
    "args", [("step", "incident_20260101_000000_x_abcdef"), ("watch", "--once")], ids=" ".join
)
def test_commands_that_act_on_incidents_refuse_the_same_config(
    cli: Cli, typo: Path, args: tuple[str, ...]
) -> None:
    r = cli(*args)
    assert r.code == 2 and f"{typo}: policy.max_regresions" in r.err


@pytest.mark.parametrize(
    "args",
    [("status",), ("status", "--json"), ("review", "--stdout"), ("verify-archive",), ("next",)],
    ids=" ".join,
)
def test_commands_that_only_read_warn_and_read_with_the_defaults(
    cli: Cli, root: Root, typo: Path, args: tuple[str, ...]
) -> None:
    root.ensure()
    r = cli(*args)
    assert r.code == 0, r.err
    assert f"incidents: warning: {typo}: policy.max_regresions" in r.err


def test_doctor_reports_the_config_as_a_finding_and_diagnoses_the_rest(
    cli: Cli, root: Root, typo: Path
) -> None:
    root.ensure()
    r = cli("doctor", "--json")
    assert r.code == 1
    found = {f["check"]: f for f in r.json()}
    assert (
        found["config"]["level"] == "fail" and "policy.max_regresions" in found["config"]["detail"]
    )
    assert found["root"]["level"] == "ok"  # the rest is still diagnosed
