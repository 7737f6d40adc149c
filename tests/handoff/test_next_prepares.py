"""`incidents next` hands out work on a fresh root with no watcher running: it first does
what an incident owes before its hand-off (its plan, its baseline check), never runs a
fixer program, and says of the others why they do not wait and what goes on with them.
A plan's target paths become the incident's targets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import Cli, capture, ctx_of, use_config
from tests.stand_ins import stand_in

BROKEN = "def add(a, b):\n    return a + b + offset\n"  # F821: only a fixer mends it
RUFF = '[checks]\ntools = ["ruff", "pytest"]\n'
PRICING = "def total(prices, discount):\n    return sum(prices) * (1 + discount)\n"
# imported by name at run time: neither the output nor an import statement names the code
TEST = (
    "import importlib\n\ntotal = importlib.import_module('shop.pricing').total\n\n\n"
    "def test_discount():\n    assert total([10.0, 10.0], 0.25) == 15.0\n"
)


def shop(tmp_path: Path) -> Path:
    """A small project whose test fails on a bug in shop/pricing.py."""
    ws = tmp_path / "ws"
    (ws / "shop").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "shop" / "__init__.py").write_text("")
    (ws / "shop" / "pricing.py").write_text(PRICING)
    (ws / "tests" / "test_pricing.py").write_text(TEST)
    return ws


def capture_test_failure(cli: Cli, ws: Path) -> str:
    """The real pytest's failure, captured with its log and no target file."""
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=ws,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1 and "FAILED tests/test_pricing.py::test_discount" in p.stdout
    log = ws.parent / "pytest.log"
    log.write_text(p.stdout)
    extra = ("--log-file", str(log), "--failure-class", "code", "--error-code", "TEST_FAILURE")
    return capture(cli, *extra, step="unit_tests", message="pytest failed", ws=ws)


def plan_naming(incident_id: str, *paths: str) -> dict[str, Any]:
    return {
        "incident_id": incident_id,
        "generated_at": "2026-11-29T06:00:00Z",
        "source": "test",
        "summary": "total adds the discount",
        "verification_commands": [],
        "root_cause_hypotheses": [{"id": "H1", "confidence": "high", "reason": "its sign"}],
        "actions": [
            {
                "id": "A1",
                "title": "subtract it",
                "priority": "P0",
                "risk": "low",
                "target_paths": list(paths),
                "verification": [],
            }
        ],
        "done_criteria": ["the test passes"],
    }


def test_next_prepares_a_new_incident_without_a_watcher(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, RUFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, "--failure-class", "code", ws=ws, target="calc.py", content=BROKEN)
    item = cli("next", "--json").json()  # nobody drove it: next plans and checks it first
    assert item["incident_id"] == incident_id and item["files"] == ["calc.py"]
    assert Path(item["last_report"]).name == "error_report_attempt_0.json"
    assert (root.plan_dir(incident_id) / "plan.json").is_file()


def test_a_plans_target_paths_become_the_incidents_targets(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, RUFF)
    ws = shop(tmp_path)
    incident_id = capture_test_failure(cli, ws)
    # nothing to fix named yet: next says to plan it, and does not escalate it
    r = cli("next", "--json")
    assert r.json()["incident_id"] is None, r.out
    [other] = r.json()["not_waiting"]
    assert other["incident_id"] == incident_id and "plan it first" in other["why"]
    assert (root.inbox / incident_id).is_dir()

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_naming(incident_id, "shop/pricing.py", "README.txt")))
    assert cli("plan", incident_id, "--from", str(plan)).code == 0
    item = cli("next", "--json").json()
    assert item["incident_id"] == incident_id, item
    assert item["files"] == ["shop/pricing.py"]  # a Python target; a text file is no check's
    assert ctx_of(root, incident_id).python_files == ["shop/pricing.py"]
    # the agent's fix in the plan's target resolves it
    assert cli("claim", incident_id, "--agent", "t").code == 0
    (ws / "shop" / "pricing.py").write_text(PRICING.replace("1 + discount", "1 - discount"))
    assert cli("submit", incident_id, "--agent", "t").code == 0
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("resolved") / incident_id).is_dir()
    assert ctx_of(root, incident_id).outcome == "fixed"


def test_next_never_runs_a_fixer_program(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    """An installed fixer is the watcher's (or drive's) to run: next says so."""
    ran = tmp_path / "aider-ran"
    stand_in(bin_dir, "aider", f"pathlib.Path({str(ran)!r}).write_text('ran')")
    use_config(tmp_path, monkeypatch, RUFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, "--failure-class", "code", ws=ws, target="calc.py", content=BROKEN)
    doc = cli("next", "--json").json()
    assert doc["incident_id"] is None and not ran.exists()
    [other] = doc["not_waiting"]
    assert f"runs the aider fixer: `incidents drive {incident_id}`" in other["why"]
    assert ctx_of(root, incident_id).current_state == "S0_BASELINE_CHECK"  # checked, no more
