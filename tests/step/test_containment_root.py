"""A fixer run with detection only ([tiers] sandbox = "none", or "auto" without bubblewrap)
runs as the uid that owns the reports root and can write there. Each way it could use that
to fake a verdict — plant the recheck's report (the check reuses a report it finds, as
after a crash), overwrite the tamper baseline, rewrite state.json, replace the seal key —
fails the attempt as `tamper` and the incident is escalated, never resolved; what it wrote
is moved aside into .state/stray/<id>/ (never deleted) and what it changed is put back.
Under bubblewrap the same writes are refused (the root is read-only)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.debian import bubblewrap_or_skip
from tests.helpers import FAST, Cli, capture, ctx_of, incidents, use_config
from tests.stand_ins import stand_in

UNDEFINED = "def value() -> int:\n    return undefined_name\n"  # ruff F821: hard
ONLY_AIDER = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)

# The fixer is told where the root is (a fixer may know it: INCIDENTS_ROOT, a path in its
# prompt, the project layout); the target stays broken.
PLANT = """
import glob, json
spec = json.loads(open(os.path.join(os.path.dirname(sys.argv[0]), "plant.json")).read())
runs, bundle, seal = (pathlib.Path(spec[k]) for k in ("runs", "bundle", "seal"))
what = spec["what"]
try:
    if what == "report":  # a clean report under the recheck's name
        doc = json.loads((runs / "error_report_attempt_0.json").read_text())
        doc["label"], doc["issues"] = "1", []
        doc["summary"] = {"total_issues": 0, "issues_by_tool": {}, "issues_by_category": {},
            "hard_error_count": 0, "style_error_count": 0, "security_issue_count": 0,
            "error_categories_present": [], "has_hard_fail": False, "style_only": False}
        (runs / "error_report_attempt_1.json").write_text(json.dumps(doc))
    elif what == "baseline":  # the tamper baseline, so added suppressions look old
        [path] = runs.glob("tamper_baseline_step_*.json")
        path.write_text('{"forged": true}')
    elif what == "state":
        (bundle / "state.json").write_text('{"current_state": "S_SUCCESS"}')
    elif what == "seal":
        seal.write_bytes(b"0" * 32)
    print("planted", what)
except OSError as exc:
    print("refused", what, exc)
