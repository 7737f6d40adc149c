"""The step service's documents: reading a bundle for a tick, and the two files only the
step service writes, `state.json` (the machine's context) and `ai_attempts.json`."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from incidents import artifacts, bundle_files, fsutil, store
from incidents import policy as policy_mod
from incidents.config import Config
from incidents.errors import (
    IncidentsError,
    InvalidDocument,
    LeaseLost,
    LockBusy,
    UnsafeFile,
    explain_validation,
)
from incidents.layout import Root
from incidents.models import AIAttempt, ErrorPipelineContext, Incident
from incidents.step import seal


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        field, reason = explain_validation(exc)
        return f"{field}: {reason}"
    return str(exc)


def read_incident(folder: Path) -> Incident:
    """incident.json, validated (InvalidDocument naming the field when it is not)."""
    path = folder / artifacts.INCIDENT
    try:
        incident = Incident.model_validate(fsutil.read_json_object(path))
    except ValidationError as exc:
        raise InvalidDocument(str(path), _reason(exc)) from exc
    if incident.incident_id != folder.name:
        raise InvalidDocument(str(path), "differs from its folder name")
    return incident


def load_incident(root: Root, folder: Path) -> Incident:
    """incident.json for a tick; a bundle that does not validate goes to error_rejected/."""
    try:
        return read_incident(folder)
    except (InvalidDocument, UnsafeFile, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno in _TRANSIENT:
            raise
        reason = exc.reason if isinstance(exc, InvalidDocument | UnsafeFile) else str(exc)
        _reject(root, folder, reason, exc, artifacts.INCIDENT)


def workdir_of(root: Root, workdir: str | None) -> Path:
    """Where an incident's checks, fixers and agents work: its `workdir`, else the folder
    that holds the reports root."""
    return Path(workdir or root.path.parent)


def load_context(root: Root, folder: Path) -> ErrorPipelineContext | None:
    """The committed context, or None before the first commit. Believed only when its seal
    is the step service's (`seal.Untrusted` otherwise; see `incidents.step.seal`)."""
    path = folder / artifacts.STATE
    try:
        data = fsutil.read_regular_file(path)
    except FileNotFoundError:
        return None
    body = seal.unseal(seal.key(root), folder.name, data, str(path))
    try:
        return ErrorPipelineContext.model_validate(fsutil.parse_json_strict(body, str(path)))
    except ValidationError as exc:
        raise InvalidDocument(str(path), _reason(exc)) from exc


def bundle_problems(
    root: Root, cfg: Config, incident: Incident, ctx: ErrorPipelineContext | None
) -> list[str]:
    """Every rule of `incidents.bundle_rules` the bundle breaks, each naming its file and
    field: capture's rules, applied again to whatever is in the inbox."""
    from incidents.bundle_rules import bundle_problems as problems_of

    settings = cfg.verification
    workdir = str(workdir_of(root, incident.workdir))
    found: list[str] = []
    stored = [
        (artifacts.INCIDENT, incident.python_files, incident.powershell_files, incident.verify)
    ]
    if ctx is not None and ctx.target_files != incident.python_files + incident.powershell_files:
        stored.append((artifacts.STATE, ctx.python_files, ctx.powershell_files, []))
    for name, python_files, powershell_files, commands in stored:
        targets = {"python_files": python_files, "powershell_files": powershell_files}
        found += [
            f"{name}: {p}"
            for p in problems_of(
                workdir, targets, commands, allow=settings.allow, workdirs=settings.workdirs
            )
        ]
    return found


LOAD_FAILURES_MAX = 3  # passes a bundle may fail to load before it is set aside
_TRANSIENT = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EINTR, errno.ENOMEM})


def load_bundle(
    root: Root, cfg: Config, folder: Path
) -> tuple[Incident, ErrorPipelineContext | None]:
    """incident.json and the committed context for a tick, judged as capture judges its
    inputs (`bundle_rules`) and the context only if the step service sealed it: a bundle
    that fails goes to error_rejected/ with why (InvalidDocument is raised), as does one
    whose files break `bundle_files`' table (links, FIFOs, hard links, sizes, types), whose
    incident.json or state.json does not validate, or that failed to load on
    `LOAD_FAILURES_MAX` passes for any other reason. The caller holds the incident's lease."""
    try:
        loaded = _load_bundle(root, cfg, folder)
    except (InvalidDocument, LockBusy, LeaseLost):
        raise  # set aside already; or someone else's turn, not the bundle's fault
    except (IncidentsError, OSError) as exc:
        if not _bundles_fault(root, exc):
            raise  # the disk's or the root's trouble (its seal key), not the bundle's
        n = _count_load_failure(root, folder.name)
        if n >= LOAD_FAILURES_MAX:
            _reject(root, folder, f"failed to load on {n} passes; the last: {exc}", exc)
        raise
    with contextlib.suppress(OSError):
        os.unlink(_failures_path(root, folder.name))
    return loaded


