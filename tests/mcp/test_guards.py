"""What the MCP server refuses, through the `mcp` package's own client against a real
`incidents mcp`: a fixer's server (`--fixer ID`) offers only its incident's read-only
checks; a folder's link that leads outside is skipped, not fatal; only a claim's holder
records an attempt, with the incident's signature; an agent's name is one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from incidents.layout import Root
from incidents.mcp_server.claude import FIXER_TOOLS
from tests.helpers import BROKEN, MESSY, Cli, capture, tree
from tests.mcp.test_server import TOOLS, doc, error, serve


def test_a_fixers_server_offers_only_its_incidents_read_only_checks(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    ws = tmp_path / "ws"
    other = capture(cli, message="g.py broken", ws=ws, target="g.py", content=BROKEN)
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        seen["tools"] = {t.name for t in (await client.list_tools()).tools}
        seen["lint"] = doc(await client.call_tool("lint_python_files", {"paths": ["f.py"]}))
        seen["check"] = doc(await client.call_tool("run_checks", {"incident_id": waiting}))
        seen["get"] = doc(await client.call_tool("get_incident", {"incident_id": waiting}))
        seen["check_other"] = error(await client.call_tool("run_checks", {"incident_id": other}))
        seen["get_other"] = error(await client.call_tool("get_incident", {"incident_id": other}))
        for name in ("claim", "submit", "submit_attempt", "next_incident", "list_incidents"):
            seen[name] = error(
                await client.call_tool(name, {"incident_id": waiting, "agent": "x"}), ours=False
            )

    before = tree(root.inbox / waiting)
    serve(tmp_path, ws, session, "--fixer", waiting)
    assert seen["tools"] == set(FIXER_TOOLS) < TOOLS
    assert seen["lint"]["exit_code"] == 1
    assert seen["check"]["summary"]["has_hard_fail"] is True
    assert seen["get"]["incident"]["incident_id"] == waiting
    assert f"this server is for incident {waiting} only" in seen["check_other"]
    assert f"this server is for incident {waiting} only" in seen["get_other"]
    for name in ("claim", "submit", "submit_attempt", "next_incident", "list_incidents"):
        assert f"Unknown tool: {name}" in seen[name]
    assert tree(root.inbox / waiting) == before  # nothing claimed, nothing written
    assert cli("next", "--json").json()["incident_id"] == waiting


def test_mcp_fixer_refuses_an_invalid_incident_id(cli: Cli, tmp_path: Path) -> None:
    r = cli("mcp", "--workdir", str(tmp_path), "--fixer", "../../etc")
    assert r.code == 2 and "invalid incident id" in r.err and len(r.err.splitlines()) == 1


def test_a_link_out_of_a_folder_is_skipped_and_reported(tmp_path: Path, waiting: str) -> None:
    ws = tmp_path / "ws"
    (ws / "leak.py").symlink_to("/etc/passwd")
    (ws / "sub").mkdir()
    (ws / "sub" / "messy.py").write_text(MESSY)
    (ws / "sub" / "out.py").symlink_to(tmp_path / "nowhere.py")  # dangling, leads out
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        seen["dir"] = doc(await client.call_tool("lint_python_files", {"paths": ["."]}))
        seen["sub"] = doc(await client.call_tool("lint_python_files", {"paths": ["sub"]}))
        seen["named"] = error(await client.call_tool("lint_python_files", {"paths": ["leak.py"]}))

    serve(tmp_path, ws, session)
    assert {i["path"] for i in seen["dir"]["issues"]} == {"f.py", "sub/messy.py"}
    assert {s["path"] for s in seen["dir"]["skipped"]} == {"leak.py", "sub/out.py"}
    assert all("outside the workdir" in s["reason"] for s in seen["dir"]["skipped"])
    assert [s["path"] for s in seen["sub"]["skipped"]] == ["sub/out.py"]
    assert "leak.py: outside the workdir" in seen["named"]  # named outright: refused
    assert "root:" not in str(seen)  # /etc/passwd was not read


def test_only_the_holder_records_an_attempt_with_the_incidents_signature(
    cli: Cli, root: Root, tmp_path: Path, waiting: str
) -> None:
    signature = cli("status", waiting, "--json").json()["incident"]["error_signature"]
    attempt = {
        "incident_id": waiting, "iteration": 1,
        "started_at": "2026-11-25T10:00:00+00:00", "finished_at": "2026-11-25T10:01:00+00:00",
        "actions_applied": ["x"], "verification_commands": [], "verification_passed": False,
        "result": "continue",
    }  # fmt: skip
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        async def call(name: str, args: dict[str, Any]) -> Any:
            return await client.call_tool(name, {"incident_id": waiting, **args})

        seen["bad_name"] = error(await call("claim", {"agent": "a\nb"}))
        doc(await call("claim", {"agent": "holder", "lease": "10m"}))
        seen["intruder"] = error(await call("submit_attempt", {"attempt": attempt, "agent": "x"}))
        seen["nameless"] = error(await call("submit_attempt", {"attempt": attempt}))
        seen["newline"] = error(
            await call("submit_attempt", {"attempt": attempt, "agent": "holder\n"})
        )
        wrong = {**attempt, "error_signature": "not it"}
        seen["wrong_sig"] = error(
            await call("submit_attempt", {"attempt": wrong, "agent": "holder"})
        )
        seen["submit_name"] = error(await call("submit", {"agent": "holder\x1b[2J"}))
        seen["before"] = tree(root.runs_dir(waiting))
        seen["ok"] = doc(await call("submit_attempt", {"attempt": attempt, "agent": "holder"}))

    serve(tmp_path, tmp_path / "ws", session)
    assert "one line of printable characters" in seen["bad_name"]
    assert "claimed by holder, not x" in seen["intruder"]
    assert "claimed by holder" in seen["nameless"] and "--agent" in seen["nameless"]
    assert "one line of printable characters" in seen["newline"]
    assert "is not the incident's signature" in seen["wrong_sig"]
    assert "one line of printable characters" in seen["submit_name"]
    assert not any(name.startswith("attempt_") for name in seen["before"])
    assert seen["ok"] == {"recorded": f"error_runs/{waiting}/attempt_01.json"}
    stored = (root.runs_dir(waiting) / "attempt_01.json").read_text()
    assert signature in stored  # filled in
