"""`incidents mcp`: the Model Context Protocol server (seed 001 §3.9's tools for Claude).

`tools`: what each tool does, over the commands' own functions (no `mcp` import);
`server`: the tools on the official SDK's `MCPServer`, over stdio;
`claude`: the `--mcp-config` file and flags the claude tier is run with when its
`mcp = true` (the server started for the incident's workdir).

The `mcp` package is imported only here, by `incidents mcp`: never on capture's path.
"""
