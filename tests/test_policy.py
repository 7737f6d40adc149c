"""Issue 6's retry policy end to end: fail-fast codes, never-retry, transient backoff on an
injected clock, shared signature budgets, no progress, the global threshold, and fixers
that crash, hang or edit outside their targets. Real folders, SQLite, tools and stand-ins."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from incidents import policy
from incidents.config import load_config
from incidents.layout import Root
from incidents.models import AIAttempt, QuarantineMetadata, RunResult
from incidents.step.service import drive, run_step
from incidents.vocab import ErrorCode, FailureClass
from tests.helpers import BROKEN, FIXED, Cli, capture, ctx_of, events, use_config
from tests.stand_ins import on_path, stand_in

BASE = (
    '[checks]\ntools = ["ruff"]\n[policy]\nescalation_threshold = 0\n'
    '[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
AIDER_ON = '[tiers.aider]\nmode = "on"\n'


def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    use_config(tmp_path, monkeypatch, text)
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws


# --- seed 002's table, one row per error code ------------------------------------------------

TABLE = {
    ErrorCode.TIMEOUT: (FailureClass.TRANSIENT, FailureClass.TRANSIENT),
    ErrorCode.RATE_LIMIT: (FailureClass.TRANSIENT, FailureClass.NEVER_RETRY),
    ErrorCode.SYNTAX: (FailureClass.CODE, FailureClass.CODE),
    ErrorCode.TEST_FAILURE: (FailureClass.CODE, FailureClass.CODE),
    ErrorCode.LINT_FAILURE: (FailureClass.CODE, FailureClass.CODE),
    ErrorCode.TASK_FAILED: (FailureClass.CODE, FailureClass.CODE),
    ErrorCode.HOOK_FAILURE: (FailureClass.NEVER_RETRY, FailureClass.NEVER_RETRY),
    ErrorCode.UNKNOWN: (FailureClass.UNKNOWN, FailureClass.UNKNOWN),
}


@pytest.mark.parametrize("code", list(ErrorCode))
def test_every_error_code_has_its_seed_002_behaviour(code: ErrorCode) -> None:
    classified, acted_on = TABLE[code]
    assert policy.effective_failure_class(code, classified) is acted_on
    retried = code not in (ErrorCode.RATE_LIMIT, ErrorCode.HOOK_FAILURE)
    assert (code in policy.RETRIED_CODES) is retried
    assert (policy.retry_behaviour(code, classified) == "escalate at once") is not retried


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("API returned HTTP 429 Too Many Requests", "RATE_LIMIT"),
        ("pre_start_hook failed: exit 1", "HOOK_FAILURE"),
    ],
)
def test_rate_limit_and_hook_failure_fail_fast_end_to_end(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str, code: str
) -> None:
    ws = setup(tmp_path, monkeypatch, BASE + AIDER_ON)
    stand_in(on_path(tmp_path, monkeypatch), "aider", "raise SystemExit('must not run')")
    incident_id = capture(cli, message=message, ws=ws, target="f.py", content=BROKEN)
    incident = json.loads((root.inbox / incident_id / "incident.json").read_text())
    assert incident["error_code"] == code
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert r.out.count("\n") == 1 and "S_INIT -> S4_QUARANTINE (QUARANTINE)" in r.out
    ctx = ctx_of(root, incident_id)
    assert f"never_retry ({code})" in (ctx.escalation_reason or "")
    assert ctx.report_labels == [] and ctx.ai_attempts == []  # no check, no fixer
    meta = QuarantineMetadata.model_validate_json(
        (root.bucket("escalated") / incident_id / "metadata.json").read_text()
    )
    assert meta.escalation_kind == "never_retry"


def test_never_retry_escalates_at_once(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = setup(tmp_path, monkeypatch, BASE + AIDER_ON)
    incident_id = capture(cli, "--failure-class", "never_retry", message="bad credentials",
                          ws=ws, target="f.py", content=BROKEN)  # fmt: skip
    r = cli("drive", incident_id)
    assert "S_INIT -> S4_QUARANTINE" in r.out and r.out.count("\n") == 1, r.out
    with sqlite3.connect(root.db_path) as conn:
        rows = conn.execute("SELECT incident_id, resolved_at FROM escalations").fetchall()
    assert rows == [(incident_id, None)]
    assert "escalation" in events(root, incident_id)


# --- transient: backoff honoured through an injected clock, no sleeps --------------------------

FLAKY = """import pathlib, sys
marker = pathlib.Path("tries")
n = int(marker.read_text()) if marker.exists() else 0
marker.write_text(str(n + 1))
sys.exit(0 if n >= 1 else 1)
"""


def test_transient_failure_passes_on_its_second_try_after_the_backoff(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = setup(tmp_path, monkeypatch, BASE + '[tiers.aider]\nmode = "off"\n')
    (ws / "flaky.py").write_text(FLAKY)
    incident_id = capture(
        cli, "--verify", "python flaky.py", message="download failed: Connection timed out", ws=ws
    )
    assert (
        json.loads((root.inbox / incident_id / "incident.json").read_text())["failure_class"]
        == "transient"
    )
    cfg = load_config(None)
    t0 = datetime(2030, 1, 1, tzinfo=UTC)
    now = [t0]
    out = drive(root, cfg, incident_id, clock=lambda: now[0])
    assert out.idle and out.not_before is not None and not out.terminal
    ctx = ctx_of(root, incident_id)
    assert ctx.transient_retries == 1 and ctx.report_labels == ["0"]
    assert (ws / "tries").read_text() == "1"
    assert ctx.last_check_at is not None
    delay = (out.not_before - ctx.last_check_at).total_seconds()
    assert 2.5 <= delay <= 5.0  # base 5s, equal jitter: between half and all of it
    now[0] = out.not_before - timedelta(milliseconds=1)  # not yet due: nothing runs
    early = run_step(root, cfg, incident_id, clock=lambda: now[0])
    assert early.idle and (ws / "tries").read_text() == "1"
    now[0] = out.not_before
    final = drive(root, cfg, incident_id, clock=lambda: now[0])
    assert final.terminal and final.new_state == "S_SUCCESS", final
    assert (ws / "tries").read_text() == "2"
    assert "retrying" in events(root, incident_id)


# --- the signature budget, shared across incidents ----------------------------------------------


def test_budget_is_shared_by_a_signature_and_kept_apart_from_another(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = setup(tmp_path, monkeypatch, BASE + AIDER_ON)
    stand_in(on_path(tmp_path, monkeypatch), "aider", "pass  # changes nothing")
    same = []
    for _ in range(3):
        incident_id = capture(cli, message="f.py is broken", ws=ws, target="f.py", content=BROKEN)
        assert cli("drive", incident_id).code == 0
        same.append(incident_id)
        assert len(ctx_of(root, incident_id).ai_attempts) == 1
    signature = json.loads((root.bucket("escalated") / same[0] / "incident.json").read_text())[
        "error_signature"
    ]
    # the fourth with the same signature: budget 3/3 used, no fixer runs
    fourth = capture(cli, message="f.py is broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", fourth)
    assert "S0_BASELINE_CHECK -> S4_QUARANTINE" in r.out, r.out
    ctx = ctx_of(root, fourth)
    assert "(3/3)" in (ctx.escalation_reason or "")
    assert ctx.ai_attempts == [] and ctx.escalation_kind == "budget_exhausted"
    assert ctx.error_signature == signature
    # another signature keeps its own budget
    other = capture(
        cli, message="a different failure entirely", ws=ws, target="f.py", content=BROKEN
    )
    cli("drive", other)
    assert len(ctx_of(root, other).ai_attempts) == 1
    assert ctx_of(root, other).error_signature != signature
    with sqlite3.connect(root.db_path) as conn:
        used = dict(conn.execute("SELECT signature, attempts_used FROM errors").fetchall())
        escalations = conn.execute("SELECT count(*) FROM escalations").fetchone()[0]
    assert used[signature] == 3 and escalations == 5


def test_budget_is_derived_from_the_folders_after_the_mirror_is_deleted(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = setup(tmp_path, monkeypatch, BASE.replace("escalation_threshold = 0", "signature_budget = 1\nescalation_threshold = 0") + AIDER_ON)  # fmt: skip
    stand_in(on_path(tmp_path, monkeypatch), "aider", "pass")
    first = capture(cli, message="f.py is broken", ws=ws, target="f.py", content=BROKEN)
    cli("drive", first)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    assert cli("reindex").code == 0
    second = capture(cli, message="f.py is broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", second)
    ctx = ctx_of(root, second)
    assert "(1/1)" in (ctx.escalation_reason or "") and ctx.ai_attempts == [], r.out


# --- no progress moves on early ---------------------------------------------------------------


def test_no_progress_skips_the_tiers_remaining_passes(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = BASE.replace('[tiers.codex]\nmode = "off"', '[tiers.codex]\nmode = "on"')
    ws = setup(tmp_path, monkeypatch, text + '[tiers.aider]\nmode = "on"\nmax_attempts = 3\n')
    stand_in(on_path(tmp_path, monkeypatch), "aider", "pass")
    stand_in(on_path(tmp_path, monkeypatch), "codex", "sys.stdin.read()")
    incident_id = capture(cli, message="f.py is broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "S1_AIDER_RECHECK -> S2_CODEX_FIX" in r.out, r.out  # after one aider pass, not 3
    ctx = ctx_of(root, incident_id)
    assert [a.agent for a in ctx.ai_attempts] == ["aider", "codex"]
    result = RunResult.model_validate_json(
        (root.runs_dir(incident_id) / "run_result.json").read_text()
    )
    assert result.same_error_repeats == 2 == ctx.same_error_repeats


# --- the global threshold ---------------------------------------------------------------------


def test_threshold_pauses_everything_until_resume(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = setup(tmp_path, monkeypatch, "[policy]\nescalation_threshold = 2\n")
    first = capture(cli, "--failure-class", "never_retry", message="bad credentials",
                    ws=ws, target="f.py", content=BROKEN)  # fmt: skip
    cli("drive", first)
    assert cli("status", "--json").json()["paused"] is None
    second = capture(cli, "--failure-class", "never_retry", message="revoked token",
                     ws=ws, target="f.py", content=BROKEN)  # fmt: skip
    cli("drive", second)
    doc = cli("status", "--json").json()
    assert doc["paused"]["by"] == "threshold"
    assert "2 groups escalated" in doc["paused"]["reason"]
    assert "PAUSED since" in cli("status").out
    assert "build_paused" in events(root)
    # capture works while paused
    third = capture(cli, "--failure-class", "never_retry", message="expired licence",
                    ws=ws, target="f.py", content=BROKEN)  # fmt: skip
    r = cli("step", third)
    assert r.code == 1 and "paused since" in r.err
    assert state_missing(root, third)
    assert cli("resume").code == 0
    assert cli("status", "--json").json()["paused"] is None
    r = cli("drive", third)  # runs again; counts only escalations since the resume
    assert "S4_QUARANTINE" in r.out, r.out + r.err
    assert cli("status", "--json").json()["paused"] is None
    assert "resumed" in events(root)


def state_missing(root: Root, incident_id: str) -> bool:
    return not (root.inbox / incident_id / "state.json").exists()


# --- fixers that misbehave -------------------------------------------------------------------


def test_a_fixer_that_crashes_is_an_infra_failure(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = setup(tmp_path, monkeypatch, BASE + AIDER_ON)
    stand_in(on_path(tmp_path, monkeypatch), "aider", "raise RuntimeError('segfault-ish')")
    incident_id = capture(cli, message="f.py is broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "S1_AIDER_FIX -> S_ERROR_INFRA" in r.out, r.out
    meta = QuarantineMetadata.model_validate_json(
        (root.bucket("escalated") / incident_id / "metadata.json").read_text()
    )
    assert meta.final_status == "infra_failure" and "aider" in meta.reason
    [attempt] = ctx_of(root, incident_id).ai_attempts
    assert attempt.exit_code == 1 and "RuntimeError" in attempt.notes


def test_a_fixer_that_hangs_is_stopped_by_its_timeout(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = setup(tmp_path, monkeypatch, BASE + '[tiers.aider]\nmode = "on"\ntimeout_s = 0.5\n')
    stand_in(on_path(tmp_path, monkeypatch), "aider", "time.sleep(30)")
    incident_id = capture(cli, message="f.py is broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "S_ERROR_INFRA" in r.out, r.out
    assert "time" in (ctx_of(root, incident_id).escalation_reason or "").lower()


def test_a_fixer_edit_outside_its_targets_is_reverted(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = setup(tmp_path, monkeypatch, BASE + AIDER_ON)
    (ws / "keep.py").write_text("x = 1\n")
    stand_in(
        on_path(tmp_path, monkeypatch), "aider",
        f"pathlib.Path('f.py').write_text({FIXED!r}); pathlib.Path('keep.py').write_text('x = 2')"
        "; pathlib.Path('new.py').write_text('evil')",
    )  # fmt: skip
    incident_id = capture(cli, message="f.py is broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "-> S_SUCCESS" in r.out, r.out
    [attempt] = [AIAttempt.model_validate(a) for a in ctx_of(root, incident_id).ai_attempts]
    assert attempt.changed_files == ["f.py"]
    assert sorted(attempt.violations) == ["keep.py", "new.py"]
    assert (ws / "keep.py").read_text() == "x = 1\n" and not (ws / "new.py").exists()
    assert (ws / "f.py").read_text() == FIXED
