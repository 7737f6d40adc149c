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


def document(endpoints: Sequence[Endpoint], version: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {"Error": ERROR}
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
    media = "text/event-stream" if e.path == "/api/events" else "application/json"
    op: dict[str, Any] = {
        "summary": e.summary,
        "operationId": e.handler.__name__,
        "responses": {"200": {"description": "OK", "content": {media: {"schema": {}}}}},
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
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
        }
        op["security"] = [{"bearer": []}]
    for code in e.errors:
        op["responses"][str(code)] = {
            "description": REASONS[code],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    return op
