"""JSON Schemas (Draft 2020-12) generated from the pydantic models.

`schemas/*.schema.json` in the repository are this module's output; a test fails when
they differ (`incidents schemas --write` regenerates them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from incidents import models

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS: dict[str, type[BaseModel]] = {
    "incident": models.Incident,
    "context": models.CaptureContext,
    "decision": models.HumanDecision,
    "audit_entry": models.AuditEntry,
    "plan": models.Plan,
    "attempt": models.Attempt,
    "run_result": models.RunResult,
    "error_report": models.ErrorReport,
    "ai_attempt": models.AIAttempt,
    "quarantine_metadata": models.QuarantineMetadata,
    "pipeline_context": models.ErrorPipelineContext,
    # the bodies of the HTTP API's actions (`incidents serve`), the CLI's arguments too
    "resolve_request": models.ResolveRequest,
    "archive_request": models.ArchiveRequest,
    "pause_request": models.PauseRequest,
    "resume_request": models.ResumeRequest,
}


def generate(name: str) -> dict[str, Any]:
    schema = SCHEMAS[name].model_json_schema(mode="validation")
    return {"$schema": DIALECT, "$id": f"incidents:{name}", **schema}


def render(name: str) -> str:
    return json.dumps(generate(name), indent=2, sort_keys=True) + "\n"


def default_dir() -> Path:
    """`schemas/` of the source checkout."""
    return Path(__file__).resolve().parents[2] / "schemas"


def write_all(directory: Path) -> list[Path]:
    from incidents.fsutil import atomic_write_text

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = directory / f"{name}.schema.json"
        atomic_write_text(path, render(name))
        written.append(path)
    return written


def stale(directory: Path) -> list[str]:
    """Names whose file is missing or differs from what the models generate."""
    out = []
    for name in SCHEMAS:
        path = directory / f"{name}.schema.json"
        if not path.is_file() or path.read_text(encoding="utf-8") != render(name):
            out.append(name)
    return out


def validator(name: str, directory: Path | None = None) -> Any:
    """A jsonschema validator for the committed schema file."""
    import jsonschema

    path = (directory or default_dir()) / f"{name}.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)
