"""The error-exec-loop skill, played as written against a real root: two real ruff
failures wait for an agent; the loop fixes the first (resolved by the recheck), cannot fix
the second (escalated), then finds no work and stops. Its branches too: the pause, a
refused attempt, and a lost lease taken back as the skill says."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from incidents import handoff
from incidents.layout import Root
from tests.helpers import Cli, use_config
from tests.skills.play import Player
from tests.skills.project import FIXED, HANDOFF, capture_lint_failure

AGENT = "error-exec-loop"


@pytest.fixture
def two_waiting(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    use_config(tmp_path, monkeypatch, HANDOFF)
    ids = [capture_lint_failure(cli, tmp_path / "ws", name) for name in ("calc.py", "report.py")]
    for incident_id in ids:  # what a watcher does: up the ladder to the hand-off tier
        assert "(AWAIT_HANDOFF)" in cli("drive", incident_id).out
    return ids


def start(tmp_path: Path) -> Player:
    p = Player("error-exec-loop", tmp_path)
    [work] = p.play("Start (once per session)")
    p.assign("<WORK>", work.out.strip())
    return p


def take(p: Player) -> dict[str, Any] | None:
    """Steps 0 to 2: the pause, the next incident, the claim."""
    [status] = p.play("Check the pause")
    assert status.code == 0 and status.json()["paused"] is None
    p.assign("<ROOT>", status.json()["root"])
    [nxt] = p.play("Take the next incident")
    item: dict[str, Any] = nxt.json()
    if item["incident_id"] is None:
        return None
    p.assign("<ID>", str(item["incident_id"]))
    p.assign("<WORKDIR>", str(item["workdir"]))
    p.assign("<FILES>", " ".join(item["files"]))
    p.assign("<ITERATION>", str(item["attempt_iteration"]))
    date, claim = p.play("Claim it")
    p.assign("<STARTED_AT>", date.out.strip())
    assert claim.code == 0, claim.err
    assert claim.json()["lease_expires_at"]
    return item


def work(p: Player, fix: bool) -> None:
    """Steps 3 and 4: read the incident, fix (or fail to fix) the files, check them."""
    status, plan, log_tail = p.play("Read the incident")
    assert status.code == plan.code == log_tail.code == 0, p.log
    p.assign("<SIGNATURE>", status.json()["incident"]["error_signature"])
    assert "F821" in log_tail.out and "Fix the check findings" in plan.out
    if fix:  # the agent's edit: only the target file
        Path(p.values["<WORKDIR>"], p.values["<FILES>"]).write_text(FIXED)
    [check] = p.play("Fix the files, and check them yourself")
    assert check.code == (0 if fix else 1), check.out + check.err
    p.assign("<PASSED>", "true" if check.code == 0 else "false")
    p.assign("<NOTES>", "defined the name, dropped the import" if fix else "could not fix it")


def record(p: Player) -> Path:
    """Step 5's document, written where the skill says; returns it."""
    steps = p.play("Record your attempt")
    p.assign("<FINISHED_AT>", next(steps).out.strip())
    doc = Path(p.values["<WORK>"], "attempt.json")
    doc.write_text(p.document("Record your attempt"))
    [recorded] = steps
    assert recorded.code == 0, recorded.err
    assert recorded.out.startswith(f"recorded error_runs/{p.values['<ID>']}/attempt_01.json")
    return doc


def test_the_loop_as_written_resolves_what_it_fixed_escalates_what_it_could_not(
    root: Root, tmp_path: Path, two_waiting: list[str]
) -> None:
    p, outcomes = start(tmp_path), {}
    for _ in range(10):  # the skill's session budget
        item = take(p)
        if item is None:
            break  # no work: the loop stops
        incident_id = p.values["<ID>"]
        fix = incident_id == two_waiting[0]
        assert item["files"] == (["calc.py"] if fix else ["report.py"])
        work(p, fix)
        record(p)
        [submitted] = p.play("Hand it back")
        assert submitted.code == 0, submitted.err
        accepted = submitted.json()
        assert accepted["changed_files"] == (["calc.py"] if fix else [])
        assert accepted["violations"] == [] and AGENT in accepted["notes"]
        drive, status = p.play("Let the machine recheck, and read the outcome")
        assert drive.code == 0 and status.code == 0, drive.err + status.err
        outcomes[incident_id] = status.json()["bucket"]
    assert outcomes == {two_waiting[0]: "resolved", two_waiting[1]: "escalated"}
    assert p.unplayed() == set()

    fixed, failed = two_waiting
    result = json.loads((root.runs_dir(fixed) / "run_result.json").read_text())
    assert result["final_status"] == "resolved" and result["outcome"] == "fixed"
    attempt = json.loads((root.runs_dir(fixed) / "attempt_01.json").read_text())
    # the skill's record, with the machine's verdict on top
    assert attempt["notes"] == "defined the name, dropped the import"
    assert attempt["verified_by"] == "incidents" and attempt["result"] == "resolved"
    assert attempt["verification_passed"] is True and attempt["total_issues"] == 0
    assert (
        json.loads((root.runs_dir(failed) / "run_result.json").read_text())["final_status"]
        == "escalated"
    )
    failed_attempt = json.loads((root.runs_dir(failed) / "attempt_01.json").read_text())
    assert failed_attempt["verification_passed"] is False
    assert failed_attempt["verified_by"] == "incidents" and failed_attempt["notes"] == (
        "could not fix it"
    )
    assert (root.bucket("escalated") / failed / "metadata.json").is_file()


def test_the_loop_stops_when_the_system_is_paused(
    cli: Cli, tmp_path: Path, two_waiting: list[str]
) -> None:
    assert cli("pause", "--reason", "provider outage").code == 0
    p = start(tmp_path)
    [status] = p.play("Check the pause")
    assert status.code == 0 and status.json()["paused"]["reason"] == "provider outage"
    assert "`paused` is not `null`: **stop the loop.**" in p.section("Check the pause")


def test_a_refused_attempt_and_a_lost_lease_as_the_skill_says(
    root: Root, tmp_path: Path, two_waiting: list[str]
) -> None:
    p = start(tmp_path)
    assert take(p) is not None
    incident_id = p.values["<ID>"]
    work(p, fix=True)
    doc = record(p)
    # the same iteration again with other content: refused, and the skill names the message
    doc.write_text(doc.read_text().replace("defined the name", "another agent's"))
    _, refused = p.play("Record your attempt")
    assert refused.code == 2 and "already recorded" in refused.err
    assert "the next free iteration is 2" in refused.err
    assert "`already recorded ... the next free iteration is N`" in p.section("Record your attempt")

    # the lease runs out before the submit: lost, as step 6 describes
    lease_s = 0.5
    handoff.claim(root, incident_id, AGENT, lease_s)  # the same agent, a shorter lease
    time.sleep(lease_s + 0.3)
    [lost] = p.play("Hand it back")
    assert lost.code == 1 and "expired" in lost.err, lost.err
    assert "`expired`" in p.section("Hand it back")
    # the skill: step 1 offers it again, so claim it again (step 2) and hand it back
    [nxt] = p.play("Take the next incident")
    assert nxt.json()["incident_id"] == incident_id
    [_, claim] = p.play("Claim it")
    assert claim.code == 0, claim.err
    [submitted] = p.play("Hand it back")
    assert submitted.code == 0, submitted.err
    assert submitted.json()["changed_files"] == [p.values["<FILES>"]]  # edited before the loss
    drive, status = p.play("Let the machine recheck, and read the outcome")
    assert status.json()["bucket"] == "resolved", drive.out + drive.err
