"""`incidents check [FILES...]` and `incidents fix FILES...`: the canonical checks by hand."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from incidents import output
from incidents.commands.common import ConfigOpt, JsonOpt
from incidents.errors import UsageError

if TYPE_CHECKING:
    from incidents.checks.settings import ChecksSettings
    from incidents.models.report import ErrorReport

PY_SUFFIXES = (".py", ".pyi")
PS_SUFFIXES = (".ps1", ".psm1", ".psd1")
SKIP_DIRS = {"__pycache__", "node_modules", "venv", "build", "dist"}

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


def expand_targets(args: list[str]) -> tuple[list[str], list[str]]:
    """(python files, powershell files); folders are walked, hidden ones skipped."""
    python: list[str] = []
    powershell: list[str] = []
    for arg in args or ["."]:
        path = Path(arg)
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
                for name in sorted(names):
                    _sort_into(os.path.join(folder, name), python, powershell)
        elif path.is_file():
            if not _sort_into(arg, python, powershell):
                raise UsageError(f"{arg}: not a Python or PowerShell file")
        else:
            raise UsageError(f"{arg}: no such file or folder")
    return python, powershell


def _sort_into(path: str, python: list[str], powershell: list[str]) -> bool:
    if path.endswith(PY_SUFFIXES):
        python.append(path)
    elif path.endswith(PS_SUFFIXES):
        powershell.append(path)
    else:
        return False
    return True


def _settings(config: str | None) -> ChecksSettings:
    from incidents.config import load_config

    cfg = load_config(config)
    checks = cfg.checks
    if checks.cache_dir and cfg.source:
        base = Path(cfg.source).parent
        checks = checks.model_copy(
            update={"cache_dir": str((base / os.path.expanduser(checks.cache_dir)).resolve())}
        )
    return checks


def _tools(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [t.strip() for t in value.split(",") if t.strip()]
    if not names:
        raise UsageError("--tools: give at least one profile name")
    return names


def render(report: ErrorReport) -> None:
    s = report.summary
    if report.issues:
        rows = [
            [
                f"{f.path}:{f.line or 0}:{f.column or 0}",
                f.tool,
                f.code or "",
                f.category.value,
                "hard" if f.hard else "style",
                f.message.splitlines()[0][:120] if f.message else "",
            ]
            for f in report.issues
        ]
        output.out(output.table(["where", "tool", "code", "category", "kind", "message"], rows))
    runs = ", ".join(
        f"{r.tool} {'cached' if r.cached else f'{r.duration_s:.2f}s'}" for r in report.tool_runs
    )
    output.out(
        f"{s.total_issues} issue(s): {s.hard_error_count} hard, {s.style_error_count} style"
        + (f" [{runs}]" if runs else "")
    )
    for i in report.infra_failures:
        detail = f": {i.stderr_tail.splitlines()[-1]}" if i.stderr_tail.strip() else ""
        output.err(f"infra failure: {i.tool}: {i.reason}{detail}")


def check(
    files: FilesArg = None,
    as_json: JsonOpt = False,
    tools: ToolsOpt = None,
    strict: StrictOpt = False,
    config: ConfigOpt = None,
) -> int:
    """Run the canonical checks: exit 0 clean, 1 blocking findings, 2 infra failure."""
    from incidents.checks.engine import is_blocking, run_error_pipeline
    from incidents.models.pipeline import ErrorPipelineContext

    python, powershell = expand_targets(files or [])
    settings = _settings(config)
    ctx = ErrorPipelineContext(run_id="cli", workstream_id="cli", strict_mode=strict)
    report = run_error_pipeline(python, powershell, ctx, settings=settings, tools=_tools(tools))
    if as_json:
        output.out_json(report.model_dump(mode="json"))
        for i in report.infra_failures:
            output.err(f"infra failure: {i.tool}: {i.reason}")
    else:
        render(report)
    if report.infra_failures:
        return 2
    return 1 if is_blocking(report, strict) else 0


def fix(
    files: Annotated[list[str], typer.Argument(help="The files to fix (nothing else is touched).")],
    as_json: JsonOpt = False,
    tools: ToolsOpt = None,
    config: ConfigOpt = None,
) -> int:
    """Apply the mechanical fixers (ruff --fix, ruff format, black if enabled) to FILES."""
    from incidents.checks.autofix import apply_mechanical_fixes

    python, _ = expand_targets(files)
    result = apply_mechanical_fixes(python, settings=_settings(config), tools=_tools(tools))
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
