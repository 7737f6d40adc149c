"""Every endpoint in one table: the application is built from it (`app`), and so is the
OpenAPI document (`openapi`), so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from incidents.models.base import Document
from incidents.models.requests import ArchiveRequest, PauseRequest, ResolveRequest, ResumeRequest
from incidents.serve import actions, api, stream

Handler = Callable[[Any], Awaitable[Any]]


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    handler: Handler
    summary: str
    returns: str = ""  # the answer's schema (openapi.answers)
    body: type[Document] | None = None  # an action's request model (the CLI's)
    errors: tuple[int, ...] = ()
    query: tuple[tuple[str, str, str], ...] = ()  # (name, JSON type, description)
    accepted: str = ""  # the schema of a 202: a decision sent to the fleet host holding it
    slashed: tuple[str, ...] = ()  # path parameters that may hold a slash (sent as %2F)

    @property
    def route(self) -> str:
        """The path as Starlette matches it: `{name:path}` for a parameter with slashes."""
        path = self.path
        for name in self.slashed:
            path = path.replace(f"{{{name}}}", f"{{{name}:path}}")
        return path


ACTION_ERRORS = (400, 401, 403, 413, 415)
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/api/health", api.health, "The server, the mirror's catch-up, counts, the pause.",
             "Health"),
    Endpoint(
        "GET", "/api/incidents", api.list_incidents,
        "Incident rows as `status --json` gives them, newest first, a page at a time.",
        "IncidentList", errors=(400,),
        query=(
            ("status", "string", "new, planned, running, resolved or escalated"),
            ("step", "string", "only this step"),
            ("since", "string", "created since: 2h, 3d or an ISO time"),
            ("all", "boolean", "include archived incidents"),
            ("host", "string", "only the incidents this fleet host holds"),
            ("all_hosts", "boolean", "every fleet host's (default true); false: this host's"),
            ("limit", "integer", "rows per page (1-500, default 50)"),
            ("offset", "integer", "rows to skip"),
        ),
    ),
    Endpoint(
        "GET", "/api/incidents/{incident_id}", api.get_incident,
        "One incident in full: the bundle, plan, runs, verdict, review card and events "
        "(another fleet host's: its mirror row).",
        "IncidentDetail", errors=(400, 404),
    ),
    Endpoint(
        "GET", "/api/jobs/{run_id}/escalations", api.run_escalations,
        "The escalations of a run's incidents (seed 003), open or resolved.", "Escalations",
        errors=(404,), slashed=("run_id",),  # free text: `capture --run-id ci/build/42`
    ),
    Endpoint(
        "POST", "/api/escalations/{escalation_id}/resolve", actions.resolve,
        "A person's decision on an escalation (by incident id or record id): requeue or resolve.",
        "Decision", body=ResolveRequest, errors=(*ACTION_ERRORS, 404, 409), accepted="Routed",
    ),
    Endpoint(
        "POST", "/api/incidents/{incident_id}/archive", actions.archive_incident,
        "Close an open incident by hand (`incidents archive`).", "Archived",
        body=ArchiveRequest, errors=(*ACTION_ERRORS, 404, 409), accepted="Routed",
    ),
    Endpoint("POST", "/api/pause", actions.pause, "Pause everything (`incidents pause`).",
             "Paused", body=PauseRequest, errors=ACTION_ERRORS),
    Endpoint("POST", "/api/resume", actions.resume, "Clear the pause (`incidents resume`).",
             "Resumed", body=ResumeRequest, errors=ACTION_ERRORS),
    Endpoint(
        "GET", "/api/events", stream.stream,
        "Server-Sent Events: every mirror event as it is committed; resumes after Last-Event-ID.",
        "Event", errors=(400,),
        query=(("last_event_id", "string", "resume after this id (the Last-Event-ID header wins)"),),
    ),
)  # fmt: skip
