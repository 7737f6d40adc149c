"""Verification commands: an incident's `verify` list (and its plan's), run safely.

Commands are data from files on disk, so:
- each is split once with `shlex` and run as argv (never a shell), in the incident's
  workdir, with a timeout, a minimal environment and capped output, through `proc.run`;
- its program must be on the allowlist, checked for every command before any runs
  (`check_allowed`; the rules live in `incidents.allowlist`, standard library only, so
  that capture and the step service's pickup refuse a command by the very same rules
  before it ever reaches a run). Default allowlist: the Python interpreter (`python`, `python3`,
  `python3.N`, `sys.executable`) and the check tools (`pytest`, `ruff`, `black`, `mypy`,
  `bandit`); `[verification] allow` in incidents.toml adds names or paths.
  A bare name is allowed by its basename and must then be found on PATH. A path
  (absolute, or relative to the workdir such as `.venv/bin/python`) is allowed only when
  its realpath is the realpath of an allowed program, or it is listed itself; so a venv's
  `python` symlink to the real interpreter passes and `./evil` or `/bin/sh` do not.
  `python -c CODE` is refused too: an incident file must not carry code to run inline.
  Code inside the workdir may run (re-running the project's own tests is the point), but
  nothing outside it: every argument or option value that names a path must resolve
  inside the workdir (symlinks followed), options that run another program or load code
  from anywhere (`mypy --python-executable`, `pytest -p/-o/--pyargs/--pdbcls`) are refused
  in every spelling the tools accept (clustered, value attached, abbreviated), `$` and `~`
  (which some tools expand) are refused, and a workdir of `/` contains nothing, so it is
  refused. Config files a tool finds above the workdir are the host's, not the
  incident's, and are read as the tool reads them. A verification must not change the
  files it judges or install anything: `mypy --install-types`, `ruff --fix` (and
  `--unsafe-fixes`, `--fix-only`, `--add-noqa`, `--config "fix = true"`), `ruff format`
  or `black` without `--check`/`--diff`, `ruff clean`, pip in any form and `@file`
  arguments (mypy, pytest) are refused;
- a refused command means nothing runs: the caller escalates with `escalation_reason`.

Outcomes:
- exit 0: passed (a `ToolRun`);
- non-zero exit: a hard `verification` finding whose message is the exit code and the
  redacted tail of its output;
- timeout: also a failing verification finding (code `TIMEOUT`), not an infra failure:
  the command *is* the step being re-run, and a step that times out is the failure we
  are verifying (transient; the retry policy backs off and tries again);
- a program that cannot be started (missing, not executable): an `InfraFailure`; the
  check could not give an answer, which is never "passed".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field, field_validator

from incidents import proc
from incidents.allowlist import (
    DEFAULT_PROGRAMS,
    Refusal,
    python_invocation,
    split_command,
)
from incidents.allowlist import check_allowed as _check_allowed
from incidents.config_check import programs_problem, workdirs_problem
from incidents.config_section import Section
from incidents.models.report import Finding, InfraFailure, ToolRun
from incidents.vocab import Category, Severity

TOOL = "verify"
__all__ = [
    "DEFAULT_PROGRAMS", "Refusal", "VerificationResult", "VerifySettings", "check_allowed",
    "python_invocation", "run_verification", "split_command",
]  # fmt: skip


class VerifySettings(Section):
    """`[verification]` in incidents.toml."""

    allow: list[str] = Field(
        default_factory=list,
        description="programs allowed besides the interpreter and check tools: bare names "
        "(matched by basename, found on PATH) or paths (matched by realpath)",
        json_schema_extra={"x-rule": "programs"},
    )
    timeout_s: float = Field(default=300.0, gt=0, le=24 * 3600, description="per command")
    output_tail_bytes: int = Field(
        default=4096, ge=256, le=1 << 20, description="how much output a failure keeps"
    )
    workdirs: list[str] = Field(
        default_factory=list,
        description="absolute folders an incident's workdir must lie under (empty: anywhere); "
        "set it on a shared inbox: capture and pickup refuse an incident working elsewhere",
        json_schema_extra={"x-rule": "workdirs"},
    )

    pass_env: list[str] = Field(
        default_factory=list,
        description="environment variables passed from the watcher's environment to "
        "verification commands (which otherwise get PATH, HOME, locale and TMPDIR only): "
        "what a step's reproduction needs, e.g. the credential an env incident named",
    )

    @field_validator("pass_env")
    @classmethod
    def _variable_names(cls, value: list[str]) -> list[str]:
        import re

        bad = [v for v in value if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,200}", v)]
        if bad:
            raise ValueError(f"not an environment variable name: {bad[0]!r}")
        return value

    @field_validator("allow")
    @classmethod
    def _absolute_paths(cls, value: list[str]) -> list[str]:
        problem = programs_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("workdirs")
    @classmethod
    def _absolute_folders(cls, value: list[str]) -> list[str]:
        problem = workdirs_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value


@dataclass
class VerificationResult:
    findings: list[Finding] = field(default_factory=list)
    tool_runs: list[ToolRun] = field(default_factory=list)
    infra_failures: list[InfraFailure] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not (self.findings or self.infra_failures or self.refusals)

    @property
    def timed_out(self) -> bool:
        return any(f.code == "TIMEOUT" for f in self.findings)

    @property
    def escalation_reason(self) -> str | None:
        """Why the incident must be escalated without running anything (refusals)."""
        if not self.refusals:
            return None
        return "verification command refused: " + "; ".join(str(r) for r in self.refusals)


def check_allowed(
    commands: list[str], settings: VerifySettings, workdir: Path | None = None
) -> list[Refusal]:
    """Every command that must not run, with why (`incidents.allowlist`). Empty: all may run."""
    return _check_allowed(commands, settings.allow, workdir)


def _tail(result: proc.ProcResult, limit: int) -> str:
    from incidents.redact import redact

    data = result.stdout + (b"\n" if result.stdout and result.stderr else b"") + result.stderr
    text = data[-limit:].decode("utf-8", errors="replace")
    return redact(text.strip())


def _passed(settings: VerifySettings) -> dict[str, str]:
    """`[verification] pass_env`: the listed variables this process has."""
    import os

    return {k: os.environ[k] for k in settings.pass_env if k in os.environ}


def _run_one(
    command: str,
    workdir: Path,
    settings: VerifySettings,
    out: VerificationResult,
    while_running: Callable[[], None] | None = None,
) -> None:
    import tempfile

    argv = split_command(command)
    # bytecode of this run only: a `__pycache__` in the workdir is anybody's (engine.execute)
    with tempfile.TemporaryDirectory(prefix="incidents-verify-") as pycache:
        result = proc.run(
            argv, cwd=workdir, timeout=settings.timeout_s,
            env=proc.minimal_env({**_passed(settings), "PYTHONPYCACHEPREFIX": pycache}),
            while_running=while_running,
        )  # fmt: skip
    out.tool_runs.append(
        ToolRun(tool=TOOL, argv=argv, exit_code=result.returncode,
                duration_s=round(result.duration_s, 3), files=0)
    )  # fmt: skip
    tail = _tail(result, settings.output_tail_bytes)
    if result.timed_out:
        message = f"timed out after {settings.timeout_s:g}s"
        code = "TIMEOUT"
    elif result.returncode is None:
        out.infra_failures.append(
            InfraFailure(tool=TOOL, argv=argv, exit_code=None,
                         reason=result.error or "did not run", stderr_tail=tail)
        )  # fmt: skip
        return
    elif result.returncode == 0:
        return
    else:
        message = f"exited with {result.returncode}"
        code = f"EXIT_{result.returncode}"
    out.findings.append(
        Finding(tool=TOOL, path=command, code=code, category=Category.VERIFICATION,
                severity=Severity.ERROR, hard=True,
                message=f"{message}; output tail:\n{tail}" if tail else message)
    )  # fmt: skip


def run_verification(
    commands: list[str],
    workdir: Path,
    settings: VerifySettings,
    while_running: Callable[[], None] | None = None,
) -> VerificationResult:
    """Check every command against the allowlist; if all pass, run each in `workdir`.
    `while_running` is called once, while the first command runs (see `proc.run`)."""
    out = VerificationResult()
    if not workdir.is_dir():
        out.infra_failures.append(
            InfraFailure(tool=TOOL, argv=[], exit_code=None,
                         reason=f"workdir {workdir} is missing or not a directory")
        )  # fmt: skip
        return out
    out.refusals = check_allowed(commands, settings, workdir)
    if out.refusals:
        return out
    for command in commands:
        _run_one(command, workdir, settings, out, while_running)
        while_running = None
    return out
