"""The claude tier with the MCP server (`[tiers.claude] mcp = true`): the `--mcp-config`
file that starts `incidents mcp` for the incident, and the flags added to claude's argv.

Claude Code's CLI: `--mcp-config <files...>` loads MCP servers from JSON files
(`{"mcpServers": {NAME: {"type": "stdio", "command", "args", "env"}}}`),
`--strict-mcp-config` uses only those (not the user's own servers), and
`--allowedTools mcp__incidents` lets print mode call every tool of the server named
`incidents` without a permission prompt. Both list options take several values, so they
are given as `--opt=value`: a single element that cannot swallow the next argument.
No `mcp` import here: this runs in the step service.
"""

from __future__ import annotations

import sys
from typing import Any

SERVER_NAME = "incidents"


def server_config(root: str, workdir: str, config: str | None) -> dict[str, Any]:
    """The `--mcp-config` document: `incidents mcp` (this interpreter's, as a module, so
    it is found inside the fixer's sandbox too) for this root, config and workdir."""
    args = ["-m", "incidents", "mcp", "--root", root, "--workdir", workdir]
    if config:
        args += ["--config", config]
    server = {"type": "stdio", "command": sys.executable, "args": args, "env": {}}
    return {"mcpServers": {SERVER_NAME: server}}


def with_mcp(argv: list[str], config_file: str) -> list[str]:
    """claude's argv with the MCP flags right after the program name."""
    flags = [
        f"--mcp-config={config_file}",
        "--strict-mcp-config",
        f"--allowedTools=mcp__{SERVER_NAME}",
    ]
    return [argv[0], *flags, *argv[1:]]
