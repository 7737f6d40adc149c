"""A plan is held to capture's rules, through both doors (`plan --from` and the MCP
server's `supply_plan`): a verification command the allowlist refuses, a shell pipe, a
target path outside the workdir are refused with exit 2, naming the field and the rule,
and the plan in force stays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from incidents.layout import Root
from tests.helpers import Cli, capture
from tests.mcp.test_server import doc, error, serve

BROKEN = "import os\n"  # F401


@pytest.fixture
def planned(cli: Cli, root: Root, tmp_path: Path) -> str:
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, ws=ws, target="gen.py", content=BROKEN)
    assert cli("plan", incident_id, "--from", str(write(tmp_path, plan_doc(incident_id)))).code == 0
    return incident_id


def plan_doc(incident_id: str, **action: Any) -> dict[str, Any]:
    act = {
        "id": "A1",
        "title": "drop the import",
        "priority": "P0",
        "risk": "low",
        "target_paths": ["gen.py"],
        "verification": ["ruff check gen.py"],
    }
    act.update(action)
    return {
        "incident_id": incident_id,
        "generated_at": "2026-11-29T06:00:00Z",
        "source": "test",
        "summary": "an unused import",
        "actions": [act],
        "root_cause_hypotheses": [{"id": "H1", "confidence": "high", "reason": "left over"}],
        "verification_commands": act["verification"],
        "done_criteria": ["ruff is clean"],
    }


def write(tmp_path: Path, doc_: dict[str, Any], name: str = "plan.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc_))
    return path


def in_force(root: Root, incident_id: str) -> bytes:
    return (root.plan_dir(incident_id) / "plan.json").read_bytes()


@pytest.mark.parametrize(
    ("action", "field", "rule"),
    [
        (
            {"verification": ["ruff check --fix gen.py"]},
            "verification_commands.0",
            "option --fix of ruff changes files",
        ),
        (
            {"verification": ["ruff check gen.py | tee out.txt"]},
            "verification_commands.0",
            "a shell operator '|'",
        ),
        (
            {"verification": ["ruff check gen.py", "rm -rf gen.py"]},
            "verification_commands.1",
            "program 'rm' is not on the allowlist",
        ),
        ({"target_paths": ["../../etc/passwd"]}, "actions.0.target_paths.0", "a '..' component"),
        ({"target_paths": ["/etc/passwd"]}, "actions.0.target_paths.0", "an absolute path"),
    ],
)
def test_plan_from_refuses_what_capture_refuses_and_keeps_the_old_plan(
    cli: Cli,
    root: Root,
    tmp_path: Path,
    planned: str,
    action: dict[str, Any],
    field: str,
    rule: str,
) -> None:
    before = in_force(root, planned)
    bad = write(tmp_path, plan_doc(planned, **action), "bad.json")
    r = cli("plan", planned, "--from", str(bad))
    assert r.code == 2, r.out
    assert f"{bad}: {field}: " in r.err and rule in r.err, r.err
    assert in_force(root, planned) == before


def test_capture_refuses_the_same_commands(cli: Cli, tmp_path: Path) -> None:
    """The other door of the one rule: capture's own `--verify`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for command in ("ruff check gen.py | tee out.txt", "ruff check --fix gen.py"):
        r = cli(
            "capture", "--step", "lint", "--message", "m", "--workdir", str(ws), "--verify", command
        )
        assert r.code == 2 and "--verify" in r.err, r.err


def test_a_plan_within_the_rules_is_installed(
    cli: Cli, root: Root, tmp_path: Path, planned: str
) -> None:
    """The control: the same door takes a plan that keeps to the rules."""
    (tmp_path / "ws" / "other.py").write_text("x = 1\n")
    good = plan_doc(
        planned, target_paths=["gen.py", "other.py"], verification=["ruff check gen.py other.py"]
    )
    r = cli("plan", planned, "--from", str(write(tmp_path, good, "good.json")))
    assert r.code == 0, r.err
    assert json.loads(in_force(root, planned))["actions"][0]["target_paths"] == [
        "gen.py",
        "other.py",
    ]


def test_the_mcp_plan_input_holds_the_same_rules(
    cli: Cli, root: Root, tmp_path: Path, planned: str
) -> None:
    before = in_force(root, planned)
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        bad = plan_doc(planned, target_paths=["../../etc/passwd"])
        seen["target"] = error(
            await client.call_tool("supply_plan", {"incident_id": planned, "plan": bad})
        )
        seen["pipe"] = error(
            await client.call_tool(
                "supply_plan",
                {
                    "incident_id": planned,
                    "plan": plan_doc(planned, verification=["ruff check gen.py | tee y"]),
                },
            )
        )
        seen["kept"] = in_force(root, planned)
        good = plan_doc(planned, title="the same, again")
        seen["good"] = doc(
            await client.call_tool("supply_plan", {"incident_id": planned, "plan": good})
        )

    serve(tmp_path, tmp_path / "ws", session)
    assert "plan: actions.0.target_paths.0: '../../etc/passwd': a '..' component" in seen["target"]
    assert "verification_commands.0" in seen["pipe"] and "a shell operator '|'" in seen["pipe"]
    assert seen["kept"] == before
    assert seen["good"]["plan"] == f"error_plans/{planned}/plan.json"
