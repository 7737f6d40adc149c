"""The README's MCP section stays true: its client example runs against a real server,
its config file starts the server, and its table of tier templates is the one in code."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from incidents.fixers.prompt import TEMPLATES
from tests.helpers import MESSY, REPO

README = (REPO / "README.md").read_text()
MCP = README.split("### mcp — the Model Context Protocol server", 1)[1].split("\n### ", 1)[0]


def test_the_readme_client_example_runs(tmp_path: Path) -> None:
    [example] = re.findall(r"```python\n(.*?)```", MCP, re.S)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "messy.py").write_text(MESSY)
    (tmp_path / "example.py").write_text(example)
    bin_dir = Path(sys.executable).parent  # `incidents` is installed beside the interpreter
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    p = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "'total_issues': " in p.stdout and "'total_issues': 0" not in p.stdout, p.stdout


def test_the_readme_config_file_names_the_server_command() -> None:
    [block] = re.findall(r"```json\n(.*?)```", MCP, re.S)
    server = json.loads(block)["mcpServers"]["incidents"]
    assert server["command"] == "incidents" and server["args"][0] == "mcp"
    assert {"--root", "--workdir"} <= set(server["args"])


def test_the_readme_table_of_tier_templates_is_the_one_in_code() -> None:
    section = README.split("#### Prompt templates, one per tier", 1)[1].split("\n#### ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ")]
    shown = {tier.strip(): reads.strip() for tier, reads in rows[1:]}  # after the header
    plain = {name: reads.replace("`", "") for name, reads in shown.items()}
    assert plain == {name: t.reads.replace("`", "") for name, t in TEMPLATES.items()}


def test_the_readme_tables_the_servers_tools_and_names_the_fixers() -> None:
    from incidents.mcp_server.claude import FIXER_TOOLS
    from tests.mcp.test_server import TOOLS

    tabled = re.findall(r"^\| `(\w+)\(", MCP, re.M)
    assert set(tabled) == TOOLS and len(tabled) == len(TOOLS)
    [fixer] = [p for p in MCP.split("\n\n") if "incidents mcp --fixer ID" in p]
    assert set(re.findall(r"`(\w+)`", fixer)) & TOOLS == set(FIXER_TOOLS)
    allowed = ",".join(f"mcp__incidents__{t}" for t in FIXER_TOOLS)
    assert f"--allowedTools={allowed}" in README
