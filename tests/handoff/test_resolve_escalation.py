"""resolve-escalation (seed 003): a human's decision, with and without --requeue."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from incidents import mirror, policy
from incidents.layout import Root
from incidents.models import RunResult
from tests.helpers import BROKEN, FIXED, Cli, capture, ctx_of, events, incidents, use_config
from tests.stand_ins import on_path, stand_in

CONFIG = (
    '[checks]\ntools = ["ruff"]\n[policy]\nsignature_budget = 1\nescalation_threshold = 0\n'
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
# aider fixes the file only when the human's guidance reaches its prompt
AIDER = f"""
prompt = pathlib.Path(sys.argv[sys.argv.index("--message-file") + 1]).read_text()
if "close the parenthesis" in prompt:
    pathlib.Path("f.py").write_text({FIXED!r})
"""


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_config(tmp_path, monkeypatch, CONFIG)
    stand_in(on_path(tmp_path, monkeypatch), "aider", AIDER)
    path = tmp_path / "ws"
    path.mkdir()
    return path


def escalated(cli: Cli, ws: Path) -> str:
    incident_id = capture(cli, message="f.py broken", ws=ws, target="f.py", content=BROKEN)
    assert "S4_QUARANTINE" in cli("drive", incident_id).out
    return incident_id


def escalation_rows(root: Root) -> list[tuple[str, str | None, str | None]]:
    with sqlite3.connect(root.db_path) as conn:
        return conn.execute(
            "SELECT incident_id, resolved_at, guidance FROM escalations ORDER BY id"
        ).fetchall()


def test_resolve_without_requeue_archives_it_as_resolved(cli: Cli, root: Root, ws: Path) -> None:
    incident_id = escalated(cli, ws)
    assert cli("resolve-escalation", incident_id).code == 2  # --guidance is required
    r = cli("resolve-escalation", incident_id, "--guidance", "fixed upstream, nothing to do")
    assert r.code == 0 and "resolved -> error_archive/resolved/" in r.out, r.err
    folder = root.bucket("resolved") / incident_id
    assert folder.is_dir() and not (root.bucket("escalated") / incident_id).exists()
    doc = json.loads((folder / "incident.json").read_text())
    assert doc["status"] == "resolved" and "fixed upstream" in doc["resolution"]
    [decision] = json.loads((folder / "decisions.json").read_text())
    assert decision["decision"] == "resolved" and decision["by"] == "human"
    result = RunResult.model_validate_json(
        (root.runs_dir(incident_id) / "run_result.json").read_text()
    )
    assert result.final_status == "resolved" and "fixed upstream" in (result.reason or "")
    assert (root.runs_dir(incident_id) / "run_result.escalated.json").is_file()
    # no check found it clean: its verdict is not one to audit as a resolution, and it is
    # resolved by a person, not "escalated" in resolved/
    assert result.verdict is None and result.outcome == "resolved_by_human"
    shown = cli("status", incident_id)
    assert "outcome:         resolved by a person" in shown.out, shown.out
    assert cli("status", incident_id, "--json").json()["outcome"] == "resolved_by_human"
    listed = cli("status", "--all")
    assert "resolved by a person" in listed.out and ", 1 by a person" in listed.out
    assert f"{incident_id}: no verdict recorded" in cli("verify-archive").out
    [(iid, resolved_at, guidance)] = escalation_rows(root)
    assert iid == incident_id and resolved_at and guidance == "fixed upstream, nothing to do"
    assert cli("resolve-escalation", incident_id, "--guidance", "again").code == 1


def test_a_decision_needs_only_what_it_records_from_incident_json(cli: Cli, root: Root) -> None:
    """An escalated bundle whose incident.json lost a field the decision does not use
    (here seed 004's `ym`) can still be decided on: a person must be able to close it."""
    incident_id = capture(cli)
    assert cli("archive", incident_id, "--escalated", "--reason", "needs a human").code == 0
    path = root.bucket("escalated") / incident_id / "incident.json"
    doc = json.loads(path.read_text())
    del doc["ym"]
    path.write_text(json.dumps(doc))
    r = cli("resolve-escalation", incident_id, "--guidance", "closed by hand")
    assert r.code == 0, r.err
    assert (root.bucket("resolved") / incident_id).is_dir()


def test_requeue_resets_the_budget_and_carries_the_guidance(cli: Cli, root: Root, ws: Path) -> None:
    first = escalated(cli, ws)  # aider tried once without guidance: budget 1/1 used
    second = escalated(cli, ws)  # same signature: escalated on the budget, no fixer
    assert ctx_of(root, second).escalation_kind == "budget_exhausted"
    assert ctx_of(root, second).ai_attempts == []
    before = ctx_of(root, first)
    r = cli("resolve-escalation", first, "--guidance", "close the parenthesis", "--requeue")
    assert r.code == 0 and "requeue -> error_inbox/" in r.out, r.err
    ctx = ctx_of(root, first)
    assert ctx.current_state == "S_INIT" and ctx.final_status is None
    assert ctx.step == before.step and ctx.report_labels == before.report_labels  # history kept
    assert len(ctx.ai_attempts) == 1
    assert json.loads((root.inbox / first / "incident.json").read_text())["status"] == "new"
    assert (root.runs_dir(first) / "run_result.1.json").is_file()
    r = cli("drive", first)
    assert "S1_AIDER_FIX" in r.out and "-> S_SUCCESS" in r.out, r.out + r.err  # budget reset
    prompt = (root.runs_dir(first) / "prompt_attempt_2.md").read_text()
    assert "close the parenthesis" in prompt
    assert (ws / "f.py").read_text() == FIXED
    assert len(ctx_of(root, first).ai_attempts) == 2
    labels = ctx_of(root, first).report_labels
    assert labels[: len(before.report_labels)] == before.report_labels  # earlier reports kept
    assert len(set(labels)) == len(labels) > len(before.report_labels)  # new labels, no reuse
    rows = escalation_rows(root)
    assert [r[0] for r in rows] == [first, second] and rows[0][1] and rows[1][1] is None
    assert {"escalation_resolved", "requeued"} <= set(events(root, first))


def test_only_escalated_incidents_can_be_resolved(cli: Cli, root: Root, ws: Path) -> None:
    r = cli("capture", "--step", "x", "--message", "m")
    r = cli("resolve-escalation", r.out.strip(), "--guidance", "g")
    assert r.code == 1 and "not escalated" in r.err


def budget(root: Root, signature: str) -> tuple[int, str | None]:
    conn = mirror.connect(root.db_path)
    try:
        return mirror.budget_used(conn, signature), mirror.budget_reset_at(conn, signature)
    finally:
        conn.close()


def test_budget_reset_survives_a_deleted_mirror(cli: Cli, root: Root, ws: Path) -> None:
    first = escalated(cli, ws)  # aider tried once: budget 1/1 used
    second = escalated(cli, ws)  # escalated on the budget
    signature = json.loads((root.bucket("escalated") / first / "incident.json").read_text())[
        "error_signature"
    ]
    assert budget(root, signature)[0] == 1
    assert cli("resolve-escalation", first, "--guidance", "close the parenthesis",
               "--requeue").code == 0  # fmt: skip
    used, reset_at = budget(root, signature)
    assert used == 0 and reset_at  # the human reset it
    own = ctx_of(root, first).ai_attempts
    via_policy = policy.budget_used(root, signature, first, own, fallback=99)
    rows = escalation_rows(root)
    for path in root.state.glob("mirror.sqlite3*"):
        path.unlink()
    assert cli("reindex").code == 0
    assert budget(root, signature) == (used, reset_at)
    assert policy.budget_used(root, signature, first, own, fallback=99) == via_policy == 0
    assert escalation_rows(root) == rows  # the records too: resolved first, open second
    assert [r[0] for r in rows] == [first, second] and rows[0][1] and rows[1][1] is None
    # and the next climb is allowed (budget reset), as it would be without the deletion
    r = cli("drive", first)
    assert "S1_AIDER_FIX" in r.out and "-> S_SUCCESS" in r.out, r.out + r.err


# a crash between rewriting the bundle (decisions.json, state.json, status) and moving it:
# the process dies at the rename of the folder, the way SIGKILL would leave it
CRASH_AT_MOVE = """
import os, sys
real = os.rename
def rename(src, dst, *a, **k):
    if "error_inbox" in str(dst) or "resolved" in str(dst):
        os._exit(9)
    return real(src, dst, *a, **k)
os.rename = rename
from incidents.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("requeue", [True, False])
def test_a_crashed_resolve_is_finished_by_a_rerun_without_a_second_decision(cli: Cli, root: Root, ws: Path, requeue: bool) -> None:  # fmt: skip
    incident_id = escalated(cli, ws)
    args = ["resolve-escalation", incident_id, "--guidance", "close the parenthesis"]
    args += ["--requeue"] if requeue else []
    crashed = subprocess.run(
        [sys.executable, "-c", CRASH_AT_MOVE, *args],
        capture_output=True, text=True, env=dict(os.environ), timeout=120,
    )  # fmt: skip
    assert crashed.returncode == 9, crashed.stderr
    folder = root.bucket("escalated") / incident_id
    assert folder.is_dir() and len(json.loads((folder / "decisions.json").read_text())) == 1
    r = incidents(*args)
    assert r.returncode == 0, r.stderr
    bucket = "inbox" if requeue else "resolved"
    places = [
        b for b in ("inbox", "escalated", "resolved") if (root.bucket(b) / incident_id).exists()
    ]
    assert places == [bucket]
    where = root.bucket(bucket) / incident_id
    [decision] = json.loads((where / "decisions.json").read_text())
    assert decision["decision"] == ("requeue" if requeue else "resolved")
    doc = json.loads((where / "incident.json").read_text())
    status = (where / "status.txt").read_text().strip()
    assert doc["status"] == status == ("new" if requeue else "resolved")
    [(iid, resolved_at, guidance)] = escalation_rows(root)
    assert resolved_at == decision["at"] and guidance == "close the parenthesis"
    if requeue:
        assert ctx_of(root, incident_id).current_state == "S_INIT"
        assert sorted(p.name for p in root.runs_dir(incident_id).glob("run_result*.json")) == [
            "run_result.1.json"
        ]
