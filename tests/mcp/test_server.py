"""`incidents mcp` driven by the official `mcp` package's own client over stdio: a real
`python -m incidents mcp` subprocess, every tool called, answers compared with the
commands' own JSON, and the errors a model can cause."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from incidents.layout import Root
from tests.helpers import FIXED, MESSY, Cli, tree, use_config

CONFIG = (
    '[checks]\ntools = ["ruff", "ruff-format", "psscriptanalyzer"]\n[tiers.aider]\nmode = "handoff"\n'
    '[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
TOOLS = {
    "lint_python_files", "lint_ps_scripts", "run_checks", "list_incidents", "get_incident",
    "next_incident", "claim", "submit_attempt", "submit", "supply_plan",
}  # fmt: skip
VOLATILE = {"generated_at", "tool_runs"}  # times and durations: everything else must agree

Session = Callable[[Client], Awaitable[None]]


def serve(tmp_path: Path, workdir: Path, session: Session, *extra: str) -> None:
    """Start `python -m incidents mcp --workdir WORKDIR [EXTRA...]` and run `session`
    against it."""
    env = {
        "INCIDENTS_ROOT": os.environ["INCIDENTS_ROOT"],
        "PATH": os.environ["PATH"],
        **({"INCIDENTS_CONFIG": c} if (c := os.environ.get("INCIDENTS_CONFIG")) else {}),
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "incidents", "mcp", "--workdir", str(workdir), *extra],
        env=env,
        cwd=str(tmp_path),
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await session(client)

    anyio.run(main)


def doc(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    [text] = result.content
    assert isinstance(text, TextContent)
    assert json.loads(text.text) == result.structured_content  # the same, as text too
    return dict(result.structured_content)


def error(result: CallToolResult, *, ours: bool = True) -> str:
    """The error's text; `ours`: the project's one-line message (not the SDK's argument
    validation, which pydantic words on several lines)."""
    assert result.is_error, result.structured_content
    [text] = result.content
    assert isinstance(text, TextContent)
    if ours:
        assert "\n" not in text.text
    return text.text


def stable(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in VOLATILE}


def test_every_tool_through_a_real_client(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    ws = tmp_path / "ws"
    (ws / "messy.py").write_text(MESSY)
    (ws / "deploy.ps1").write_text("Write-Host 'hi'\n")
    monkey_cwd = os.getcwd()
    os.chdir(ws)
    try:
        checked = cli("check", "--json", "messy.py", "f.py")
    finally:
        os.chdir(monkey_cwd)
    expected = json.loads(checked.out)
    listed = cli("status", "--json").json()
    shown = cli("status", waiting, "--json").json()
    item = cli("next", "--json").json()
    runs_before = tree(root.runs_dir(waiting))
    folder_before = tree(root.inbox / waiting)
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        tools = await client.list_tools()
        seen["tools"] = {t.name for t in tools.tools}
        seen["lint"] = doc(
            await client.call_tool("lint_python_files", {"paths": ["messy.py", "f.py"]})
        )
        seen["lint_dir"] = doc(await client.call_tool("lint_python_files", {"paths": ["."]}))
        seen["ps"] = doc(await client.call_tool("lint_ps_scripts", {"paths": ["deploy.ps1"]}))
        seen["check"] = doc(await client.call_tool("run_checks", {"incident_id": waiting}))
        seen["after_check"] = (tree(root.runs_dir(waiting)), tree(root.inbox / waiting))
        seen["list"] = doc(await client.call_tool("list_incidents", {}))
        seen["list_new"] = doc(await client.call_tool("list_incidents", {"status": "new"}))
        seen["get"] = doc(await client.call_tool("get_incident", {"incident_id": waiting}))
        seen["next"] = doc(await client.call_tool("next_incident", {}))
        seen["claim"] = doc(
            await client.call_tool(
                "claim", {"incident_id": waiting, "agent": "claude-mcp", "lease": "10m"}
            )
        )
        seen["next_after"] = doc(await client.call_tool("next_incident", {}))
        (ws / "f.py").write_text(FIXED)  # the agent's work
        attempt = {
            "incident_id": waiting, "iteration": item["attempt_iteration"],
            "started_at": "2026-11-25T10:00:00+00:00", "finished_at": "2026-11-25T10:01:00+00:00",
            "actions_applied": ["closed the parenthesis"], "verification_commands": [],
            "verification_passed": True, "result": "continue",
            "error_signature": shown["incident"]["error_signature"],
        }  # fmt: skip
        seen["attempt"] = doc(
            await client.call_tool(
                "submit_attempt",
                {"incident_id": waiting, "attempt": attempt, "agent": "claude-mcp"},
            )
        )
        seen["submit"] = doc(
            await client.call_tool(
                "submit", {"incident_id": waiting, "notes": "fixed", "agent": "claude-mcp"}
            )
        )

    serve(tmp_path, ws, session)
    assert seen["tools"] == TOOLS
    # the lint tools answer with `incidents check --json`'s report, and its exit code
    assert stable(seen["lint"]) == {**stable(expected), "exit_code": checked.code, "skipped": []}
    assert {i["path"] for i in seen["lint"]["issues"]} == {"messy.py", "f.py"}
    assert {i["path"] for i in seen["lint_dir"]["issues"]} == {"messy.py", "f.py"}
    assert seen["lint"]["skipped"] == [] and seen["lint_dir"]["skipped"] == []
    if shutil.which("pwsh") is None:  # said as `incidents check` says it: not "clean"
        assert seen["ps"]["exit_code"] == 2 and seen["ps"]["issues"] == []
        assert "pwsh is not on PATH" in seen["ps"]["infra_failures"][0]["reason"]
    # run_checks: the incident's own check, nothing written, nothing moved
    assert seen["check"]["summary"]["has_hard_fail"] is True
    assert {i["path"] for i in seen["check"]["issues"]} == {"f.py"}  # its target only
    assert seen["check"]["label"] == "mcp"
    assert seen["after_check"] == (runs_before, folder_before)
    # the mirror and the hand-off answer as the commands do
    row = next(r for r in seen["list"]["incidents"] if r["incident_id"] == waiting)
    expected_row = next(r for r in listed["incidents"] if r["incident_id"] == waiting)
    assert {k: v for k, v in row.items() if k != "age"} == {
        k: v for k, v in expected_row.items() if k != "age"
    }
    assert seen["list_new"]["incidents"] == []  # waiting for an agent: not `new` any more
    assert seen["get"] == shown
    assert seen["next"] == item
    assert seen["claim"]["incident_id"] == waiting and seen["claim"]["lease_expires_at"]
    assert seen["next_after"] == {"incident_id": None}  # claimed: not offered again
    assert seen["attempt"] == {"recorded": f"error_runs/{waiting}/attempt_01.json"}
    stored = json.loads((root.runs_dir(waiting) / "attempt_01.json").read_text())
    assert stored["actions_applied"] == ["closed the parenthesis"]
    assert seen["submit"]["changed_files"] == ["f.py"] and seen["submit"]["handoff"]
    r = cli("drive", waiting)  # the machine's recheck decides, as after `incidents submit`
    assert "-> S_SUCCESS" in r.out, r.out + r.err


def test_mistakes_are_tool_errors_with_the_projects_one_line_message(
    cli: Cli, tmp_path: Path, waiting: str
) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "secret.py"
    outside.write_text("API_KEY = 'x'\n")
    (ws / "link.py").symlink_to(outside)
    (ws / "deploy.ps1").write_text("Write-Host 'hi'\n")
    (ws / "notes.txt").write_text("hello\n")
    errors: dict[str, str] = {}

    async def session(client: Client) -> None:
        async def call(key: str, name: str, args: dict[str, Any]) -> None:
            errors[key] = error(await client.call_tool(name, args))

        await call("dotdot", "lint_python_files", {"paths": ["../secret.py"]})
        await call("absolute", "lint_python_files", {"paths": [str(outside)]})
        await call("symlink", "lint_python_files", {"paths": ["link.py"]})
        await call("missing", "lint_python_files", {"paths": ["nope.py"]})
        await call("none", "lint_python_files", {"paths": []})
        await call("wrong_kind", "lint_python_files", {"paths": ["deploy.ps1"]})
        await call("wrong_kind_ps", "lint_ps_scripts", {"paths": ["f.py"]})
        await call("not_code", "lint_ps_scripts", {"paths": ["notes.txt"]})
        await call(
            "check_unknown",
            "run_checks",
            {"incident_id": "incident_20260101_000000_x_0123456789ab"},
        )
        await call("get_bad_id", "get_incident", {"incident_id": "../../etc"})
        await call("list_bad_status", "list_incidents", {"status": "done"})
        await call("list_bad_since", "list_incidents", {"since": "yesterday"})
        await call(
            "claim_bad_lease", "claim", {"incident_id": waiting, "agent": "a", "lease": "soon"}
        )
        await call("submit_unclaimed", "submit", {"incident_id": waiting, "notes": "x"})
        await call(
            "attempt_invalid", "submit_attempt",
            {"incident_id": waiting, "attempt": {"incident_id": waiting, "iteration": 0}},
        )  # fmt: skip
        await call("args_missing", "claim", {"incident_id": waiting})  # the SDK's check
        await call("args_type", "lint_python_files", {"paths": "f.py"})

    serve(tmp_path, ws, session)
    assert "outside the workdir" in errors["dotdot"]
    assert "outside the workdir" in errors["absolute"]
    assert "outside the workdir" in errors["symlink"]  # symlinks followed
    assert "nope.py: no such file or folder" in errors["missing"]
    assert "give at least one file or folder" in errors["none"]
    assert "deploy.ps1: not a Python file (use lint_ps_scripts)" in errors["wrong_kind"]
    assert "f.py: not a PowerShell file (use lint_python_files)" in errors["wrong_kind_ps"]
    assert "notes.txt: not a Python or PowerShell file" in errors["not_code"]
    assert "no incident" in errors["check_unknown"]
    assert "invalid incident id" in errors["get_bad_id"]
    assert "--status 'done'" in errors["list_bad_status"]
    assert "--since 'yesterday'" in errors["list_bad_since"]
    assert "--lease 'soon'" in errors["claim_bad_lease"]
    assert "is not claimed" in errors["submit_unclaimed"]
    assert "attempt: iteration" in errors["attempt_invalid"]
    assert errors["args_missing"] == (
        "Error executing tool claim: agent: missing (a required argument)"
    )
    assert errors["args_type"].startswith("Error executing tool lint_python_files: paths: ")
    assert "API_KEY" not in json.dumps(errors)  # nothing outside the workdir was read


def test_run_checks_refuses_a_closed_incident(cli: Cli, tmp_path: Path, waiting: str) -> None:
    assert cli("archive", waiting, "--resolved", "--reason", "fixed by hand").code == 0
    errors: list[str] = []

    async def session(client: Client) -> None:
        errors.append(error(await client.call_tool("run_checks", {"incident_id": waiting})))

    serve(tmp_path, tmp_path / "ws", session)
    assert f"incident {waiting} is closed (resolved)" in errors[0]


def test_a_lint_tool_with_no_check_of_its_language_enabled_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, '[checks]\ntools = ["ruff"]\n')
    (tmp_path / "deploy.ps1").write_text("Write-Host 'hi'\n")
    errors: list[str] = []

    async def session(client: Client) -> None:
        errors.append(error(await client.call_tool("lint_ps_scripts", {"paths": ["deploy.ps1"]})))

    serve(tmp_path, tmp_path, session)
    assert "no PowerShell check is enabled ([checks] tools: ruff)" in errors[0]


def test_mcp_refuses_a_workdir_that_is_not_a_folder(cli: Cli, tmp_path: Path) -> None:
    r = cli("mcp", "--workdir", str(tmp_path / "nowhere"))
    assert r.code == 2 and "not a folder" in r.err
