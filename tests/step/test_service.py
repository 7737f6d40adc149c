"""The step service end to end (seed 000 §5), with the real check tools on real files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from incidents.models import (
    AIAttempt,
    Attempt,
    ErrorPipelineContext,
    ErrorReport,
    Plan,
    QuarantineMetadata,
    RunResult,
)
from tests.helpers import (
    CLEAN,
    FAST,
    MESSY,
    TIERS_OFF,
    TWO_TYPE_ERRORS,
    TYPED,
    Cli,
    capture,
    events,
    use_config,
)
from tests.stand_ins import stand_in


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def runs(root: Root, incident_id: str) -> dict[str, Path]:
    return {p.name: p for p in root.runs_dir(incident_id).iterdir()}


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def test_baseline_success_on_a_clean_file(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    use_config(tmp_path, monkeypatch, FAST)
    incident_id = capture(cli, ws=ws, target="clean.py", content=CLEAN)
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert "S_INIT -> S0_BASELINE_CHECK (RUN_PIPELINE)" in lines[1]
    assert "report: error_report_attempt_0.json" in lines[1]
    assert "-> S_SUCCESS" in lines[-1] and "archived to error_archive/resolved/" in lines[-1]
    folder = root.bucket("resolved") / incident_id
    assert (folder / "status.txt").read_text() == "resolved\n"
    files = runs(root, incident_id)
    report = ErrorReport.model_validate(load(files["error_report_attempt_0.json"]))
    assert report.summary.total_issues == 0 and report.label == "0"
    result = RunResult.model_validate(load(files["run_result.json"]))
    assert (result.final_status, result.loops_used) == ("resolved", 0)
    Plan.model_validate(load(root.plan_dir(incident_id) / "plan.json"))
    ctx = ErrorPipelineContext.model_validate(load(folder / "state.json"))
    assert ctx.current_state == "S_SUCCESS" and ctx.final_status == "success"
    kinds = events(root, incident_id)
    assert {"state_transition", "error_report_generated", "archived"} <= set(kinds)
    with sqlite3.connect(root.db_path) as conn:
        meta = conn.execute(
            "SELECT metadata_json FROM workstreams WHERE ws_id = ?", (incident_id,)
        ).fetchone()[0]
        assert json.loads(meta)["error_pipeline"]["current_state"] == "S_SUCCESS"
        labels = {
            r[0]
            for r in conn.execute("SELECT label FROM step_attempts WHERE ws_id = ?", (incident_id,))
        }
        assert "error_report_attempt_0" in labels


def test_mechanical_path_unused_import_and_formatting(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    use_config(tmp_path, monkeypatch, FAST)
    incident_id = capture(cli, ws=ws, target="messy.py", content=MESSY)
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "(MECHANICAL_AUTOFIX)" in r.out and "-> S_SUCCESS" in r.out
    fixed = (ws / "messy.py").read_text()
    assert "import os" not in fixed and '{"n": len(rows)}' in fixed
    files = runs(root, incident_id)
    before = ErrorReport.model_validate(load(files["error_report_attempt_0.json"]))
    after = ErrorReport.model_validate(load(files["error_report_attempt_0b.json"]))
    assert before.summary.style_only and before.summary.total_issues >= 2
    assert after.summary.total_issues == 0 and after.mechanical_fix_applied
    attempt = Attempt.model_validate(load(files["attempt_01.json"]))
    assert attempt.result == "resolved" and attempt.verification_passed
    assert RunResult.model_validate(load(files["run_result.json"])).loops_used == 1
    original = root.bucket("resolved") / incident_id / "original_scripts" / "messy.py"
    assert original.read_text() == MESSY


def test_escalation_through_aider_codex_claude(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    # aider fixes one of the two type errors, codex does nothing, claude fixes the rest
    stand_in(
        bin_dir,
        "aider",
        "p = pathlib.Path('typed.py'); p.write_text(p.read_text().replace('\"one\"', '1'))",
    )
    stand_in(bin_dir, "codex", "sys.stdin.read()")
    stand_in(
        bin_dir,
        "claude",
        "sys.stdin.read(); p = pathlib.Path('typed.py'); p.write_text(p.read_text().replace('return 2', 'return \"2\"'))",
    )
    use_config(
        tmp_path,
        monkeypatch,
        TYPED
        + '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "on"\n[tiers.claude]\nmode = "on"\n',
    )
    incident_id = capture(cli, step="typecheck", ws=ws, target="typed.py", content=TWO_TYPE_ERRORS)
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    states = [line.split(": ", 1)[1].split(" (")[0] for line in r.out.splitlines()]
    assert states == [
        "S_INIT -> S_INIT",
        "S_INIT -> S0_BASELINE_CHECK",
        "S0_BASELINE_CHECK -> S1_AIDER_FIX",
        "S1_AIDER_FIX -> S1_AIDER_RECHECK",
        "S1_AIDER_RECHECK -> S2_CODEX_FIX",
        "S2_CODEX_FIX -> S2_CODEX_RECHECK",
        "S2_CODEX_RECHECK -> S3_CLAUDE_FIX",
        "S3_CLAUDE_FIX -> S3_CLAUDE_RECHECK",
        "S3_CLAUDE_RECHECK -> S_SUCCESS",
    ], r.out
    assert "AI action required: yes" in r.out.splitlines()[2]
    files = runs(root, incident_id)
    attempts = [AIAttempt.model_validate(a) for a in load(files["ai_attempts.json"])]
    assert [(a.attempt_number, a.agent) for a in attempts] == [
        (1, "aider"),
        (2, "codex"),
        (3, "claude"),
    ]
    assert attempts[0].changed_files == ["typed.py"] and attempts[1].changed_files == []
    counts = [
        ErrorReport.model_validate(
            load(files[f"error_report_attempt_{n}.json"])
        ).summary.total_issues
        for n in "0123"
    ]
    assert counts == [2, 1, 1, 0]
    assert {"prompt_attempt_1.md", "prompt_attempt_2.md", "prompt_attempt_3.md"} <= set(files)
    retry = files["prompt_attempt_2.md"].read_text()
    # the code the last check's findings amount to (type errors), not the capture's guess
    assert "## Retry context" in retry and "- previous_error_code: LINT_FAILURE" in retry
    assert [
        Attempt.model_validate(load(files[f"attempt_0{i}.json"])).result for i in (1, 2, 3)
    ] == ["continue", "continue", "resolved"]
    assert events(root, incident_id).count("ai_attempt") == 3


def test_quarantine_path_keeps_everything(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    use_config(tmp_path, monkeypatch, TYPED + TIERS_OFF)
    incident_id = capture(cli, step="typecheck", ws=ws, target="typed.py", content=TWO_TYPE_ERRORS)
    r = cli("drive", incident_id)
    assert r.code == 0 and "-> S4_QUARANTINE" in r.out, r.out + r.err
    folder = root.bucket("escalated") / incident_id
    assert not (root.inbox / incident_id).exists()
    for name in ("incident.json", "status.txt", "log_tail.txt", "audit_tail.jsonl", "context.json",
                 "state.json", "metadata.json", "ai_attempts.json", "final_scripts/typed.py",
                 "original_scripts/typed.py", "error_reports/error_report_attempt_0.json",
                 "plan/plan.json", "plan/plan.md"):  # fmt: skip
        assert (folder / name).is_file(), name
    meta = QuarantineMetadata.model_validate(load(folder / "metadata.json"))
    assert meta.final_status == "quarantined" and meta.final_error_counts == {"type": 2}
    assert "no further fixer tier" in meta.reason and meta.escalation_kind == "no_fixer"
    assert meta.tool_versions.get("mypy")
    assert (folder / "status.txt").read_text() == "escalated\n"
    result = RunResult.model_validate(load(root.runs_dir(incident_id) / "run_result.json"))
    assert result.final_status == "escalated" and result.archived_to.endswith(incident_id)
    assert "escalation" in events(root, incident_id)


def test_infra_path_when_a_tool_is_missing(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    missing = '[checks.profiles.ruff]\nargv = ["definitely-not-installed-linter", "{files}"]\n'
    use_config(tmp_path, monkeypatch, FAST + missing)
    incident_id = capture(cli, ws=ws, target="clean.py", content=CLEAN)
    r = cli("drive", incident_id)
    assert r.code == 0 and "-> S_ERROR_INFRA" in r.out, r.out + r.err
    folder = root.bucket("escalated") / incident_id
    meta = QuarantineMetadata.model_validate(load(folder / "metadata.json"))
    assert meta.final_status == "infra_failure"
    assert "definitely-not-installed-linter" in meta.reason
    assert "infra_error" in events(root, incident_id)
    with sqlite3.connect(root.db_path) as conn:
        (count,) = conn.execute(
            "SELECT count FROM errors WHERE last_incident_id = ?", (incident_id,)
        ).fetchone()
    assert count == 1


def test_step_and_error_step_print_one_transition(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    use_config(tmp_path, monkeypatch, FAST)
    incident_id = capture(cli, ws=ws, target="clean.py", content=CLEAN)
    r = cli("step", incident_id)
    assert (
        r.out.strip()
        == f"{incident_id}: S_INIT -> S_INIT (PLAN); report: none; AI action required: no"
    )
    run_id = load(root.inbox / incident_id / "incident.json")["run_id"]
    r = cli("error-step", "--run-id", run_id, "--ws-id", incident_id, "--json")
    doc = json.loads(r.out)
    assert (doc["old_state"], doc["new_state"], doc["report_written"]) == (
        "S_INIT", "S0_BASELINE_CHECK", "error_report_attempt_0.json")  # fmt: skip
    assert cli("error-step", "--run-id", "nope", "--ws-id", incident_id).code == 1
    assert cli("step", "incident_missing").code == 1


def test_nothing_to_check_is_escalated_as_unverifiable(cli: Cli, root: Root) -> None:
    r = cli(
        "capture",
        "--step",
        "notify",
        "--message",
        "webhook returned 500",
        "--failure-class",
        "code",
    )
    incident_id = r.out.strip()
    r = cli("drive", incident_id)
    assert "-> S4_QUARANTINE" in r.out, r.out
    meta = load(root.bucket("escalated") / incident_id / "metadata.json")
    assert "unverifiable" in meta["reason"]


def test_a_syntax_error_no_tool_checks_is_unverifiable_not_flaky(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15 review: with `[checks] tools = []` a file with a syntax error was closed as
    resolved "not reproduced (flaky)" although nothing had checked it."""
    use_config(tmp_path, monkeypatch, "[checks]\ntools = []\n" + TIERS_OFF)
    incident_id = capture(cli, ws=ws, target="f.py", content="def f(:\n    pass\n")
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "-> S4_QUARANTINE" in r.out, r.out
    assert not (root.bucket("resolved") / incident_id).exists()
    meta = load(root.bucket("escalated") / incident_id / "metadata.json")
    assert "unverifiable" in meta["reason"], meta["reason"]
    assert "the check ran no tool and no verification command" in meta["reason"]


