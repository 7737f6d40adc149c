"""The claude tier with the MCP server (`[tiers.claude] mcp = true`): the `--mcp-config`
file that starts `incidents mcp` for the incident, and the flags added to claude's argv.

Claude Code's CLI: `--mcp-config <files...>` loads MCP servers from JSON files
(`{"mcpServers": {NAME: {"type": "stdio", "command", "args", "env"}}}`),
`--strict-mcp-config` uses only those (not the user's own servers), and
`--allowedTools mcp__incidents__TOOL,...` lets print mode call those tools without a
permission prompt. The server is started as a fixer's (`incidents mcp --fixer ID`): it
offers only `FIXER_TOOLS`, the read-only checks of this one incident, never the
hand-off (`claim`, `submit`, ...) over the whole root, and only those are allowed. Both list options take several values, so they
are given as `--opt=value`: a single element that cannot swallow the next argument.
No `mcp` import here: this runs in the step service.
"""

from __future__ import annotations

import sys
from typing import Any

SERVER_NAME = "incidents"
# what a fixer's server offers: checks that read, for its own incident only
FIXER_TOOLS = ("lint_python_files", "lint_ps_scripts", "run_checks", "get_incident")


def server_config(root: str, workdir: str, config: str | None, incident_id: str) -> dict[str, Any]:
    """The `--mcp-config` document: `incidents mcp --fixer ID` (this interpreter's, as a
    module, so it is found inside the fixer's sandbox too) for this root, config, workdir
    and incident."""
    args = ["-m", "incidents", "mcp", "--root", root, "--workdir", workdir]
    args += ["--fixer", incident_id]
    if config:
        args += ["--config", config]
    server = {"type": "stdio", "command": sys.executable, "args": args, "env": {}}
    return {"mcpServers": {SERVER_NAME: server}}


def with_mcp(argv: list[str], config_file: str) -> list[str]:
    """claude's argv with the MCP flags right after the program name."""
    flags = [
        f"--mcp-config={config_file}",
        "--strict-mcp-config",
        "--allowedTools=" + ",".join(f"mcp__{SERVER_NAME}__{t}" for t in FIXER_TOOLS),
    ]
    return [argv[0], *flags, *argv[1:]]
