"""Issue 14, "the incident's own failure must be gone; flaky is not fixed": incidents
captured and driven through the CLI with real ruff, mypy and pytest on real projects.

- success needs the incident's own failure gone, and tolerates what was already broken
  elsewhere before anyone touched it (pre-existing findings in files it is not about);
- a failure that passes with no change to any target is `not_reproduced` (`recovered` for a
  transient one), never "fixed":
  at the baseline (nothing changed since capture), after a transient retry, after a fixer
  that changed nothing;
- `incidents run --reproduce` makes the failed command the incident's verification command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import TIERS_OFF, Cli, capture, ctx_of, events, use_config
from tests.stand_ins import stand_in

GOOD = "def add(a: int, b: int) -> int:\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"
ALL_TOOLS = '[checks]\ntools = ["ruff", "ruff-format", "mypy", "pytest"]\n'
AIDER_ONLY = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
NO_WAIT = "[policy]\nretry_base_s = 0.0\nretry_max_s = 0.0\n"


def run_result(root: Root, incident_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    return doc


def counter_script(path: Path, counter: Path, fail_first: int) -> None:
    """A check that fails its first `fail_first` runs and passes after: its count is kept in
    a file outside the checked tree, as a real flaky dependency keeps its state elsewhere."""
    path.write_text(
        "import pathlib, sys\n"
        f"c = pathlib.Path({str(counter)!r})\n"
        "n = int(c.read_text()) if c.exists() else 0\n"
        "c.write_text(str(n + 1))\n"
        f"sys.exit(1 if n < {fail_first} else 0)\n"
    )


# -- the incident's own failure, and what was broken before ------------------------------


CALC_UNDEFINED = "VERSION = 1\n\n\ndef add(a: int, b: int) -> int:\n    return a + undefined_b\n"
# a test elsewhere that imports calc and was already failing for a reason of its own
TEST_OTHER = "import calc\n\n\ndef test_version() -> None:\n    assert calc.VERSION == 2\n"
FIX_CALC = "p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('undefined_b', 'b'))"


@pytest.fixture
def other(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(CALC_UNDEFINED)
    (ws / "test_other.py").write_text(TEST_OTHER)
    return ws


def test_a_failing_test_that_imports_the_target_is_the_incidents_own(
    cli: Cli, root: Root, other: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:  # fmt: skip
    """test_other.py imports calc, so the check runs it: it is a test of the target, so the
    incident's own (own_files), even though it was failing for a reason of its own before
    the fix. Mending calc.py's undefined name leaves it failing: not a success."""
    stand_in(bin_dir, "aider", FIX_CALC)
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY)
    incident_id = capture(cli, step="lint", ws=other, target="calc.py")
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert (root.bucket("escalated") / incident_id).is_dir(), r.out
    ctx = ctx_of(root, incident_id)
    assert ctx.own_files == ["calc.py", "test_other.py"]
    assert ctx.last_error_report is not None
    left = [(f.tool, f.path) for f in ctx.last_error_report.issues if f.hard]
    assert left == [("pytest", "test_other.py")]


TEST_UNRELATED = "def test_unrelated() -> None:\n    assert 1 == 2\n"


@pytest.fixture
def suite(other: Path) -> Path:
    """A folder of tests `[checks] test_paths` always runs; its test imports no target."""
    (other / "test_other.py").unlink()
    (other / "suite").mkdir()
    (other / "suite" / "test_unrelated.py").write_text(TEST_UNRELATED)
    return other / "suite"