def test_a_verification_command_off_the_allowlist_is_refused(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By capture, which then writes nothing (pickup refuses such a bundle too: see
    test_pickup_trust.py), and by `plan --from`; one a plan written by hand adds is refused
    when the check would run it."""
    r = cli("capture", "--step", "dl", "--message", "download failed", "--verify",
            "curl -fsS http://127.0.0.1:9/", "--workdir", str(ws))  # fmt: skip
    assert r.code == 2 and r.out == "", r.out
    assert "program 'curl' is not on the allowlist" in r.err
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    incident_id = capture(cli, ws=ws, target="clean.py", content=CLEAN)
    assert "(PLAN)" in cli("step", incident_id).out
    replan = replacement_plan(tmp_path, incident_id, ["curl -fsS http://127.0.0.1:9/"])
    r = cli("plan", incident_id, "--from", str(replan))  # the plan's door refuses it too
    assert r.code == 2 and "verification_commands.0: " in r.err and "'curl'" in r.err, r.err
    # written into error_plans/ by hand, past that door: refused when the check would run it
    (root.plan_dir(incident_id) / "plan.json").write_bytes(replan.read_bytes())
    r = cli("drive", incident_id)
    assert "-> S_ERROR_INFRA" in r.out, r.out + r.err
    meta = load(root.bucket("escalated") / incident_id / "metadata.json")
    assert "refused" in meta["reason"] and "curl" in meta["reason"]


def replacement_plan(tmp_path: Path, incident_id: str, commands: list[str]) -> Path:
    path = tmp_path / "replan.json"
    plan = {
        "incident_id": incident_id, "generated_at": "2026-02-17T03:15:00+00:00",
        "summary": "the check must also run fail.py",
        "root_cause_hypotheses": [{"id": "H1", "confidence": "medium", "reason": "fail.py"}],
        "actions": [], "verification_commands": commands,
        "done_criteria": ["fail.py exits 0"], "source": "error-plan",
    }  # fmt: skip
    path.write_text(json.dumps(plan))
    return path


def test_a_plan_replaced_after_planning_is_what_the_next_check_runs(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    (ws / "fail.py").write_text("import sys\nsys.exit(5)\n")
    incident_id = capture(cli, ws=ws, target="clean.py", content=CLEAN)
    assert "(PLAN)" in cli("step", incident_id).out
    replan = replacement_plan(tmp_path, incident_id, ["python3 fail.py"])
    assert cli("plan", incident_id, "--from", str(replan)).code == 0
    r = cli("drive", incident_id)
    assert r.code == 0 and "-> S4_QUARANTINE" in r.out, r.out + r.err
    folder = root.bucket("escalated") / incident_id
    ctx = ErrorPipelineContext.model_validate(load(folder / "state.json"))
    assert ctx.verification_commands == ["python3 fail.py"]
    report = ErrorReport.model_validate(
        load(runs(root, incident_id)["error_report_attempt_0.json"])
    )
    assert [(f.tool, f.path, f.code) for f in report.issues] == [
        ("verify", "python3 fail.py", "EXIT_5")
    ]


def test_a_replaced_plan_drops_the_old_plans_commands_but_keeps_the_incidents(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    (ws / "fail.py").write_text("import sys\nsys.exit(5)\n")
    (ws / "ok.py").write_text("print('ok')\n")
    r = cli("capture", "--step", "dl", "--message", "download failed", "--verify", "python3 ok.py",
            "--workdir", str(ws))  # fmt: skip
    incident_id = r.out.strip()
    first = replacement_plan(tmp_path, incident_id, ["python3 fail.py"])
    assert cli("plan", incident_id, "--from", str(first)).code == 0
    assert "(PLAN)" in cli("step", incident_id).out
    second = replacement_plan(tmp_path, incident_id, [])
    assert cli("plan", incident_id, "--from", str(second)).code == 0
    r = cli("drive", incident_id)
    assert "-> S_SUCCESS" in r.out, r.out + r.err
    ctx = ErrorPipelineContext.model_validate(
        load(root.bucket("resolved") / incident_id / "state.json")
    )
    assert ctx.verification_commands == ["python3 ok.py"]


THREE_SAME_TYPE_ERRORS = (
    "".join(
        f'def {name}() -> int:\n    return "{name}"\n\n\n' for name in ("one", "two", "three")
    ).rstrip("\n")
    + "\n"
)
ONLY = '[tiers.{0}]\nmode = "on"\nmax_attempts = 3\n'
OFF = '[tiers.{0}]\nmode = "off"\n'


def drive_with_one_tier(
    cli: Cli,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    agent: str,
    fixer: str,
    name: str,
    text: str,
) -> tuple[str, str]:
    """Only `agent`'s tier on (3 passes), with a stand-in running `fixer`; capture `name`
    holding `text` and drive it to the end: the tier must have repeated twice (it made
    progress each time) and resolved it. Returns the incident id and drive's output."""
    stand_in(bin_dir, agent, fixer)
    tiers = "".join((ONLY if a == agent else OFF).format(a) for a in ("aider", "codex", "claude"))
    use_config(tmp_path, monkeypatch, TYPED + tiers)
    incident_id = capture(cli, step="typecheck", ws=ws, target=name, content=text)
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    tier = {"aider": "S1_AIDER", "codex": "S2_CODEX", "claude": "S3_CLAUDE"}[agent]
    assert r.out.count(f"{tier}_RECHECK -> {tier}_FIX") == 2, r.out
    assert f"{tier}_RECHECK -> S_SUCCESS" in r.out, r.out
    return incident_id, str(r.out)


def test_a_tier_repeats_while_findings_with_one_message_fall(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    # one fix per call; mypy reports all three alike: got "str", expected "int"
    fixer = (
        "import re; p = pathlib.Path('same.py')\n"
        "p.write_text(re.sub(r'return \"\\w+\"', 'return 1', p.read_text(), count=1))"
    )
    incident_id, out = drive_with_one_tier(
        cli, ws, tmp_path, monkeypatch, bin_dir, "aider", fixer, "same.py", THREE_SAME_TYPE_ERRORS
    )
    files = runs(root, incident_id)
    totals = [
        ErrorReport.model_validate(load(files[f"error_report_attempt_{n}.json"])).summary
        for n in "0145"
    ]
    assert [t.total_issues for t in totals] == [3, 2, 1, 0]
    assert len({str(i.message) for i in ErrorReport.model_validate(
        load(files["error_report_attempt_0.json"])).issues}) == 1  # fmt: skip
    result = RunResult.model_validate(load(files["run_result.json"]))
    assert (result.loops_used, result.same_error_repeats) == (3, 0)


THREE_TYPE_ERRORS = (
    'def one() -> int:\n    return "one"\n\n\n'
    "def two() -> str:\n    return 2\n\n\n"
    "def three() -> bool:\n    return 3.0\n"
)


def test_each_tier_has_its_own_max_attempts(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    # codex fixes one distinct finding per call; aider's max_attempts stays the default 1
    fixer = (
        "sys.stdin.read(); p = pathlib.Path('three.py'); text = p.read_text()\n"
        "for bad, good in (('\"one\"', '1'), ('return 2', 'return \"2\"'), ('3.0', 'True')):\n"
        "    if bad in text:\n"
        "        p.write_text(text.replace(bad, good)); break"
    )
    incident_id, out = drive_with_one_tier(
        cli, ws, tmp_path, monkeypatch, bin_dir, "codex", fixer, "three.py", THREE_TYPE_ERRORS
    )
    ctx = ErrorPipelineContext.model_validate(
        load(root.bucket("resolved") / incident_id / "state.json")
    )
    assert ctx.agent_attempt_counts == {"codex": 3}
    assert ctx.agent_max_attempts == {"aider": 1, "codex": 3, "claude": 1}


def test_a_pickup_fsyncs_the_incident_folder_once_not_per_step(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """Plan, check and decision redo identically after a power cut, so their commits and
    the check's report are fsynced as files (old-or-new) and their folders once, by the
    close, in order, before the incident's folder moves."""
    import os

    from incidents.config import load_config
    from incidents.watch import worker

    use_config(tmp_path, monkeypatch, FAST)
    incident_id = capture(cli, ws=ws, target="clean.py", content=CLEAN)
    folder = str(root.inbox / incident_id)
    synced: list[str] = []
    real_fsync = os.fsync

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    result = worker.pickup(str(root.path), load_config(None), incident_id)
    assert result.result == "terminal" and result.ticks == 3, result
    assert synced.count(folder) == 1, synced
    assert synced.count(f"{folder}/state.json") == 0  # its temp file is fsynced, then renamed
    # the run artifacts' folder too, and first: state.json refers to the report in it
    runs_dir = str(root.runs_dir(incident_id))
    assert synced.count(runs_dir) == 1, synced
    assert synced.index(runs_dir) < synced.index(folder)
    assert (root.bucket("resolved") / incident_id / "status.txt").read_text() == "resolved\n"


def test_the_mirror_shows_the_plan_and_running_while_the_check_runs(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """A pickup writes the mirror once for several quick ticks, but what it committed
    before a check is there while the check's command runs (written as it starts), and
    the incident is `running` by then."""
    from incidents.config import load_config
    from incidents.watch import worker

    use_config(tmp_path, monkeypatch, FAST)
    seen = ws / "seen.json"
    (ws / "peek.py").write_text(
        "import json, sqlite3\n"
        f"db = sqlite3.connect({str(root.db_path)!r})\n"
        "rows = db.execute('SELECT event_type FROM events ORDER BY id').fetchall()\n"
        "state = db.execute('SELECT state, status FROM incidents').fetchall()\n"
        "status = [open(p).read() for p in __import__('glob').glob("
        f"{str(root.inbox / '*' / 'status.txt')!r})]\n"
        f"open({str(seen)!r}, 'w').write(json.dumps([[r[0] for r in rows], state, status]))\n"
    )
    r = cli("capture", "--step", "sync", "--message", "sync failed", "--workdir", str(ws),
            "--verify", "python peek.py", "--no-dedupe")  # fmt: skip
    assert r.code == 0, r.err
    incident_id = r.out.strip()
    result = worker.pickup(str(root.path), load_config(None), incident_id)
    assert result.result == "terminal", result
    events_then, state_then, status_then = json.loads(seen.read_text())
    # planning leaves the machine in S_INIT (planned), and that is what the mirror showed;
    # the incident is `running` from its check's start, on disk and in the mirror
    assert events_then == ["captured", "state_transition", "plan_generated"], events_then
    assert state_then == [["S_INIT", "running"]] and status_then == ["running\n"], (
        state_then, status_then,
    )  # fmt: skip
    assert events(root, incident_id)[-1] == "archived"  # and the rest once it closed