"""
PLANTS = ("report", "baseline", "state", "seal")
PROMPT_ARGV = 'argv = ["aider", "{prompt_file}", "{files}"]\n'


def drive_plant(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path,
    mode: str, what: str,
) -> tuple[str, dict[str, bytes]]:  # fmt: skip
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True)
    stand_in(bin_dir, "aider", PLANT)
    use_config(tmp_path, monkeypatch, FAST + ONLY_AIDER + f'[tiers]\nsandbox = "{mode}"\n')
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    spec = {"runs": str(root.runs_dir(incident_id)), "bundle": str(root.inbox / incident_id),
            "seal": str(root.seal_key), "what": what}  # fmt: skip
    (bin_dir / "plant.json").write_text(json.dumps(spec))
    kept: dict[str, bytes] = {}

    def hold_after_baseline() -> None:  # the files the fixer will change, as they were
        for path in (*root.runs_dir(incident_id).glob("tamper_baseline_*"), root.seal_key):
            kept[str(path)] = path.read_bytes()

    # one tick at a time: the baseline, then the fixer and its recheck
    r = cli("step", incident_id)
    assert r.code == 0, r.err
    hold_after_baseline()
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    return incident_id, kept


@pytest.mark.parametrize("what", PLANTS)
def test_a_detection_mode_fixer_that_writes_the_reports_root_fails_as_tamper(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path,
    what: str,
) -> None:  # fmt: skip
    incident_id, kept = drive_plant(cli, root, tmp_path, monkeypatch, bin_dir, "none", what)
    ws = tmp_path / "project" / "ws"
    assert (ws / "names.py").read_text() == UNDEFINED
    assert not (root.bucket("resolved") / incident_id).exists(), "resolved by a planted file"
    assert (root.bucket("escalated") / incident_id).is_dir()
    ctx = ctx_of(root, incident_id)
    [attempt] = ctx.ai_attempts
    assert f"planted {what}" in attempt.notes  # it could write there: detection caught it
    assert "tamper: the fixer changed the reports root" in attempt.notes
    assert ctx.escalation_reason and "tamper" in ctx.escalation_reason
    # what it wrote is kept aside as evidence; what it overwrote is back as it was
    aside = [p.name for p in (root.state / "stray" / incident_id).iterdir()]
    assert aside, "the planted file was deleted, not moved aside"
    for path, data in kept.items():
        assert Path(path).read_bytes() == data, f"{path} was not put back"
    if what == "report":
        assert any(n.endswith("error_report_attempt_1.json") for n in aside), aside


def test_a_fixer_under_bubblewrap_cannot_write_the_reports_root(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    bubblewrap_or_skip()
    incident_id, _ = drive_plant(cli, root, tmp_path, monkeypatch, bin_dir, "bwrap", "report")
    [attempt] = ctx_of(root, incident_id).ai_attempts
    assert "refused report" in attempt.notes
    assert not (root.bucket("resolved") / incident_id).exists()


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_the_fixer_is_handed_a_copy_of_its_prompt_outside_the_reports_root(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path,
    mode: str,
) -> None:  # fmt: skip
    if mode == "bwrap":
        bubblewrap_or_skip()
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True)
    stand_in(bin_dir, "aider", "print('prompt at', sys.argv[1]); print(open(sys.argv[1]).read())")
    use_config(
        tmp_path, monkeypatch,
        FAST + ONLY_AIDER.replace('mode = "on"\n', 'mode = "on"\n' + PROMPT_ARGV, 1)
        + f'[tiers]\nsandbox = "{mode}"\n',
    )  # fmt: skip
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    assert cli("drive", incident_id).code == 0
    [attempt] = ctx_of(root, incident_id).ai_attempts
    given = attempt.notes.splitlines()[0].removeprefix("prompt at ")
    assert not Path(given).resolve().is_relative_to(root.path.resolve()), given
    assert "names.py" in attempt.notes  # it is the prompt
    assert attempt.prompt_file is not None  # the record names the incident's prompt
    assert Path(attempt.prompt_file).parent == root.runs_dir(incident_id)


# Kill-resume: the first run of the fixer plants the recheck's report and is killed with
# its worker; the redo's fixer is honest-looking (it changes nothing), so only a compare
# from the killed run's start can see the planted file.
PLANT_THEN_HANG = """
import json
marks = pathlib.Path(sys.argv[0]).with_name("marks")
spec = json.loads(open(os.path.join(os.path.dirname(sys.argv[0]), "plant.json")).read())
runs = pathlib.Path(spec["runs"])
first = not (marks / "planted").exists()
if first and spec["plant"]:
    doc = json.loads((runs / "error_report_attempt_0.json").read_text())
    doc["label"], doc["issues"] = "1", []
    doc["summary"] = {"total_issues": 0, "issues_by_tool": {}, "issues_by_category": {},
        "hard_error_count": 0, "style_error_count": 0, "security_issue_count": 0,
        "error_categories_present": [], "has_hard_fail": False, "style_only": False}
    (runs / "error_report_attempt_1.json").write_text(json.dumps(doc))
if first:
    marks.mkdir(exist_ok=True)
    (marks / "planted").write_text("")
    time.sleep(60)  # killed with its worker
elif not spec["plant"]:
    p = pathlib.Path(sys.argv[-1]); p.write_text(p.read_text().replace("undefined_name", "1"))
"""


@pytest.mark.parametrize("plant", [True, False])
def test_a_report_planted_by_a_fixer_whose_worker_was_killed_is_caught_at_the_redo(
    root: Root, tmp_path: Path, plant: bool
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in(bin_dir, "aider", PLANT_THEN_HANG)
    config = tmp_path / "incidents.toml"
    config.write_text(FAST + ONLY_AIDER + '[tiers]\nsandbox = "none"\n')
    env = {**os.environ, "INCIDENTS_ROOT": str(root.path), "INCIDENTS_CONFIG": str(config),
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}  # fmt: skip
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True)
    (ws / "names.py").write_text(UNDEFINED)
    incident_id = incidents(
        "capture", "--step", "lint", "--message", "m", "--python-file", "names.py",
        "--workdir", str(ws), "--no-dedupe", env=env, check=True,
    ).stdout.strip()  # fmt: skip
    spec = {"runs": str(root.runs_dir(incident_id)), "plant": plant}
    (bin_dir / "plant.json").write_text(json.dumps(spec))
    drive = [sys.executable, "-m", "incidents", "drive", incident_id]
    first = subprocess.Popen(drive, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (bin_dir / "marks" / "planted").exists():
        assert time.monotonic() < deadline and first.poll() is None, "the fixer never ran"
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    again = incidents("drive", incident_id, env=env)
    assert again.returncode == 0, again.stderr
    [attempt] = ctx_of(root, incident_id).ai_attempts
    if not plant:  # a worker's death alone is no tamper: the redo's real fix stands
        assert (root.bucket("resolved") / incident_id).is_dir(), (again.stdout, attempt.notes)
        return
    assert not (root.bucket("resolved") / incident_id).exists(), "resolved by a planted report"
    assert "tamper: the fixer changed the reports root" in attempt.notes
    assert any("error_report_attempt_1.json" in v for v in attempt.violations)
    assert (ws / "names.py").read_text() == UNDEFINED