def test_a_pre_existing_failure_only_test_paths_ran_does_not_block_the_fix(
    cli: Cli, root: Root, other: Path, suite: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, bin_dir: Path,
) -> None:  # fmt: skip
    """What "pre-existing, not the incident's" still means: a failing test that no target
    brought in (the operator's `[checks] test_paths` did), failing the same way at the
    baseline and after the fix. It blocks at the baseline (nothing is excused there), the
    fixer mends calc.py, and the recheck resolves it as fixed, writing the excused finding
    down for a reviewer."""
    stand_in(bin_dir, "aider", FIX_CALC)
    paths = ALL_TOOLS + f"test_paths = [{str(suite)!r}]\n"
    use_config(tmp_path, monkeypatch, paths + AIDER_ONLY)
    incident_id = capture(cli, step="lint", ws=other, target="calc.py")
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "S1_AIDER_RECHECK -> S_SUCCESS" in r.out, r.out
    ctx = ctx_of(root, incident_id)
    assert ctx.own_files == ["calc.py"]
    assert ctx.last_error_report is not None
    left = [(f.tool, f.path) for f in ctx.last_error_report.issues if f.hard]
    assert left == [("pytest", "suite/test_unrelated.py")]
    result = run_result(root, incident_id)
    assert result["final_status"] == "resolved" and result["outcome"] == "fixed"
    assert "pre-existing, not the incident's: pytest" in result["reason"]
    [line] = result["preexisting"]
    assert line.startswith("pytest test-failure suite/test_unrelated.py:1: "), line
    attempt = json.loads((root.runs_dir(incident_id) / "attempt_01.json").read_text())
    assert attempt["result"] == "resolved" and attempt["preexisting"] == [line]


def test_a_pre_existing_failure_elsewhere_alone_is_not_resolved_at_the_baseline(
    cli: Cli, root: Root, other: Path, suite: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The same failing suite test with calc.py already fixed and no fixer: the baseline
    excuses nothing, so the incident is escalated for a person, not "not reproduced"."""
    (other / "calc.py").write_text(GOOD)
    paths = ALL_TOOLS + f"test_paths = [{str(suite)!r}]\n"
    use_config(tmp_path, monkeypatch, paths + TIERS_OFF)
    incident_id = capture(cli, step="lint", ws=other, target="calc.py")
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert (root.bucket("escalated") / incident_id).is_dir(), r.out


def test_with_strict_mode_a_pre_existing_failure_still_blocks(
    cli: Cli, root: Root, other: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:  # fmt: skip
    stand_in(bin_dir, "aider", FIX_CALC)
    use_config(tmp_path, monkeypatch, ALL_TOOLS + "[policy]\nstrict_mode = true\n" + AIDER_ONLY)
    incident_id = capture(cli, step="lint", ws=other, target="calc.py")
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert (root.bucket("escalated") / incident_id).is_dir(), r.out


def test_a_new_failure_in_a_file_the_incident_is_not_about_still_blocks(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """A fixer mends calc.py's own error and breaks a test elsewhere that imports it (not
    the conventional test_calc.py, not named by the failure): that failure is new, so it
    blocks even though its file is not one the incident is about."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a: int, b: int) -> int:\n    return a + undefined_b\n")
    (ws / "test_other.py").write_text(
        "import calc\n\n\ndef test_other() -> None:\n    assert calc.add(1, 1) == 2\n"
    )
    # "fixes" the name by returning the wrong thing: test_other.py now fails a new way
    stand_in(
        bin_dir, "aider",
        "p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('a + undefined_b', 'a'))",
    )  # fmt: skip
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY)
    incident_id = capture(cli, step="lint", ws=ws, target="calc.py")
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert (root.bucket("escalated") / incident_id).is_dir(), r.out
    ctx = ctx_of(root, incident_id)
    assert ctx.last_error_report is not None
    assert {(f.tool, f.path) for f in ctx.last_error_report.issues if f.hard} == {
        ("pytest", "test_other.py")
    }


# -- flaky is not fixed -------------------------------------------------------------------


