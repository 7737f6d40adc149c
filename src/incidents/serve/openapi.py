"""The OpenAPI 3.1 document served at `/api/openapi.json`, built from the endpoint table
and the request models (the CLI's own, whose JSON Schemas are also in `schemas/`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from incidents.serve.routes import Endpoint

REASONS = {
    400: "bad input (the CLI exits 2)",
    401: "no bearer token, or a wrong one",
    403: "a foreign Origin or Host",
    404: "unknown id (the CLI exits 1)",
    409: "already archived, not escalated, claimed, locked or paused (the CLI exits 1)",
    413: "the request body is over the cap",
    415: "the request body is not application/json",
}
ERROR = {
    "type": "object",
    "required": ["error", "kind", "exit_code"],
    "properties": {
        "error": {"type": "string", "description": "the message the CLI prints"},
        "kind": {"type": "string", "description": "the error's class"},
        "exit_code": {"type": "integer", "description": "the CLI's exit code for it"},
    },
}


def _obj(required: Sequence[str] = (), **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": list(required), "properties": props}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


STR, INT, BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
NULLABLE_STR = {"type": ["string", "null"]}


def answers() -> dict[str, Any]:
    """The answers' schemas: rows and records from the mirror's own types."""
    from pydantic import TypeAdapter

    from incidents.handoff.human import Decision
    from incidents.mirror.feed import EscalationRecord
    from incidents.mirror.queries import IncidentRow

    row = TypeAdapter(IncidentRow).json_schema()
    row["properties"]["group_decisions"] = {"type": "array", "items": {"type": "object"}}
    row["properties"]["age"] = STR
    row["properties"]["outcome"] = NULLABLE_STR
    # every time is ISO 8601 (the mirror keeps `not_before` as epoch seconds)
    row["properties"]["not_before"] = NULLABLE_STR
    row["properties"]["lease_expires_at"] = NULLABLE_STR
    row["properties"]["why"] = {
        **NULLABLE_STR,
        "description": "what an open incident waits on (status's WHY column), or null",
    }
    row["properties"]["host"] = {"type": "string", "description": "the fleet host holding it"}
    row["required"] = [*row.get("required", []), "host"]
    escalation = TypeAdapter(EscalationRecord).json_schema()
    escalation["properties"]["open"] = BOOL
    pause = {
        "oneOf": [{"type": "null"}, _obj(["reason", "since", "by"], reason=STR, since=STR, by=STR)]
    }
    event = _obj(
        ["id", "event", "type", "ts", "incident_id", "payload"], id=STR, event=STR, type=STR,
        ts=NULLABLE_STR, incident_id=NULLABLE_STR, payload={"type": "object"},
    )  # fmt: skip
    return {
        "IncidentRow": row,
        "Pause": pause,
        "IncidentList": _obj(
            ["root", "host", "paused", "total", "limit", "offset", "last_event_id", "incidents"],
            root=STR, host=STR, paused=_ref("Pause"), total=INT, limit=INT, offset=INT,
            last_event_id=STR,
            incidents={"type": "array", "items": _ref("IncidentRow")},
        ),
        "Incident": _obj(
            ["incident", "bucket", "location", "state", "files", "plan", "runs", "outcome"],
            incident={"type": "object", "description": "incident.json (schemas/incident.schema.json)"},
            bucket=STR, location=STR, state=NULLABLE_STR, files={"type": "array"},
            plan=NULLABLE_STR, runs={"type": "array"}, outcome=NULLABLE_STR,
            plan_doc={"description": "plan.json, or null"},
            verdict={"description": "run_result.json (the verdict), or null"},
            review={"type": "object", "description": "the review page's card"},
            evidence={
                "type": "object",
                "description": "the headline (the failure itself), failing tests, findings, "
                "log tail, occurrences, recurrences and the suggested decision with its command",
            },
            events={"type": "array", "items": _ref("Event")}, host=STR,
        ),
        "IncidentElsewhere": _obj(
            ["incident_id", "host", "elsewhere", "bucket", "state", "row"],
            incident_id=STR, host=STR, elsewhere=STR, bucket=STR, state=NULLABLE_STR,
            row=_ref("IncidentRow"), events={"type": "array", "items": _ref("Event")},
        ),
        "IncidentDetail": {"oneOf": [_ref("Incident"), _ref("IncidentElsewhere")]},
        "Routed": _obj(["incident_id", "routed_to", "decision"], incident_id=STR,
                       routed_to={"type": "string", "description": "the fleet host holding it"},
                       decision={"enum": ["resolve-escalation", "archive"]}),
        "Escalation": escalation,
        "Escalations": _obj(["run_id", "escalations"], run_id=STR,
                            escalations={"type": "array", "items": _ref("Escalation")}),
        "Decision": TypeAdapter(Decision).json_schema(),
        "Archived": _obj(["incident_id", "status", "archived_to"], incident_id=STR, status=STR,
                         archived_to=STR),
        "Paused": _obj(["paused"], paused=_ref("Pause")),
        "Resumed": _obj(["resumed", "was"], resumed=BOOL, was=_ref("Pause")),
        "Health": _obj(
            ["ok", "root", "paused", "counts", "last_event_id", "stream_clients", "mirror"],
            ok=BOOL, root=STR, paused=_ref("Pause"),
            counts={"type": "object", "additionalProperties": INT}, last_event_id=STR,
            stream_clients=INT, mirror={"type": "object"},
        ),
        "Event": event,
    }  # fmt: skip


def document(endpoints: Sequence[Endpoint], version: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {"Error": ERROR, **answers()}
    for e in endpoints:
        paths.setdefault(e.path, {})[e.method.lower()] = _operation(e, schemas)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "incidents serve",
            "version": version,
            "description": "The incidents API: reads from the mirror, actions through the "
            "CLI's services. Actions need `Authorization: Bearer TOKEN`.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _operation(e: Endpoint, schemas: dict[str, Any]) -> dict[str, Any]:
    if e.path == "/api/events":
        ok = {"text/event-stream": {"schema": {"type": "string", "description": "frames of "
              "`id: GEN-N`, `event: NAME`, `data: ` an Event as JSON"}}}  # fmt: skip
    else:
        ok = {"application/json": {"schema": _ref(e.returns)}}
    op: dict[str, Any] = {
        "summary": e.summary,
        "operationId": e.handler.__name__,
        "responses": {"200": {"description": "OK", "content": ok}},
    }
    if e.accepted:
        op["responses"]["202"] = {
            "description": "another fleet host holds it: sent there, applied on its next pass",
            "content": {"application/json": {"schema": _ref(e.accepted)}},
        }
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)}", e.path)
    ]
    params += [
        {"name": n, "in": "query", "required": False, "schema": {"type": t}, "description": d}
        for n, t, d in e.query
    ]
    if params:
        op["parameters"] = params
    if e.body is not None:
        name = e.body.__name__
        schema = e.body.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
        op["requestBody"] = {
            "required": name != "ResumeRequest",
            "content": {"application/json": {"schema": _ref(name)}},
        }
        op["security"] = [{"bearer": []}]
    for code in e.errors:
        op["responses"][str(code)] = {
            "description": REASONS[code],
            "content": {"application/json": {"schema": _ref("Error")}},
        }
    return op
