"""Seed 003's signature tracker against a real reports root: real folders, the real mirror,
real fixer runs (a stand-in aider), real processes for the concurrency and the example."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from incidents import budget_ledger
from incidents.errors import UsageError
from incidents.layout import Root
from incidents.tracker import ErrorSignatureTracker
from incidents.vocab import ErrorCode, FailureClass
from tests.helpers import BROKEN, REPO, Cli, capture, ctx_of, use_config
from tests.stand_ins import on_path, stand_in

AIDER_ONLY = (
    '[checks]\ntools = ["ruff"]\n[tiers.aider]\nmode = "on"\n'
    '[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)


def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, extra: str = "") -> None:
    use_config(tmp_path, monkeypatch, f"{extra}[policy]\n{text}")


def escalation_rows(root: Root) -> list[tuple[str, str, str]]:
    with sqlite3.connect(root.db_path) as conn:
        rows = conn.execute("SELECT incident_id, signature, reason FROM escalations ORDER BY id")
        return [(str(a), str(b), str(c)) for a, b, c in rows]


# --- retry -> escalate -> the global threshold ----------------------------------------------


def test_retries_then_escalates_then_the_threshold_pauses_the_root(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy(tmp_path, monkeypatch, "signature_budget = 2\nescalation_threshold = 2\n")
    tracker = ErrorSignatureTracker(root, step="agent")
    error = ValueError("totals do not add up: 41 != 42")
    first = tracker.record_and_check(error, tried="summed floats")
    assert (first.action, first.attempts, first.budget) == ("retry", 1, 2)
    assert first.failure_class is FailureClass.CODE and first.error_code is ErrorCode.UNKNOWN
    assert first.retry_context is not None and first.retry_context.attempt_number == 1
    rendered = first.retry_context.render()
    assert "max_attempts: 2" in rendered and "summed floats" in rendered
    assert "ValueError: totals do not add up: 41 != 42" in rendered
    second = tracker.record_and_check(ValueError("totals do not add up: 40 != 42"))
    assert (second.action, second.attempts, second.signature) == ("retry", 2, first.signature)
    third = tracker.record_and_check(error)
    assert (third.action, third.attempts, third.retry_context) == ("escalate", 2, None)
    assert third.reason == "signature budget exhausted (2/2)" and not third.paused
    assert not tracker.global_threshold_exceeded()
    # the escalation is an incident in the escalated archive, with its record in the mirror
    assert third.incident_id is not None
    where, folder = root.locate(third.incident_id)
    assert where == "escalated"
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["escalation_kind"] == "budget_exhausted"
    assert meta["error_signature"] == first.signature
    assert escalation_rows(root) == [(third.incident_id, first.signature, third.reason)]
    listed = cli("status", "--all", "--json").json()
    assert [i["incident_id"] for i in listed["incidents"]] == [third.incident_id]
    # the second escalation reaches the threshold: its own record counts (written first)
    fourth = tracker.record_and_check(PermissionError(13, "Permission denied"))
    assert fourth.action == "escalate" and fourth.paused
    assert tracker.global_threshold_exceeded()
    paused = cli("status", "--json").json()["paused"]
    assert paused["by"] == "threshold" and "2 groups escalated" in paused["reason"]
    assert fourth.incident_id is not None and paused["reason"].endswith(fourth.incident_id)
    assert cli("review", "--json").json()["escalated"] == 2
    assert cli("resume").code == 0
    assert not tracker.global_threshold_exceeded()


def test_the_escalation_records_survive_a_rebuilt_mirror(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy(tmp_path, monkeypatch, "signature_budget = 1\n")
    tracker = ErrorSignatureTracker(root)
    assert tracker.record_and_check("deploy step failed after 31s").action == "retry"
    escalated = tracker.record_and_check("deploy step failed after 47s")
    assert escalated.action == "escalate"
    before = escalation_rows(root)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    assert cli("reindex").code == 0
    assert escalation_rows(root) == before
    # the loop's unit is in the root, not the mirror: the budget is still spent
    assert tracker.record_and_check("deploy step failed after 5s").action == "escalate"


# --- the caller's dict (seed 003's checkpoint sharing) ---------------------------------------


def test_retry_counts_is_the_callers_dict_updated_in_place(root: Root) -> None:
    checkpoint: dict[str, dict[str, int]] = {"retry_counts": {"older | step | kept": 7}}
    counts = checkpoint["retry_counts"]
    tracker = ErrorSignatureTracker(root, counts)
    assert tracker.retry_counts is counts
    decision = tracker.record_and_check(KeyError("user_id"))
    assert checkpoint["retry_counts"] is counts
    assert counts == {"older | step | kept": 7, decision.signature: 1}
    tracker.record_and_check(KeyError("user_id"))
    assert counts[decision.signature] == 2
    tracker.reset_signature(decision.signature, "read the id from the session")
    assert tracker.retry_counts is counts and counts == {"older | step | kept": 7}
    again = tracker.record_and_check(KeyError("user_id"))
    assert again.attempts == 1 and counts[decision.signature] == 1
    assert again.guidance == "read the id from the session"


# --- never retry -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error, code",
    [
        (PermissionError(13, "Permission denied", "/srv/app"), ErrorCode.UNKNOWN),
        ("HTTP 401 Unauthorized: token expired", ErrorCode.UNKNOWN),
        ("pre-commit hook failed", ErrorCode.HOOK_FAILURE),
        (RuntimeError("HTTP 429 Too Many Requests"), ErrorCode.RATE_LIMIT),  # fail fast
    ],
)
def test_never_retry_escalates_at_once_without_spending_budget(
    root: Root, error: object, code: ErrorCode
) -> None:
    tracker = ErrorSignatureTracker(root)
    assert tracker.should_escalate_immediately(error)
    decision = tracker.record_and_check(error)
    assert (decision.action, decision.attempts, decision.error_code) == ("escalate", 0, code)
    assert decision.incident_id is not None
    assert root.locate(decision.incident_id)[0] == "escalated"
    assert budget_ledger.read(root, decision.signature).attempts == ()
    meta = json.loads(
        (root.bucket("escalated") / decision.incident_id / "metadata.json").read_text()
    )
    assert meta["escalation_kind"] == "never_retry"


def test_code_and_env_failures_are_retried(root: Root) -> None:
    tracker = ErrorSignatureTracker(root)
    for error in (SyntaxError("invalid syntax"), ModuleNotFoundError("No module named 'x'")):
        assert not tracker.should_escalate_immediately(error)
        assert tracker.record_and_check(error).action == "retry"


# --- classification and signatures are capture's ---------------------------------------------


@pytest.mark.parametrize(
    "error, failure_class, code",
    [
        (TimeoutError("timed out"), FailureClass.TRANSIENT, ErrorCode.TIMEOUT),
        (
            subprocess.TimeoutExpired(["sleep", "5"], 1.0),
            FailureClass.TRANSIENT,
            ErrorCode.TIMEOUT,
        ),
        (MemoryError(), FailureClass.ENV, ErrorCode.UNKNOWN),
        (PermissionError(13, "Permission denied"), FailureClass.NEVER_RETRY, ErrorCode.UNKNOWN),
        (ModuleNotFoundError("No module named 'pandas'"), FailureClass.ENV, ErrorCode.UNKNOWN),
        (SyntaxError("invalid syntax"), FailureClass.CODE, ErrorCode.SYNTAX),
        ("Connection refused by db.internal:5432", FailureClass.TRANSIENT, ErrorCode.UNKNOWN),
    ],
)
def test_an_exception_or_a_text_is_classified_and_signed_as_capture_would(
    cli: Cli, root: Root, error: object, failure_class: FailureClass, code: ErrorCode
) -> None:
    tracker = ErrorSignatureTracker(root, step="agent")
    assert tracker.classify_error(error) is failure_class
    failure = tracker.failure(error)
    assert failure.error_code is code
    incident_id = capture(cli, step="agent", message=failure.message)
    incident = json.loads((root.inbox / incident_id / "incident.json").read_text())
    assert incident["failure_class"] == failure_class.value
    assert incident["error_signature"] == tracker.signature(error)
    # a signature is taken as it is, with the class it names
    assert tracker.failure(incident["error_signature"]).signature == incident["error_signature"]
    assert tracker.classify_error(incident["error_signature"]) is failure_class


def test_a_failed_subprocess_is_read_with_its_exit_code_and_output(root: Root) -> None:
    exc = subprocess.CalledProcessError(127, ["deploy"], output=b"", stderr=b"deploy: not found")
    failure = ErrorSignatureTracker(root).failure(exc)
    assert failure.exit_code == 127 and "deploy: not found" in failure.log_text
    assert failure.failure_class is FailureClass.ENV  # exit 127: a missing program


# --- one budget with the fixer tiers --------------------------------------------------------------


def test_fixer_attempts_count_against_the_loops_budget(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy(tmp_path, monkeypatch, "escalation_threshold = 0\n", extra=AIDER_ONLY)
    stand_in(on_path(tmp_path, monkeypatch), "aider", "pass  # changes nothing")
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, step="lint", message="f.py is broken", ws=ws, target="f.py",
                          content=BROKEN)  # fmt: skip
    assert cli("drive", incident_id).code == 0
    assert len(ctx_of(root, incident_id).ai_attempts) == 1
    tracker = ErrorSignatureTracker(root, step="lint", workdir=ws)
    signature = ctx_of(root, incident_id).error_signature
    assert tracker.signature("f.py is broken") == signature
    decisions = [tracker.record_and_check("f.py is broken") for _ in range(3)]
    assert [(d.action, d.attempts) for d in decisions] == [
        ("retry", 2), ("retry", 3), ("escalate", 3)
    ]  # fmt: skip


def test_the_loops_units_count_against_the_fixer_tiers(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy(tmp_path, monkeypatch, "escalation_threshold = 0\n", extra=AIDER_ONLY)
    stand_in(on_path(tmp_path, monkeypatch), "aider", "pass  # changes nothing")
    ws = tmp_path / "ws"
    ws.mkdir()
    tracker = ErrorSignatureTracker(root, step="lint", workdir=ws)
    assert [tracker.record_and_check("f.py is broken").action for _ in range(3)] == ["retry"] * 3
    incident_id = capture(cli, step="lint", message="f.py is broken", ws=ws, target="f.py",
                          content=BROKEN)  # fmt: skip
    r = cli("drive", incident_id)
    ctx = ctx_of(root, incident_id)
    assert ctx.ai_attempts == [] and ctx.escalation_kind == "budget_exhausted", r.out
    assert "(3/3)" in (ctx.escalation_reason or "")
    # a person's decision on that escalation resets the budget for the loop as well
    assert cli("resolve-escalation", incident_id, "--guidance", "fixed upstream").code == 0
    again = tracker.record_and_check("f.py is broken")
    assert (again.attempts, again.guidance) == (1, "fixed upstream")
    # a later reset of the loop's own is the one its decisions carry
    tracker.reset_signature(again.signature, "use the new parser")
    assert tracker.record_and_check("f.py is broken").guidance == "use the new parser"


def test_a_reset_by_the_tracker_gives_the_fixer_tiers_their_budget_back(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy(tmp_path, monkeypatch, "escalation_threshold = 0\n", extra=AIDER_ONLY)
    stand_in(on_path(tmp_path, monkeypatch), "aider", "pass  # changes nothing")
    ws = tmp_path / "ws"
    ws.mkdir()
    tracker = ErrorSignatureTracker(root, step="lint", workdir=ws)
    for _ in range(3):
        tracker.record_and_check("f.py is broken")
    tracker.reset_signature(tracker.signature("f.py is broken"), "the parser was upgraded")
    incident_id = capture(cli, step="lint", message="f.py is broken", ws=ws, target="f.py",
                          content=BROKEN)  # fmt: skip
    cli("drive", incident_id)
    assert len(ctx_of(root, incident_id).ai_attempts) == 1


# --- two processes ------------------------------------------------------------------------------

RECORDER = textwrap.dedent("""
    import json, os, sys, time
    from incidents.tracker import ErrorSignatureTracker
    tracker = ErrorSignatureTracker(sys.argv[1], step="agent")
    go = sys.argv[2]
    while not os.path.exists(go):
        time.sleep(0.001)
    actions = [tracker.record_and_check("ETL batch failed").action for _ in range(8)]
    print(json.dumps(actions))
    """)


def test_processes_recording_at_once_never_overspend_the_budget(
    root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy(tmp_path, monkeypatch, "signature_budget = 12\nescalation_threshold = 0\n")
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RECORDER, str(root.path), str(go)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        for _ in range(3)
    ]
    go.touch()
    actions: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        actions += json.loads(out)
    assert actions.count("retry") == 12 and actions.count("escalate") == 12
    tracker = ErrorSignatureTracker(root, step="agent")
    assert len(budget_ledger.read(root, tracker.signature("ETL batch failed")).attempts) == 12
    # the 12 escalations after the budget ran out fold into one: one record, one incident
    assert len(escalation_rows(root)) == 1
    assert len(list(root.bucket("escalated").iterdir())) == 1


ONE_RECORD = textwrap.dedent("""
    import pathlib, sys
    from incidents.tracker import ErrorSignatureTracker
    tracker = ErrorSignatureTracker(sys.argv[1], step="agent")
    pathlib.Path(sys.argv[2]).touch()
    print(tracker.record_and_check("ETL batch failed").action)
    """)


def test_a_unit_is_counted_and_taken_under_the_groups_budget_lock(
    root: Root, tmp_path: Path
) -> None:
    tracker = ErrorSignatureTracker(root, step="agent")
    group = tracker.signature("ETL batch failed")
    ready = tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with budget_ledger.lock(root, group):
        proc = subprocess.Popen(
            [sys.executable, "-c", ONE_RECORD, str(root.path), str(ready)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)
        assert proc.poll() is None  # it waits for the lock ...
        assert budget_ledger.read(root, group).attempts == ()
    out, err = proc.communicate(timeout=60)  # ... and takes its unit once it is free
    assert (proc.returncode, out.strip()) == (0, "retry"), err
    assert len(budget_ledger.read(root, group).attempts) == 1


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [42, None, b"bytes", ["a list"]])
def test_anything_but_a_text_or_an_exception_is_a_type_error(root: Root, value: object) -> None:
    tracker = ErrorSignatureTracker(root)
    expected = f"expected an exception or a str (an error text or a signature), got {type(value).__name__}"  # fmt: skip
    for method in (tracker.record_and_check, tracker.classify_error,
                   tracker.should_escalate_immediately):  # fmt: skip
        with pytest.raises(TypeError) as info:
            method(value)
        assert str(info.value) == expected
    assert not root.inbox.exists() or list(root.inbox.iterdir()) == []


def test_bad_arguments_are_refused_before_anything_is_written(root: Root) -> None:
    with pytest.raises(TypeError, match="retry_counts: expected a dict or None, got list"):
        ErrorSignatureTracker(root, [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a str or a pathlib.Path, got int"):
        ErrorSignatureTracker(42)  # type: ignore[arg-type]
    tracker = ErrorSignatureTracker(root)
    with pytest.raises(TypeError, match="tried: expected a str, got int"):
        tracker.record_and_check("x failed", tried=3)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="the error text is empty"):
        tracker.record_and_check("   ")
    with pytest.raises(UsageError, match="guidance must not be empty"):
        tracker.reset_signature("code | agent | x", " ")
    with pytest.raises(UsageError, match="workdir /: "):
        ErrorSignatureTracker(root, workdir="/")


# --- the example, as the README runs it ----------------------------------------------------------


def test_the_example_agent_loop_runs_as_written(cli: Cli, root: Root) -> None:
    r = subprocess.run(
        [sys.executable, str(REPO / "examples" / "agent_loop.py"), "--root", str(root.path)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert sum("retry: retry" in line for line in lines) == 4
    assert any("done: totals fixed" in line for line in lines)
    assert any("escalate: never_retry" in line for line in lines)
    listed = cli("status", "--all", "--json").json()["incidents"]
    assert sorted(i["failure_class"] for i in listed) == ["code", "never_retry"]


def test_while_the_root_is_paused_no_retry_is_handed_out_and_no_unit_taken(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy(tmp_path, monkeypatch, "signature_budget = 3\n")
    counts: dict[str, int] = {}
    tracker = ErrorSignatureTracker(root, counts, step="agent")
    error = ValueError("totals do not add up: 41 != 42")
    assert tracker.record_and_check(error).retry
    budget_dir = root.state / "budget"
    ledger_before = {p.name: p.read_bytes() for p in budget_dir.iterdir()}
    assert cli("pause", "--reason", "too many escalations").code == 0
    for _ in range(4):
        d = tracker.record_and_check(error, tried="again")
        assert (d.action, d.paused, d.retry, d.retry_context) == ("paused", True, False, None)
        assert d.attempts == 1 and "paused (too many escalations)" in d.reason
        assert d.incident_id is None
    assert {p.name: p.read_bytes() for p in budget_dir.iterdir()} == ledger_before
    assert counts == {d.signature: 1} and escalation_rows(root) == []
    assert not (root.inbox.exists() and list(root.inbox.iterdir()))
    assert cli("resume").code == 0
    after = tracker.record_and_check(error)
    assert (after.action, after.attempts) == ("retry", 2)


def test_repeats_after_the_budget_is_spent_fold_into_the_open_escalation(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop that keeps failing after its escalation: one escalated incident, one record
    toward the threshold, however often it asks; a reset (a person's answer) opens the
    next escalation afresh."""
    policy(tmp_path, monkeypatch, "signature_budget = 1\nescalation_threshold = 3\n")
    tracker = ErrorSignatureTracker(root, step="agent")
    error = ValueError("totals do not add up: 41 != 42")
    assert tracker.record_and_check(error).retry
    first = tracker.record_and_check(error)
    assert first.action == "escalate" and first.incident_id is not None
    for _ in range(4):
        again = tracker.record_and_check(error)
        assert (again.action, again.incident_id, again.paused) == (
            "escalate", first.incident_id, False,
        )  # fmt: skip
        assert "folded into the open escalation" in again.reason
    assert [r[0] for r in escalation_rows(root)] == [first.incident_id]
    assert len(list(root.bucket("escalated").iterdir())) == 1
    assert not tracker.global_threshold_exceeded()
    events = (root.bucket("escalated") / first.incident_id / "events.jsonl").read_text()
    assert events.count("escalation_repeat") == 4
    # a person's answer: the next exhaustion is a new escalation
    tracker.reset_signature(first.signature, "sum in cents")
    assert tracker.record_and_check(error).retry
    second = tracker.record_and_check(error)
    assert second.action == "escalate" and second.incident_id not in (None, first.incident_id)
    assert len(escalation_rows(root)) == 2
