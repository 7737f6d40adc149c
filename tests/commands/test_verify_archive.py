"""`incidents verify-archive`: a resolved incident's verdict re-checked against the files
today (a real resolution: real ruff, a stand-in fixer that really fixes the file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import FAST, Cli, capture, use_config
from tests.stand_ins import stand_in

UNDEFINED = "def value() -> int:\n    return undefined_name\n"
REAL_FIX = (
    "p = pathlib.Path(sys.argv[-1]); p.write_text(p.read_text().replace('undefined_name', '1'))"
)
ONLY_AIDER = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path) -> Path:
    stand_in(bin_dir, "aider", REAL_FIX)
    use_config(tmp_path, monkeypatch, FAST + ONLY_AIDER)
    path = tmp_path / "ws"
    path.mkdir()
    return path


def resolved(cli: Cli, root: Root, ws: Path, target: str) -> str:
    incident_id = capture(cli, ws=ws, target=target, content=UNDEFINED)
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("resolved") / incident_id).is_dir()
    return incident_id


def test_verify_archive_says_which_files_changed_since_the_verdict(
    cli: Cli, root: Root, ws: Path
) -> None:
    first = resolved(cli, root, ws, "one.py")
    second = resolved(cli, root, ws, "two.py")
    r = cli("verify-archive")
    assert r.code == 0, r.out + r.err
    assert f"{first}: ok: " in r.out and f"{second}: ok: " in r.out
    assert "2 resolved: 2 hold, 0 changed" in r.out

    (ws / "two.py").write_text("def value() -> int:\n    return 2\n")
    r = cli("verify-archive")
    assert r.code == 1
    assert f"{second}: CHANGED since the verdict of report 1: two.py (changed)" in r.out
    assert f"{first}: ok: " in r.out
    assert cli("verify-archive", first).code == 0  # only the ones asked about

    (ws / "one.py").unlink()
    doc = cli("verify-archive", first, "--json")
    assert doc.code == 1
    [entry] = doc.json()["incidents"]
    assert entry["status"] == "changed" and entry["changed"] == {"one.py": "missing"}
    assert doc.json()["ok"] is False


def test_verify_archive_bad_input(cli: Cli, root: Root, ws: Path) -> None:
    incident_id = resolved(cli, root, ws, "one.py")
    r = cli("verify-archive", "incident_20200101_000000_lint_000000000000")
    assert r.code == 2 and "is not resolved: no such incident" in r.err
    assert "Traceback" not in r.err
    assert cli("verify-archive", "../etc").code == 2
    path = root.runs_dir(incident_id) / "run_result.json"
    doc = json.loads(path.read_text())
    doc["verdict"]["files"] = ["one.py"]
    path.write_text(json.dumps(doc))
    r = cli("verify-archive")
    assert r.code == 2
    assert str(path) in r.err and "verdict.files" in r.err


def test_an_incident_resolved_without_a_verdict_is_not_reported_as_matching(
    cli: Cli, root: Root, ws: Path
) -> None:
    open_one = capture(cli, ws=ws, target="one.py", content=UNDEFINED)
    assert cli("archive", open_one, "--resolved", "--reason", "fixed by hand").code == 0
    escalated = capture(cli, ws=ws, target="two.py", content=UNDEFINED)
    assert cli("archive", escalated, "--escalated", "--reason", "later").code == 0
    r = cli("verify-archive")
    assert r.code == 0
    assert f"{open_one}: no verdict recorded" in r.out and "ok:" not in r.out
    assert "1 resolved: 0 hold, 0 changed, 1 without a verdict" in r.out
    r = cli("verify-archive", escalated)
    assert r.code == 2 and "is not resolved (it is in error_archive/escalated)" in r.err


PASSING_TEST = "def test_ok() -> None:\n    assert True\n"


def reproduction_only(cli: Cli, root: Root, ws: Path, command: str) -> str:
    """An incident with no target, checked only by `command` (a test run that passes by
    the time the step service checks it: resolved as not reproduced, with a verdict)."""
    (ws / "tests").mkdir(exist_ok=True)
    (ws / "tests" / "test_ok.py").write_text(PASSING_TEST)
    incident_id = capture(cli, "--verify", command, step="tests", ws=ws, message="tests failed")
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("resolved") / incident_id).is_dir()
    return incident_id


def test_a_verdict_bound_to_no_file_is_nothing_bound_not_ok(cli: Cli, root: Root, ws: Path) -> None:
    """`python -m pytest -q` names no file: with hashes only, the verdict binds nothing,
    and verify-archive says so (exit 1) instead of "ok: 0 file(s)"."""
    incident_id = reproduction_only(cli, root, ws, "python -m pytest -q")
    r = cli("verify-archive", incident_id, "--no-reproduce")
    assert r.code == 1, r.out + r.err
    assert f"{incident_id}: NOTHING BOUND" in r.out and "ok:" not in r.out
    assert "1 resolved: 0 hold, 0 changed, 0 without a verdict, 1 bound to nothing" in r.out
    [entry] = cli("verify-archive", incident_id, "--json", "--no-reproduce").json()["incidents"]
    assert entry["status"] == "nothing_bound"


def test_verify_archive_runs_the_reproduction_again(cli: Cli, root: Root, ws: Path) -> None:
    """The verdict rested on `python -m pytest -q` passing: verify-archive runs it again.
    It passes (the verdict holds), then a test breaks and it fails again (exit 1, said)."""
    incident_id = reproduction_only(cli, root, ws, "python -m pytest -q")
    r = cli("verify-archive", incident_id)
    assert r.code == 0, r.out + r.err
    assert "its 1 verification command(s) pass again" in r.out
    (ws / "tests" / "test_ok.py").write_text("def test_ok() -> None:\n    assert False\n")
    r = cli("verify-archive", incident_id)
    assert r.code == 1, r.out + r.err
    assert f"{incident_id}: FAILS AGAIN" in r.out and "python -m pytest -q: exited with 1" in r.out
    assert r.out.rstrip().endswith("1 fail again"), r.out
    [entry] = cli("verify-archive", incident_id, "--json").json()["incidents"]
    assert entry["status"] == "fails" and entry["failing"]


def test_a_folder_a_verification_command_names_binds_its_python_files(
    cli: Cli, root: Root, ws: Path
) -> None:
    """`python -m pytest -q tests`: the tests under tests/ are what it ran, so the verdict
    binds them, and a change to one is seen."""
    (ws / "tests" / "data").mkdir(parents=True)
    (ws / "tests" / "data" / "helper.py").write_text("VALUE = 1\n")
    (ws / "tests" / ".hidden").mkdir()
    (ws / "tests" / ".hidden" / "skip.py").write_text("")
    (ws / "tests" / "notes.txt").write_text("not python\n")
    incident_id = reproduction_only(cli, root, ws, "python -m pytest -q tests")
    result = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    assert set(result["verdict"]["files"]) == {"tests/test_ok.py", "tests/data/helper.py"}
    assert cli("verify-archive", incident_id).code == 0
    (ws / "tests" / "test_ok.py").write_text(PASSING_TEST + "\n")
    r = cli("verify-archive", incident_id)
    assert r.code == 1 and "tests/test_ok.py (changed)" in r.out, r.out