def _bundles_fault(root: Root, exc: BaseException) -> bool:
    """Whether a failure to load may be the bundle's: not a full or read-only disk, not a
    file every bundle shares (the root's seal key)."""
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT:
        return False
    where = getattr(exc, "path", None) or getattr(exc, "filename", None)
    return where is None or Path(os.fspath(where)) != root.seal_key


def _failures_path(root: Root, incident_id: str) -> Path:
    return root.state / "load_failures" / incident_id


def _count_load_failure(root: Root, incident_id: str) -> int:
    """How many passes failed to load this bundle, this one counted (`.state/load_failures/`)."""
    path = _failures_path(root, incident_id)
    try:
        n = int(fsutil.read_regular_file(path, 32) or b"0") + 1
    except (FileNotFoundError, ValueError, IncidentsError):
        n = 1
    with contextlib.suppress(OSError):
        fsutil.ensure_dir(path.parent)
        fsutil.atomic_write_bytes(path, str(n).encode())
    return n


def _load_bundle(
    root: Root, cfg: Config, folder: Path
) -> tuple[Incident, ErrorPipelineContext | None]:
    problems = bundle_files.problems(folder)
    if problems:
        _reject(root, folder, "; ".join(problems))
    if folder.parent == root.inbox:  # a new bundle never takes over a closed incident's id
        for bucket in ("resolved", "escalated"):
            if os.path.lexists(root.bucket(bucket) / folder.name):
                _reject(root, folder, f"an incident with this id is already {bucket}")
    incident = load_incident(root, folder)
    with store.incident_lock(root, incident.incident_id):
        store.repair_status_txt(folder, incident.status)
    try:
        ctx = load_context(root, folder)
    except seal.Untrusted as exc:
        _reject(root, folder, f"{artifacts.STATE}: {exc.field}: {exc.reason}", exc)
    except (InvalidDocument, UnsafeFile) as exc:
        if not _bundles_fault(root, exc):
            raise
        _reject(root, folder, exc.reason, exc, artifacts.STATE)
    problems = bundle_problems(root, cfg, incident, ctx)
    if problems:
        _reject(root, folder, "; ".join(problems))
    return incident, ctx


def _reject(
    root: Root, folder: Path, reason: str, cause: Exception | None = None, name: str = ""
) -> NoReturn:
    """Set the bundle aside with `reason` (about its file `name`, when one is at fault)
    and raise InvalidDocument saying where it went."""
    target = store.reject(root, folder, f"{name}: {reason}" if name else reason)
    where = folder / name if name else folder
    raise InvalidDocument(str(where), f"{reason} (moved to {target})") from cause


def new_context(incident: Incident, cfg: Config, budget_used: int) -> ErrorPipelineContext:
    """The context of an incident's first tick, from its bundle and the configuration."""
    from incidents import ladder
    from incidents.digests import combined

    policy = cfg.policy
    code = incident.error_code
    targets = [*incident.python_files, *incident.powershell_files]
    ctx = ErrorPipelineContext(
        run_id=incident.run_id,
        workstream_id=incident.incident_id,
        python_files=list(incident.python_files),
        powershell_files=list(incident.powershell_files),
        verification_commands=list(incident.verify),
        enable_mechanical_autofix=policy.enable_mechanical_autofix,
        strict_mode=policy.strict_mode,
        failure_class=policy_mod.effective_failure_class(code, incident.failure_class),
        error_code=code,
        error_signature=incident.error_signature,
        max_transient_retries=policy.max_transient_retries,
        retry_base_s=policy.retry_base_s,
        retry_max_s=policy.retry_max_s,
        transient_quiet_s=policy.transient_quiet,
        signature_attempts_used=budget_used,
        signature_attempt_limit=policy.signature_budget,
        regression_count=incident.regression_count,
        max_regressions=policy.max_regressions,
        capture_digest=(
            combined(incident.target_digests, targets)
            if incident.target_digests or not targets
            else None
        ),
    )
    ladder.apply(ctx, cfg.tiers, ladder.modes(cfg.tiers, cfg.handoff, ctx.failure_class))
    return ctx


def write_state(
    root: Root,
    folder: Path,
    ctx: ErrorPipelineContext,
    *,
    durable: bool = True,
    sync_dir: bool = True,
) -> None:
    """`state.json`, old-or-new, sealed (`incidents.step.seal`: the seal is part of the one
    file replaced). The caller holds what makes the write its own to make (the incident's
    lock, and the lease that fences it)."""
    data = seal.seal(seal.key(root), folder.name, fsutil.dump_model(ctx))
    fsutil.atomic_write_bytes(folder / artifacts.STATE, data, durable=durable, sync_dir=sync_dir)


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
