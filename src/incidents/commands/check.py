"""`incidents check [FILES...]` and `incidents fix FILES...`: the canonical checks by hand.

On unchanged inputs `incidents check` is answered before this module loads (see
incidents.checks.replay); this is the full path, which leaves that replay its manifest.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from incidents import output
from incidents.checks import replay
from incidents.checks.inputs import expand_targets
from incidents.commands.common import ConfigOpt, JsonOpt

if TYPE_CHECKING:
    from incidents.checks.inputs import Inputs
    from incidents.checks.settings import ChecksSettings
    from incidents.config import Config

FilesArg = Annotated[
    list[str] | None,
    typer.Argument(help="Files or folders (default: the current folder).", show_default=False),
]
ToolsOpt = Annotated[
    str | None, typer.Option("--tools", help="Only these profiles, comma-separated: ruff,mypy.")
]
StrictOpt = Annotated[
    bool, typer.Option("--strict", help="Style findings block too (seed 001 strict_mode).")
]


def _settings(cfg: Config) -> ChecksSettings:
    checks = cfg.checks
    if checks.cache_dir and cfg.source:
        base = Path(cfg.source).parent
        checks = checks.model_copy(
            update={"cache_dir": str((base / os.path.expanduser(checks.cache_dir)).resolve())}
        )
    return checks


def run_check(
    python: list[str],
    powershell: list[str],
    cfg: Config,
    *,
    tools: Sequence[str] | None,
    strict: bool,
    inputs: Inputs | None = None,
    cwd: str | None = None,
) -> tuple[dict[str, Any], int]:
    """The canonical checks on these targets (relative to `cwd`, default the current
    folder): the
    normalized report as `--json` prints it, and the exit code (0 clean, 1 blocking
    findings, 2 an infrastructure failure). `incidents check` and the MCP server's lint
    tools (incidents.mcp_server) both answer with it."""
    from incidents.checks.engine import is_blocking, run_error_pipeline
    from incidents.models.pipeline import ErrorPipelineContext

    strict = strict or cfg.policy.strict_mode
    ctx = ErrorPipelineContext(run_id="cli", workstream_id="cli", strict_mode=strict)
    report = run_error_pipeline(
        python, powershell, ctx, settings=_settings(cfg), tools=tools, inputs=inputs, cwd=cwd
    )
    code = 2 if report.infra_failures else 1 if is_blocking(report, strict) else 0
    return report.model_dump(mode="json"), code


def check(
    files: FilesArg = None,
    as_json: JsonOpt = False,
    tools: ToolsOpt = None,
    strict: StrictOpt = False,
    config: ConfigOpt = None,
) -> int:
    """Run the canonical checks: exit 0 clean, 1 blocking findings, 2 infra failure."""
    from incidents.checks.inputs import Inputs
    from incidents.config import load_config

    inputs = Inputs()
    inputs.own_code()
    python, powershell = inputs.targets(*(files or []))
    request = replay.Request(tuple(files or ()), replay.parse_tools(tools), strict, config, as_json)
    where = replay.locate_quietly(request)  # before the config is read: the key is the past
    cfg = load_config(config)
    doc, code = run_check(
        python, powershell, cfg, tools=request.tools, strict=strict, inputs=inputs
    )
    replay.emit(replay.render(doc, as_json))
    if where is not None:
        replay.store(where, request, inputs, doc, code)
    return code


def fix(
    files: Annotated[list[str], typer.Argument(help="The files to fix (nothing else is touched).")],
    as_json: JsonOpt = False,
    tools: ToolsOpt = None,
    config: ConfigOpt = None,
) -> int:
    """Apply the mechanical fixers (ruff --fix, ruff format, black if enabled) to FILES."""
    from incidents.checks.autofix import apply_mechanical_fixes
    from incidents.config import load_config

    python, _ = expand_targets(files)
    settings = _settings(load_config(config))
    result = apply_mechanical_fixes(python, settings=settings, tools=replay.parse_tools(tools))
    if as_json:
        output.out_json(result.to_json())
    else:
        for step in result.log:
            status = step.error or f"exit {step.exit_code}"
            output.out(f"{step.tool}: {status} ({step.duration_s:.2f}s)")
        for c in result.changed:
            output.out(f"changed {c.path}")
        if not result.changed:
            output.out("no file changed")
        for s in result.skipped:
            output.err(f"skipped {s}: not a regular file")
    for path in result.outside_changes:
        output.err(f"changed outside the targets: {path}")
    return 0 if result.ok else 2


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("fix")(fix)
