"""Both skills as a user gets them, on a fresh root with no AI fixer installed and no
watcher: installed with `incidents skills install`, then read from the installed
SKILL.md files and played literally (tests/skills/play.py: each section's sh blocks run
in order by bash, the placeholders the skill defines filled from the outputs it names).
A test failure captured by `incidents run` goes from capture to error_archive/resolved/
with a scripted agent making the real fix; a transient and a missing-credential incident
are the ones the skills say to leave alone, and nothing hands them out.

The convention the skills keep (so a change that breaks their flow fails here): every
command an agent runs is a line of a ```sh block under a `##`/`###` heading; values an
agent carries between commands are `<PLACEHOLDERS>` defined in the skill's table; the
document an agent writes is the section's ```json block; the classes to leave alone are
the backticked names leading the bullets of the `## Leave these alone` section."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import Cli, use_config
from tests.skills.play import BIN, Player, sections

CONFIG = '[checks]\ntools = ["ruff", "pytest"]\n'  # the tiers as they come: none installed
PRICING = (
    "def total(prices: list[float], discount: float) -> float:\n"
    "    return sum(prices) * (1 + discount)\n"
)
TEST = (
    "from shop.pricing import total\n\n\n"
    "def test_discount() -> None:\n    assert total([10.0, 10.0], 0.25) == 15.0\n"
)
# the scripted agent: reads the target it is given and makes the real fix there
AGENT = """import pathlib, sys
target = pathlib.Path(sys.argv[1], sys.argv[2])
target.write_text(target.read_text().replace("(1 + discount)", "(1 - discount)"))
"""
SYNC = "import os\n\ntoken = os.environ['WAREHOUSE_API_TOKEN']\nprint('synced with', token)\n"


@pytest.fixture
def installed(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_config(tmp_path, monkeypatch, CONFIG)
    dest = tmp_path / "agent" / "skills"
    r = cli("skills", "install", str(dest))
    assert r.code == 0, r.err
    assert {p.parent.name for p in dest.glob("*/SKILL.md")} == {"error-plan", "error-exec-loop"}
    return dest


def run_step(ws: Path, step: str, *command: str) -> None:
    """The pipeline's step, wrapped as the README's quick start says: `incidents run`."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    p = subprocess.run(
        [str(BIN / "incidents"), "run", "--step", step, "--", *command],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 1, p.stdout + p.stderr  # the step's own exit code


def shop(tmp_path: Path) -> Path:
    ws = tmp_path / "shop_project"
    (ws / "shop").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "shop" / "__init__.py").write_text("")
    (ws / "shop" / "pricing.py").write_text(PRICING)
    (ws / "tests" / "test_pricing.py").write_text(TEST)
    return ws


def error_plan(skills: Path, tmp_path: Path) -> str:
    """The error-plan skill, played as written; the agent's plan names the code under test."""
    p = Player("error-plan", tmp_path, skills)
    mktemp, listing = p.play("Find the incident")
    p.assign("<WORK>", mktemp.out.strip())
    p.assign("<ROOT>", listing.json()["root"])
    allowed = plannable(p.text)
    [mine] = [i for i in listing.json()["incidents"] if i["failure_class"] in allowed]
    p.assign("<ID>", mine["incident_id"])
    status, explain, log_tail, _context = p.play("Read the incident")
    assert status.code == explain.code == log_tail.code == 0, p.log
    assert "FAILED tests/test_pricing.py::test_discount" in log_tail.out
    [current] = p.play("Read the current plan")
    assert current.code == 1 and "has no plan yet" in current.err
    steps = p.play("Write the plan")
    p.assign("<GENERATED_AT>", next(steps).out.strip())
    list(steps)
    doc = json.loads(p.document("Write the plan"))
    doc.update(  # the agent's own reading of the failure, in the skill's shape
        summary="total() adds the discount instead of subtracting it",
        root_cause_hypotheses=[{"id": "H1", "confidence": "high", "reason": "a sign error"}],
        actions=[
            {
                "id": "A1",
                "title": "subtract the discount",
                "priority": "P0",
                "risk": "low",
                "target_paths": ["shop/pricing.py"],
                "verification": [],
            }
        ],
        verification_commands=[],
        done_criteria=["tests/test_pricing.py passes"],
    )
    Path(p.values["<WORK>"], "plan.json").write_text(json.dumps(doc))
    [supplied] = p.play("Supply it")
    assert supplied.code == 0, supplied.err
    [shown] = p.play("Check what is in force")
    assert "shop/pricing.py" in shown.out
    assert p.unplayed() == {p.key("Or re-plan an incident waiting for an agent")}
    return p.values["<ID>"]


