"""The MCP server: the tools of `incidents.mcp_server.tools` registered on the official
SDK's `MCPServer`, served over stdio.

A tool's answer is its JSON document (structured content, and the same as text); a
user mistake is a tool error (`is_error`) whose text is the project's one-line message,
the line `incidents ...` prints after `incidents: `. Arguments that do not fit a tool's
schema (one missing, of the wrong type) are told on one line too, naming the argument,
instead of pydantic's several lines.

A fixer's server (`Service.fixer` set, `incidents mcp --fixer ID`) registers only
`claude.FIXER_TOOLS`: the read-only checks, for that incident.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import Field, ValidationError

from incidents import __version__
from incidents.errors import IncidentsError, explain_validation
from incidents.mcp_server.claude import FIXER_TOOLS
from incidents.mcp_server.tools import Service

NAME = "incidents"
INSTRUCTIONS = (
    "Incidents: failures of automation steps, driven up an escalation ladder. "
    "lint_python_files / lint_ps_scripts run the canonical checks on files of the workdir "
    "(the same report as `incidents check --json`); run_checks(incident_id) runs an "
    "incident's own check as its recheck will. list_incidents, get_incident and "
    "next_incident read the queue; claim, submit_attempt and submit hand work back."
)
FIXER_INSTRUCTIONS = (
    "Incidents, for one incident's fixer: lint_python_files / lint_ps_scripts run the "
    "canonical checks on files of the workdir; run_checks(incident_id) runs this "
    "incident's own check as its recheck will; get_incident(incident_id) shows it."
)
Doc = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Doc])

Paths = Annotated[
    list[str],
    Field(
        description="Files or folders, relative to the server's workdir (or absolute inside it)."
    ),
]
IncidentId = Annotated[str, Field(description="The incident's id (incident_YYYYMMDD_...).")]


def _one_line_errors(fn: F) -> F:
    """The project's expected failures become tool errors with their one-line message."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Doc:
        try:
            return fn(*args, **kwargs)
        except IncidentsError as exc:
            raise ToolError(str(exc)) from exc

    return wrapper  # type: ignore[return-value]  # same signature, by functools.wraps


def argument_error(name: str, exc: ValidationError) -> str:
    """One line for arguments that do not fit tool `name`'s schema, naming the first."""
    field, reason = explain_validation(exc, unknown="not an argument of this tool", others=2)
    if exc.errors()[0]["type"] == "missing":
        reason = "missing (a required argument)"
    return f"Error executing tool {name}: {field or 'arguments'}: {reason}"


class _Server(MCPServer[Any]):
    """`MCPServer` whose argument errors are one line (`argument_error`)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(argument_error(name, cause)) from cause
            raise


def build_server(service: Service) -> MCPServer[Any]:
    fixer = service.fixer is not None
    server = _Server(
        NAME,
        instructions=FIXER_INSTRUCTIONS if fixer else INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )

    def tool(fn: F) -> F:
        if not fixer or fn.__name__ in FIXER_TOOLS:
            server.add_tool(_one_line_errors(fn), name=fn.__name__, structured_output=True)
        return fn

    @tool
    def lint_python_files(paths: Paths) -> Doc:
        """Run the canonical Python checks (ruff, ruff format, mypy, pytest as configured) on
        these files or folders. Returns the normalized error report of `incidents check
        --json` plus `exit_code` (0 clean, 1 blocking findings, 2 a tool could not run) and
        `skipped`: files found in a folder that lead outside the workdir, not checked."""
        return service.lint(paths, "python")

    @tool
    def lint_ps_scripts(paths: Paths) -> Doc:
        """Run the canonical PowerShell checks (PSScriptAnalyzer, Pester through pwsh) on
        these .ps1/.psm1/.psd1 files or folders. Same report as lint_python_files; without
        pwsh installed the report says so as an infrastructure failure (exit_code 2)."""
        return service.lint(paths, "powershell")

    @tool
    def run_checks(incident_id: IncidentId) -> Doc:
        """Run an open incident's canonical check now, exactly as its next recheck will
        (its target files, the tests its failure names, its verification commands), on the
        files as they are. Nothing is recorded: the machine's recheck still decides."""
        return service.run_checks(incident_id)

    @tool
    def list_incidents(
        status: Annotated[
            str | None, Field(description="new, planned, running, resolved or escalated")
        ] = None,
        step: Annotated[str | None, Field(description="only incidents of this step")] = None,
        since: Annotated[str | None, Field(description="created since: 2h, 3d or ISO")] = None,
        include_closed: Annotated[bool, Field(description="archived ones too")] = False,
    ) -> Doc:
        """The incidents, newest first, as `incidents status --json` lists them."""
        return service.list_incidents(status, step, since, include_closed)

    @tool
    def get_incident(incident_id: IncidentId) -> Doc:
        """One incident in full, as `incidents status ID --json` shows it."""
        return service.get_incident(incident_id)

    @tool
    def next_incident() -> Doc:
        """The next incident waiting for an agent (`incidents next --json`): its prompt,
        files, workdir, last report and attempt_iteration; {"incident_id": null} if none."""
        return service.next_incident()

    @tool
    def claim(
        incident_id: IncidentId,
        agent: Annotated[str, Field(description="who works on it (a skill's name)")],
        lease: Annotated[str, Field(description="for how long: 30m, 2h, 90s")] = "30m",
    ) -> Doc:
        """Take a waiting incident until the lease expires (`incidents claim`)."""
        return service.claim(incident_id, agent, lease)

    @tool
    def supply_plan(
        incident_id: IncidentId,
        plan: Annotated[
            dict[str, Any], Field(description="the plan document (schemas/plan.schema.json)")
        ],
    ) -> Doc:
        """Validate a plan and install it as the incident's plan, as `incidents plan ID
        --from FILE` does: its verification commands and target paths are held to
        capture's rules (the allowlist, paths inside the workdir); a refusal names the
        field and the rule, and the old plan stays."""
        return service.supply_plan(incident_id, plan)

    @tool
    def submit_attempt(
        incident_id: IncidentId,
        attempt: Annotated[
            dict[str, Any],
            Field(description="the attempt document (schemas/attempt.schema.json)"),
        ],
        agent: Annotated[
            str | None, Field(description="who records it: the agent holding the claim")
        ] = None,
    ) -> Doc:
        """Validate an attempt document and record it as attempt_XX.json, as `incidents
        attempt ID --file --agent AGENT` does; use the attempt_iteration next_incident
        gave. While the incident is claimed only its holder (`agent`) records one; the
        document's error_signature is the incident's (filled in when omitted)."""
        return service.submit_attempt(incident_id, attempt, agent)

    @tool
    def submit(
        incident_id: IncidentId,
        notes: Annotated[str, Field(description="what the agent did")] = "",
        agent: Annotated[
            str | None, Field(description="check that this agent holds the claim")
        ] = None,
    ) -> Doc:
        """Hand a claimed incident back (`incidents submit`); its recheck runs next."""
        return service.submit(incident_id, notes, agent)

    return server


def serve(service: Service) -> None:
    """Serve the tools over stdio until the client closes the connection."""
    build_server(service).run("stdio")