def test_a_named_test_that_passes_at_the_baseline_is_not_reproduced_not_fixed(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(a) The failure names a test that passes when the machine checks, and calc.py is
    byte for byte what capture saw: closed without claiming a fix, nobody paged, counted
    as flaky for its signature and shown so."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(GOOD)
    (ws / "test_calc.py").write_text(TEST_CALC)
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF)
    message = "1 failed: FAILED test_calc.py::test_add"
    incident_id = capture(cli, step="test", ws=ws, target="calc.py", message=message)
    doc = json.loads((root.inbox / incident_id / "incident.json").read_text())
    assert set(doc["target_digests"]) == {"calc.py"}
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert (root.bucket("resolved") / incident_id).is_dir()
    result = run_result(root, incident_id)
    assert result["outcome"] == "not_reproduced"
    assert result["reason"].startswith("not reproduced (flaky): ")
    assert "no target changed since the capture" in result["reason"]
    assert ctx_of(root, incident_id).outcome == "not_reproduced"
    assert "flaky" in events(root, incident_id)
    assert "escalation" not in events(root, incident_id)
    # a second one of the same signature: the count is per signature
    second = capture(cli, step="test", ws=ws, target="calc.py", message=message)
    assert cli("drive", second).code == 0
    r = cli("status", "--all")
    assert r.code == 0, r.err
    rows = [line for line in r.out.splitlines() if incident_id in line or second in line]
    assert len(rows) == 2 and all("not reproduced (flaky)" in line for line in rows), r.out
    assert "resolved: 0 fixed, 2 not reproduced" in r.out
    r = cli("status", second)
    assert "outcome:         not reproduced (flaky)" in r.out, r.out
    assert "flaky:           2 incident(s) of this signature" in r.out, r.out
    r = cli("status", "--all", "--json")
    assert {i["incident_id"]: i["outcome"] for i in r.json()["incidents"]} == {
        incident_id: "not_reproduced",
        second: "not_reproduced",
    }
    # the mirror is derived: rebuilt from the folders, it counts the same
    (root.db_path).unlink()
    r = cli("status", second)
    assert "flaky:           2 incident(s) of this signature" in r.out, r.out
    r = cli("review", "--json")
    assert r.code == 0, r.err
    review = r.json()
    assert review["not_reproduced"] == 2 and review["fixed"] == 0
    assert list(review["flaky_by_signature"].values()) == [2]
    page = (root.path / "error_review" / "index.html").read_text()
    assert "not reproduced (flaky): no fix claimed" in page


def test_a_target_changed_since_capture_is_not_credited_to_the_machine(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone fixed calc.py between the capture and the first check: it is resolved, but
    as changed before the check, not as flaky and not as fixed by the machine."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a: int, b: int) -> int:\n    return a - b\n")
    (ws / "test_calc.py").write_text(TEST_CALC)
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF)
    incident_id = capture(
        cli, step="test", ws=ws, target="calc.py", message="FAILED test_calc.py::test_add"
    )
    (ws / "calc.py").write_text(GOOD)
    assert cli("drive", incident_id).code == 0
    result = run_result(root, incident_id)
    assert result["final_status"] == "resolved"
    assert result["outcome"] == "changed_before_check", result
    assert "flaky" not in events(root, incident_id)


def test_a_fixer_that_changed_nothing_gets_no_credit_for_a_flaky_pass(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """(c) The reproduction fails at the baseline and passes at the recheck, and the fixer
    touched no file: the incident closes as not reproduced and the attempt record does
    not say the fixer resolved it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(GOOD)
    counter_script(ws / "check_calc.py", tmp_path / "counter", fail_first=1)
    stand_in(bin_dir, "aider", "pass  # does nothing, exits 0")
    use_config(tmp_path, monkeypatch, '[checks]\ntools = ["ruff"]\n' + AIDER_ONLY)
    incident_id = capture(
        cli, "--verify", "python check_calc.py", step="check", ws=ws, target="calc.py"
    )
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "S1_AIDER_RECHECK -> S_SUCCESS" in r.out, r.out
    result = run_result(root, incident_id)
    assert result["outcome"] == "not_reproduced", result
    assert "aider changed no target file" in result["reason"]
    attempt = json.loads((root.runs_dir(incident_id) / "attempt_01.json").read_text())
    assert attempt["result"] == "not_reproduced"
    assert "flaky" in events(root, incident_id)


def test_a_fixer_that_really_fixes_the_code_is_credited(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """The positive control: a real fix is `fixed`, its attempt `resolved`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a: int, b: int) -> int:\n    return a - b\n")
    (ws / "test_calc.py").write_text(TEST_CALC)
    stand_in(
        bin_dir, "aider",
        "p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('a - b', 'a + b'))",
    )  # fmt: skip
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY)
    incident_id = capture(
        cli, step="test", ws=ws, target="calc.py", message="FAILED test_calc.py::test_add"
    )
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    result = run_result(root, incident_id)
    assert result["final_status"] == "resolved" and result["outcome"] == "fixed", result
    assert result["preexisting"] == []
    attempt = json.loads((root.runs_dir(incident_id) / "attempt_01.json").read_text())
    assert attempt["result"] == "resolved"
    assert "flaky" not in events(root, incident_id)


