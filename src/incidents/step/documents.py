"""The step service's documents: reading a bundle for a tick, and the two files only the
step service writes, `state.json` (the machine's context) and `ai_attempts.json`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from incidents import artifacts, fsutil, store
from incidents import policy as policy_mod
from incidents.config import Config
from incidents.errors import IncidentsError, InvalidDocument, explain_validation
from incidents.fsm import TIERS
from incidents.layout import Root
from incidents.models import AIAttempt, ErrorPipelineContext, Incident
from incidents.vocab import ErrorCode


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        field, reason = explain_validation(exc)
        return f"{field}: {reason}"
    return str(exc)


def load_incident(root: Root, folder: Path) -> dict[str, Any]:
    """incident.json, validated; a bundle that does not validate goes to error_rejected/."""
    path = folder / artifacts.INCIDENT
    try:
        doc = fsutil.read_json_object(path)
        Incident.model_validate(doc)
        if doc["incident_id"] != folder.name:
            raise InvalidDocument(str(path), "differs from its folder name")
    except (InvalidDocument, ValidationError, OSError) as exc:
        reason = _reason(exc)
        target = store.reject(root, folder, f"{artifacts.INCIDENT}: {reason}")
        raise InvalidDocument(str(path), f"{reason} (moved to {target})") from exc
    return doc


def load_context(folder: Path) -> ErrorPipelineContext | None:
    """The committed context, or None before the first commit."""
    path = folder / artifacts.STATE
    try:
        return ErrorPipelineContext.model_validate(fsutil.read_json_object(path))
    except FileNotFoundError:
        return None
    except ValidationError as exc:
        raise InvalidDocument(str(path), _reason(exc)) from exc


def new_context(incident: dict[str, Any], cfg: Config, budget_used: int) -> ErrorPipelineContext:
    """The context of an incident's first tick, from its bundle and the configuration."""
    from incidents.fixers.settings import resolve_enabled

    modes = resolve_enabled(cfg.tiers)
    policy = cfg.policy
    code = incident.get("error_code")
    return ErrorPipelineContext(
        run_id=incident["run_id"],
        workstream_id=incident["incident_id"],
        python_files=list(incident.get("python_files") or []),
        powershell_files=list(incident.get("powershell_files") or []),
        verification_commands=list(incident.get("verify") or []),
        enable_mechanical_autofix=policy.enable_mechanical_autofix,
        enable_aider=modes["aider"] in ("on", "handoff"),
        enable_codex=modes["codex"] in ("on", "handoff"),
        enable_claude=modes["claude"] in ("on", "handoff"),
        strict_mode=policy.strict_mode,
        agent_max_attempts={t.agent: cfg.tiers.tier(t.agent).max_attempts for t in TIERS},
        tier_modes={a: "handoff" for a, m in modes.items() if m == "handoff"},
        failure_class=policy_mod.effective_failure_class(code, incident["failure_class"]),
        error_code=ErrorCode(code) if code else None,
        error_signature=incident["error_signature"],
        max_transient_retries=policy.max_transient_retries,
        retry_base_s=policy.retry_base_s,
        retry_max_s=policy.retry_max_s,
        signature_attempts_used=budget_used,
        signature_attempt_limit=policy.signature_budget,
    )


def write_state(
    folder: Path, ctx: ErrorPipelineContext, *, durable: bool = True, sync_dir: bool = True
) -> None:
    """`state.json`, old-or-new. The caller holds what makes the write its own to make
    (the incident's lock, and the lease that fences it)."""
    fsutil.atomic_write_bytes(
        folder / artifacts.STATE, fsutil.dump_model(ctx), durable=durable, sync_dir=sync_dir
    )


def write_ai_attempts(path: Path, attempts: list[AIAttempt], *, required: bool = False) -> None:
    """A copy of the context's attempts for readers, written only when it changes; an
    incident with no attempt yet has none, unless `required` (the quarantine bundle)."""
    data = fsutil.dump_json([a.model_dump(mode="json") for a in attempts])
    try:
        same = fsutil.read_regular_file(path) == data
    except FileNotFoundError:
        same = not attempts and not required
    except IncidentsError:
        same = False
    if not same:
        fsutil.ensure_dir(path.parent)
        fsutil.atomic_write_bytes(path, data)
