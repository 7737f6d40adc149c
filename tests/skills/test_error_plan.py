"""The error-plan skill, played as written against a real root: a real ruff failure of a
small project is captured; the skill's commands run in order (bash, the installed
`incidents`), its plan document is the one the agent writes, and the machine then runs
the plan's verification command."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import Cli, use_config
from tests.skills.play import Player
from tests.skills.project import HANDOFF, capture_lint_failure


def plan_skill(p: Player, expect_id: str, *, new: bool) -> None:
    """Steps 1 to 6 of error-plan for the incident the skill finds (`expect_id`)."""
    mktemp, listing = p.play("Find the incident")
    assert mktemp.code == listing.code == 0, p.log
    p.assign("<WORK>", mktemp.out.strip())
    doc = listing.json()
    p.assign("<ROOT>", doc["root"])
    assert doc["paused"] is None
    mine = [i for i in doc["incidents"] if i["failure_class"] in ("code", "unknown")]
    if new:  # the first incident without a plan, else the one waiting for an agent
        p.assign("<ID>", mine[-1]["incident_id"])  # the oldest
    else:
        assert mine == []
        [nxt] = p.play("Or re-plan an incident waiting for an agent")
        assert nxt.code == 0, nxt.err
        p.assign("<ID>", nxt.json()["incident_id"])
    assert p.values["<ID>"] == expect_id

    status, explain, log_tail, context = p.play("Read the incident")
    assert status.code == explain.code == log_tail.code == context.code == 0, p.log
    assert status.json()["bucket"] == "inbox"
    assert "F821" in log_tail.out and "offset" in log_tail.out  # the real ruff output
    assert "LINT_FAILURE" in explain.out

    [current] = p.play("Read the current plan")
    if new:
        assert current.code == 1 and "has no plan yet" in current.err
    else:
        assert current.code == 0 and current.json()["source"] == "planner"

    steps = p.play("Write the plan")
    p.assign("<GENERATED_AT>", next(steps).out.strip())
    list(steps)
    Path(p.values["<WORK>"], "plan.json").write_text(p.document("Write the plan"))

    [supplied] = p.play("Supply it")
    assert supplied.code == 0, supplied.err
    assert f"plan written to error_plans/{expect_id}/plan.json" in supplied.out

    [shown] = p.play("Check what is in force")
    assert shown.code == 0 and "by error-plan" in shown.out
    assert "ruff check calc.py" in shown.out
    assert p.unplayed() <= (
        {p.key("Or re-plan an incident waiting for an agent")} if new else set()
    )


def test_error_plan_as_written_plans_a_new_incident_and_the_check_runs_it(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, HANDOFF)
    incident_id = capture_lint_failure(cli, tmp_path / "ws", "calc.py")
    time.sleep(1.1)  # created_at has seconds: a younger one, which the skill passes over
    younger = capture_lint_failure(cli, tmp_path / "ws", "report.py")
    plan_skill(Player("error-plan", tmp_path), incident_id, new=True)
    assert not root.plan_dir(younger).exists()

    plan = json.loads((root.plan_dir(incident_id) / "plan.json").read_text())
    assert plan["source"] == "error-plan" and plan["verification_commands"] == [
        "ruff check calc.py"
    ]
    assert (root.inbox / incident_id / "status.txt").read_text().strip() == "planned"
    r = cli("drive", incident_id)  # the machine keeps the skill's plan and runs its command
    assert "(AWAIT_HANDOFF)" in r.out, r.out + r.err
    assert json.loads((root.plan_dir(incident_id) / "plan.json").read_text()) == plan
    report = json.loads((root.runs_dir(incident_id) / "error_report_attempt_0.json").read_text())
    assert report["judged"]["commands"] == ["ruff check calc.py"]


def test_error_plan_as_written_replaces_the_plan_of_a_waiting_incident(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, HANDOFF)
    incident_id = capture_lint_failure(cli, tmp_path / "ws", "calc.py")
    assert "(AWAIT_HANDOFF)" in cli("drive", incident_id).out  # the planner's plan first
    plan_skill(Player("error-plan", tmp_path), incident_id, new=False)
    plan = json.loads((root.plan_dir(incident_id) / "plan.json").read_text())
    assert plan["source"] == "error-plan"
    assert "by error-plan" in (root.plan_dir(incident_id) / "plan.md").read_text()