# -- incidents run --reproduce ------------------------------------------------------------


def test_a_transient_failure_that_passes_on_retry_is_recovered_and_pages_nobody(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(b) `incidents run --reproduce` of a command that fails twice (a network blip): the
    command is the incident's verification; the baseline re-runs it with backoff, it
    passes, nothing changed: resolved as recovered (no fix claimed), no escalation, no
    pause."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    counter_script(ws / "fetch.py", tmp_path / "counter", fail_first=2)
    use_config(tmp_path, monkeypatch, TIERS_OFF + NO_WAIT)
    r = cli(
        "run", "--reproduce", "--step", "fetch", "--failure-class", "transient",
        "--", sys.executable, "fetch.py",
    )  # fmt: skip
    assert r.code == 1, r.err
    [incident_id] = [p.name for p in root.inbox.iterdir() if not p.name.startswith(".")]
    doc = json.loads((root.inbox / incident_id / "incident.json").read_text())
    assert doc["verify"] == [f"{sys.executable} fetch.py"]
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "WAIT_RETRY" in r.out, r.out
    assert (root.bucket("resolved") / incident_id).is_dir()
    result = run_result(root, incident_id)
    assert result["outcome"] == "recovered", result
    assert "after 1 transient retry" in result["reason"]
    assert "escalation" not in events(root) and not (root.state / "paused").exists()
    assert int((tmp_path / "counter").read_text()) == 3  # run, baseline, retry


def test_reproduce_from_the_config_file(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    (ws / "fail.py").write_text("raise SystemExit(3)\n")
    use_config(tmp_path, monkeypatch, "[capture]\nreproduce = true\n")
    r = cli("run", "--step", "s", "--", "python", "fail.py")
    assert r.code == 3, r.err
    [folder] = [p for p in root.inbox.iterdir() if not p.name.startswith(".")]
    assert json.loads((folder / "incident.json").read_text())["verify"] == ["python fail.py"]


def test_a_command_the_allowlist_refuses_is_captured_but_not_re_run(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sh` is not an allowed verification program: the incident is still written, with
    the command that failed in context.json, no verification command, and the reason on
    stderr."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    r = cli("run", "--reproduce", "--step", "s", "--", "sh", "-c", "exit 4")
    assert r.code == 4
    assert (
        "incidents: --reproduce: \"sh -c 'exit 4'\" is not a verification command of the "
        "incident: [verification] allowlist: program 'sh' is not on the allowlist"
    ) in r.err, r.err
    [folder] = [p for p in root.inbox.iterdir() if not p.name.startswith(".")]
    assert json.loads((folder / "incident.json").read_text())["verify"] == []
    assert json.loads((folder / "context.json").read_text())["command"] == ["sh", "-c", "exit 4"]


def test_a_command_run_outside_the_workdir_is_not_made_its_verification(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "fail.py").write_text("raise SystemExit(3)\n")
    r = cli("run", "--reproduce", "--workdir", str(ws), "--step", "s", "--", "python", "fail.py")
    assert r.code == 3
    assert "verification runs in the workdir" in r.err, r.err
    [folder] = [p for p in root.inbox.iterdir() if not p.name.startswith(".")]
    assert json.loads((folder / "incident.json").read_text())["verify"] == []


# -- [policy] confirm_runs ----------------------------------------------------------------

FLAKY_TEST = (
    "import pathlib\n\nfrom calc import add\n\n\ndef test_add() -> None:\n"
    "    c = pathlib.Path({counter!r})\n"
    "    n = int(c.read_text()) if c.exists() else 0\n"
    "    c.write_text(str(n + 1))\n"
    "    assert add(1, 2) == 3 and n % 2 == 0  # passes on odd runs, fails on even ones\n"
)


@pytest.fixture
def flaky_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(GOOD)
    (ws / "test_calc.py").write_text(FLAKY_TEST.format(counter=str(tmp_path / "counter")))
    return ws


def test_with_confirm_runs_a_flaky_test_is_reported_as_flaky_not_success(
    cli: Cli, root: Root, flaky_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The named test passes on its first run at the baseline and fails on the second: with
    confirm_runs = 3 that is a hard `flaky` finding, and the incident is escalated with the
    reason saying so, not closed."""
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF + "[policy]\nconfirm_runs = 3\n")
    incident_id = capture(
        cli, step="test", ws=flaky_ws, target="calc.py", message="FAILED test_calc.py::test_add"
    )
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert (root.bucket("escalated") / incident_id).is_dir(), r.out
    report = ctx_of(root, incident_id).last_error_report
    assert report is not None
    [flaky] = [f for f in report.issues if f.code == "flaky"]
    assert flaky.hard and flaky.path == "test_calc.py"
    assert flaky.message.startswith("flaky: passed in run 1, failed in run 2 of 3")
    assert [run.tool for run in report.tool_runs].count("pytest") == 2  # stopped at the 2nd
    reason = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())["reason"]
    assert "flaky with [policy] confirm_runs" in reason, reason


def test_without_confirm_runs_the_same_flaky_test_is_not_reproduced(
    cli: Cli, root: Root, flaky_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF)
    incident_id = capture(
        cli, step="test", ws=flaky_ws, target="calc.py", message="FAILED test_calc.py::test_add"
    )
    assert cli("drive", incident_id).code == 0
    assert run_result(root, incident_id)["outcome"] == "not_reproduced"


def test_confirm_runs_of_a_real_fix_all_pass_and_it_is_fixed(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """The positive control: a steady test after a real fix passes all three runs (the
    findings cache bypassed: pytest really ran three times) and the incident is fixed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a: int, b: int) -> int:\n    return a - b\n")
    (ws / "test_calc.py").write_text(TEST_CALC)
    stand_in(
        bin_dir, "aider",
        "p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('a - b', 'a + b'))",
    )  # fmt: skip
    use_config(tmp_path, monkeypatch, ALL_TOOLS + AIDER_ONLY + "[policy]\nconfirm_runs = 3\n")
    incident_id = capture(
        cli, step="test", ws=ws, target="calc.py", message="FAILED test_calc.py::test_add"
    )
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert run_result(root, incident_id)["outcome"] == "fixed"
    report = ctx_of(root, incident_id).last_error_report
    assert report is not None and report.issues == []
    pytest_runs = [run for run in report.tool_runs if run.tool == "pytest"]
    assert len(pytest_runs) == 3 and not any(run.cached for run in pytest_runs[1:])


def test_a_transient_test_failure_is_re_run_not_replayed_from_the_cache(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(b) with a test: the named test fails at the baseline (a blip) and passes when the
    transient retry runs it again. The retry must run pytest, not replay the cached
    failure of unchanged inputs; then it is recovered, and nobody is paged."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(GOOD)
    blip = FLAKY_TEST.format(counter=str(tmp_path / "counter")).replace("n % 2 == 0", "n >= 1")
    (ws / "test_calc.py").write_text(blip)
    use_config(tmp_path, monkeypatch, ALL_TOOLS + TIERS_OFF + NO_WAIT)
    incident_id = capture(
        cli, "--failure-class", "transient",
        step="test", ws=ws, target="calc.py", message="FAILED test_calc.py::test_add",
    )  # fmt: skip
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "WAIT_RETRY" in r.out, r.out
    result = run_result(root, incident_id)
    assert result["final_status"] == "resolved" and result["outcome"] == "recovered"
    assert "escalation" not in events(root)
