"""The claude tier with `[tiers.claude] mcp = true`: the machine runs claude with a
`--mcp-config` file that starts `incidents mcp` for the incident, and a prompt telling it
to check its work with those tools. The stand-in `claude` does what Claude Code does with
that file: starts the server it names (with the `mcp` package's client) and calls the
tools, inside the same containment as any fixer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents.layout import Root
from incidents.mcp_server.claude import FIXER_TOOLS
from tests.helpers import BROKEN, FIXED, Cli, capture, use_config
from tests.stand_ins import on_path, stand_in

CONFIG = (
    '[checks]\ntools = ["ruff"]\n[tiers.aider]\nmode = "off"\n[tiers.codex]\nmode = "off"\n'
    '[tiers.claude]\nmode = "on"\nmcp = {mcp}\n'
)

# Claude Code's part, played for real: read the flags and the config, start the server it
# names, lint, fix, run the incident's check, report what the tools said on stdout.
CLAUDE = r"""
import anyio, json, re
from mcp import Client, StdioServerParameters
args = sys.argv[1:]
prompt = sys.stdin.read()
[config] = [a.split("=", 1)[1] for a in args if a.startswith("--mcp-config=")]
server = json.loads(pathlib.Path(config).read_text())["mcpServers"]["incidents"]
incident_id = re.search(r'run_checks\(incident_id="([^"]+)"\)', prompt).group(1)
said = {"flags": [a.split("=")[0] for a in args if a.startswith("--")]}
[allowed] = [a.split("=", 1)[1] for a in args if a.startswith("--allowedTools=")]
said["allowed"] = allowed.split(",")

async def main():
    params = StdioServerParameters(command=server["command"], args=server["args"],
                                   env=server["env"])
    async with Client(params) as client:
        said["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        got = await client.call_tool("get_incident", {"incident_id": incident_id})
        said["get"] = got.content[0].text if got.is_error else got.structured_content["incident"]["incident_id"]
        taken = await client.call_tool("claim", {"incident_id": incident_id, "agent": "me"})
        said["claim"] = taken.content[0].text
        before = await client.call_tool("lint_python_files", {"paths": ["f.py"]})
        said["before"] = before.structured_content["exit_code"]
        pathlib.Path("f.py").write_text(FIXED)
        after = await client.call_tool("run_checks", {"incident_id": incident_id})
        said["after"] = after.structured_content["summary"]["total_issues"]
        outside = await client.call_tool("lint_python_files", {"paths": ["../secret.py"]})
        said["outside"] = outside.is_error

anyio.run(main)
print("claude:", json.dumps(said, sort_keys=True))
"""


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in(on_path(tmp_path, monkeypatch), "claude", f"FIXED = {FIXED!r}\n{CLAUDE}")


def test_claude_runs_with_the_mcp_server_and_uses_its_tools(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, claude: None
) -> None:
    use_config(tmp_path, monkeypatch, CONFIG.format(mcp="true"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.py").write_text("TOKEN = 1\n")
    incident_id = capture(cli, message="f.py broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "S3_CLAUDE_FIX" in r.out and "-> S_SUCCESS" in r.out, r.out + r.err
    [attempt] = _attempts(root, incident_id)
    said = json.loads(attempt["notes"].split("claude:", 1)[1].strip().splitlines()[0])
    assert said == {
        "flags": ["--mcp-config", "--strict-mcp-config", "--allowedTools",
                  "--permission-mode", "--output-format"],
        "before": 1,  # the syntax error, found by the MCP lint tool
        "after": 0,  # the incident's own check, clean after the fix
        "outside": True,  # the server reads nothing outside the incident's workdir
        # a fixer's server: its incident's read-only checks, and exactly those allowed
        "allowed": [f"mcp__incidents__{t}" for t in FIXER_TOOLS],
        "tools": sorted(FIXER_TOOLS),
        "get": incident_id,
        "claim": "Unknown tool: claim",  # no hand-off over the root for a fixer
    }  # fmt: skip
    runs = root.runs_dir(incident_id)
    config = json.loads((runs / "mcp_config_attempt_1.json").read_text())
    args = config["mcpServers"]["incidents"]["args"]
    assert args[:3] == ["-m", "incidents", "mcp"] and str(ws) in args
    assert args[args.index("--fixer") + 1] == incident_id
    prompt = (runs / "prompt_attempt_1.md").read_text()
    assert f'run_checks(incident_id="{incident_id}")' in prompt
    assert f'get_incident(incident_id="{incident_id}")' in prompt
    section = prompt.split("## Check your work", 1)[1].split("\n## ", 1)[0]
    assert "for this incident only" in section
    assert not any(t in section for t in ("claim(", "submit", "next_incident"))


def test_without_mcp_claude_gets_neither_the_flags_nor_the_tools_in_its_prompt(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    use_config(tmp_path, monkeypatch, CONFIG.format(mcp="false"))
    stand_in(bin_dir, "claude", "sys.stdin.read(); print('claude:', ' '.join(sys.argv[1:]))")
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, message="f.py broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "S3_CLAUDE_FIX" in r.out, r.out + r.err
    [attempt] = _attempts(root, incident_id)
    assert "--mcp-config" not in attempt["notes"] and "-p" in attempt["notes"]
    assert not list(root.path.rglob("mcp_config_attempt_*.json"))
    prompt = (root.runs_dir(incident_id) / "prompt_attempt_1.md").read_text()
    assert "lint_python_files" not in prompt and "claude -p" in prompt


def _attempts(root: Root, incident_id: str) -> list[dict[str, str]]:
    return list(json.loads((root.runs_dir(incident_id) / "ai_attempts.json").read_text()))
