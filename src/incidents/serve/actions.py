"""The API's actions: each one the service its CLI command calls, with the same request
model, in a worker thread; its answer is what the command prints with `--json`.

| endpoint | service | command |
|---|---|---|
| `POST /api/escalations/{id}/resolve` | `commands.handoff.decide` | `resolve-escalation` |
| `POST /api/incidents/{id}/archive` | `commands.archive.close_by_hand` | `archive` |
| `POST /api/pause` | `commands.admin.pause_root` | `pause` |
| `POST /api/resume` | `commands.admin.resume_root` | `resume` |

An escalation is named by its incident's id (an escalated incident has at most one open
escalation) or by the numeric `id` of its record in `GET /api/jobs/{run_id}/escalations`.

On a fleet's shared mirror, a resolve or archive of an incident another host holds is sent
to that host and applied on its next pass: 202 with `{"incident_id", "routed_to": HOST,
"decision"}` (what the command prints with `--json`).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from incidents.commands import admin, archive
from incidents.commands.handoff import decide
from incidents.commands.status import pause_json
from incidents.errors import NotFound, NotWaiting, UsageError
from incidents.layout import Root, validate_id
from incidents.mirror import feed
from incidents.models.requests import ArchiveRequest, PauseRequest, ResolveRequest, ResumeRequest
from incidents.redact import redact_json
from incidents.serve.guard import action_request


def _done(request: Request, doc: Any) -> JSONResponse:
    request.app.state.hub.nudge()  # its events are committed: stream them now
    routed = isinstance(doc, dict) and "routed_to" in doc  # accepted: applied over there
    return JSONResponse(redact_json(doc), status_code=202 if routed else 200)


async def _incident_of(request: Request, ref: str) -> str:
    if not (ref.isascii() and ref.isdigit()):  # "²" is a digit to isdigit, not to int
        return validate_id(ref)
    record = await request.app.state.reader.run(feed.escalation, int(ref))
    if record is None:
        raise NotFound(f"no escalation {ref} in the mirror")
    if record.resolved_at is not None:
        raise NotWaiting(
            f"escalation {ref} of incident {record.incident_id} was resolved at {record.resolved_at}"
        )
    return str(record.incident_id)


async def resolve(request: Request) -> JSONResponse:
    body = await action_request(request, request.app.state.tokens, ResolveRequest)
    if body.accept_fix and not body.by.strip():  # the server's user is not the person
        raise UsageError("by: an accepted fix names the person who accepts it")
    incident_id = await _incident_of(request, request.path_params["escalation_id"])
    root: Root = request.app.state.root
    return _done(request, await run_in_threadpool(decide, root, incident_id, body))


async def archive_incident(request: Request) -> JSONResponse:
    body = await action_request(request, request.app.state.tokens, ArchiveRequest)
    incident_id = validate_id(request.path_params["incident_id"])
    root: Root = request.app.state.root
    return _done(request, await run_in_threadpool(archive.close_by_hand, root, incident_id, body))


async def pause(request: Request) -> JSONResponse:
    body = await action_request(request, request.app.state.tokens, PauseRequest)
    root: Root = request.app.state.root
    await run_in_threadpool(admin.pause_root, root, body)
    return _done(request, {"paused": pause_json(root)})


async def resume(request: Request) -> JSONResponse:
    await action_request(request, request.app.state.tokens, ResumeRequest)
    root: Root = request.app.state.root
    info = await run_in_threadpool(admin.resume_root, root)
    was = None if info is None else {"reason": info.reason, "since": info.since_iso, "by": info.by}
    return _done(request, {"resumed": info is not None, "was": was})