def exec_loop(skills: Path, tmp_path: Path) -> dict[str, str]:
    """The error-exec-loop skill, played as written, until it finds no work."""
    (tmp_path / "agent.py").write_text(AGENT)
    p = Player("error-exec-loop", tmp_path, skills)
    [work] = p.play("Start (once per session)")
    p.assign("<WORK>", work.out.strip())
    outcomes: dict[str, str] = {}
    for _ in range(10):  # the skill's session budget
        [status] = p.play("Check the pause")
        assert status.json()["paused"] is None
        p.assign("<ROOT>", status.json()["root"])
        [nxt] = p.play("Take the next incident")
        item: dict[str, Any] = nxt.json()
        if item["incident_id"] is None:
            break
        for name, key in (
            ("<ID>", "incident_id"),
            ("<WORKDIR>", "workdir"),
            ("<ITERATION>", "attempt_iteration"),
        ):
            p.assign(name, str(item[key]))
        p.assign("<FILES>", " ".join(item["files"]))
        date, claim = p.play("Claim it")
        assert claim.code == 0, claim.err
        p.assign("<STARTED_AT>", date.out.strip())
        status, _plan, _log = p.play("Read the incident")
        p.assign("<SIGNATURE>", status.json()["incident"]["error_signature"])
        for target in item["files"]:  # the scripted agent's edit
            agent = [sys.executable, str(tmp_path / "agent.py"), item["workdir"], target]
            subprocess.run(agent, check=True, timeout=60)
        [check] = p.play("Fix the files, and check them yourself")
        p.assign("<PASSED>", "true" if check.code == 0 else "false")
        p.assign("<NOTES>", "total() subtracts the discount")
        steps = p.play("Record your attempt")
        p.assign("<FINISHED_AT>", next(steps).out.strip())
        Path(p.values["<WORK>"], "attempt.json").write_text(p.document("Record your attempt"))
        [recorded] = steps
        assert recorded.code == 0, recorded.err
        [submitted] = p.play("Hand it back")
        assert submitted.code == 0, submitted.err
        _drive, status = p.play("Let the machine recheck, and read the outcome")
        outcomes[p.values["<ID>"]] = status.json()["bucket"]
    assert p.unplayed() == set()
    return outcomes


def plannable(text: str) -> set[str]:
    """The classes error-plan says it plans."""
    [line] = re.findall(r"^Plan only incidents whose `failure_class` is (.*?)\.", text, re.M)
    return set(re.findall(r"`(\w+)`", line))


def left_alone(text: str) -> set[str]:
    """The classes the skill's `Leave these alone` section tells an agent to leave."""
    section = sections(text)["Leave these alone"]
    return set(re.findall(r"^- `(\w+)`", section, re.M)) | set(
        re.findall(r"^ *and `(\w+)` \(", section, re.M)
    )


def test_the_installed_skills_take_a_test_failure_from_capture_to_resolved(
    root: Root, tmp_path: Path, installed: Path
) -> None:
    ws = shop(tmp_path)
    run_step(ws, "unit_tests", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    incident_id = error_plan(installed, tmp_path)
    assert exec_loop(installed, tmp_path) == {incident_id: "resolved"}
    assert (root.bucket("resolved") / incident_id / "incident.json").is_file()
    result = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    assert result["final_status"] == "resolved" and result["outcome"] == "fixed"
    assert "(1 - discount)" in (ws / "shop" / "pricing.py").read_text()


def test_the_installed_skills_leave_a_blip_and_a_missing_credential_alone(
    cli: Cli, root: Root, tmp_path: Path, installed: Path
) -> None:
    ws = tmp_path / "warehouse"
    ws.mkdir()
    (ws / "sync.py").write_text(SYNC)
    run_step(ws, "warehouse_sync", sys.executable, "sync.py")  # KeyError: the token is unset
    blip = cli(
        "capture",
        "--step",
        "amazon_download",
        "--message",
        "Network timeout during receipt download",
    )
    assert blip.code == 0, blip.err
    listed = cli("status", "--json").json()["incidents"]
    classes = {i["step"]: i["failure_class"] for i in listed}
    assert classes == {"warehouse_sync": "env", "amazon_download": "transient"}
    for name in ("error-plan", "error-exec-loop"):
        text = (installed / name / "SKILL.md").read_text()
        assert set(classes.values()) <= left_alone(text), name
        assert "missing credential" in sections(text)["Leave these alone"]
    assert not set(classes.values()) & plannable(
        (installed / "error-plan" / "SKILL.md").read_text()
    )
    # the exec loop's step 1, as written: neither is handed to the agent
    p = Player("error-exec-loop", tmp_path, installed)
    [nxt] = p.play("Take the next incident")
    doc = nxt.json()
    assert doc["incident_id"] is None
    assert {w["why"].endswith("leave it alone") for w in doc["not_waiting"]} == {True}
    assert len(doc["not_waiting"]) == 2
    assert "`leave it alone`" in p.section("Take the next incident")


def test_a_skill_whose_flow_breaks_fails_the_play(tmp_path: Path, installed: Path) -> None:
    """The control: the player reads the installed text, so a skill that loses a step or
    a placeholder (an edit that breaks its flow) cannot be played."""
    text = (installed / "error-exec-loop" / "SKILL.md").read_text()
    broken = installed / "broken"
    (broken / "error-exec-loop").mkdir(parents=True)
    (broken / "error-exec-loop" / "SKILL.md").write_text(
        text.replace("incidents claim <ID>", "incidents claim <CLAIM_ID>")
    )
    p = Player("error-exec-loop", tmp_path, broken)
    p.assign("<ID>", "incident_x")
    with pytest.raises(AssertionError, match="undefined"):
        list(p.play("Claim it"))
