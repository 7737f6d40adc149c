"""The reproduction run a second time, as the user's own command ran it.

A check runs the way the product runs checks (a clean room, the product's environment).
Code that keys on how it is run (a variable only the product sets, the folder it runs
in, a module only the runner loads) can pass there and still fail for the user. So a
recheck also runs the command `incidents run` captured exactly as it ran: the same argv,
the same cwd, the environment it recorded (`capture_env`). A secret was recorded by its
name only: its value is the judging process's own (a token the command needs is set
where the verdict is judged, as where the command first ran), read at run time and never
written anywhere; a secret the judging process lacks is left out. Both runs must pass.
It runs only when that command is one of the incident's verification commands (it passed
the allowlist as the reproduction).

A run may write the files it writes for the user; one that leaves a file the import
system or a test runner would load (`cleanroom.loadable`) in its cwd has it removed and
fails: no later check may load what a run planted. The product's own verification run,
earlier in the same workdir, is held to the same (`leftovers`). Bytecode in a
`__pycache__` is removed too but is no failure: the interpreter writes it for any module
a run imports, and a later run makes it again from the source.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from incidents import fsutil, proc
from incidents.checks.cleanroom import loadable
from incidents.errors import IncidentsError
from incidents.models.report import Finding, InfraFailure, ToolRun
from incidents.vocab import Category, Severity

if TYPE_CHECKING:
    from collections.abc import Callable

    from incidents.verify import VerificationResult, VerifySettings

TOOL = "as-user"
TAIL_BYTES = 2000


@dataclass
class AsUser:
    findings: list[Finding] = field(default_factory=list)
    runs: list[ToolRun] = field(default_factory=list)
    infra: list[InfraFailure] = field(default_factory=list)


def recorded(
    context: dict[str, Any], commands: list[str], secrets: Mapping[str, str] | None = None
) -> tuple[list[str], str, dict[str, str]] | None:
    """(argv, cwd, environment) of the user's run, when it was recorded and is one of the
    verification `commands`; else None. A variable recorded by name only (a secret) takes
    its value from `secrets` (default: this process's environment), or is left out."""
    argv, cwd, env = context.get("command"), context.get("cwd"), context.get("env")
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        return None
    if not isinstance(cwd, str) or not isinstance(env, dict) or shlex.join(argv) not in commands:
        return None
    here = os.environ if secrets is None else secrets
    kept: dict[str, str] = {}
    for name, value in env.items():
        if isinstance(value, str):
            kept[str(name)] = value
        elif value is None and str(name) in here:  # a secret: by name, its value is ours
            kept[str(name)] = here[str(name)]
    return argv, cwd, kept


def run_as_user(folder: Path, commands: list[str], settings: VerifySettings) -> AsUser:
    """Run the user's command as recorded in the bundle at `folder` (see the docstring)."""
    timeout = settings.timeout_s
    out = AsUser()
    try:
        context = fsutil.read_json_object(folder / "context.json")
    except (IncidentsError, OSError):
        return out
    found = recorded(context, commands)
    if found is None:
        return out
    argv, cwd, env = found
    command = shlex.join(argv)
    if not os.path.isdir(cwd):
        reason = f"cannot run the reproduction as the user ran it: its cwd {cwd} is gone"
        out.infra.append(InfraFailure(tool=TOOL, argv=argv, exit_code=None, reason=reason))
        return out
    before = loadable_files(cwd)
    result = proc.run(argv, cwd=cwd, timeout=timeout, env=env)
    planted = take_back(cwd, before)
    out.runs.append(
        ToolRun(
            tool=TOOL,
            argv=argv,
            exit_code=result.returncode,
            duration_s=round(result.duration_s, 3),
            files=0,
        )
    )
    tail = (result.stdout_text + result.stderr_text)[-TAIL_BYTES:]
    if result.returncode is None and not result.timed_out:
        reason = result.error or "did not run"
        out.infra.append(
            InfraFailure(tool=TOOL, argv=argv, exit_code=None, reason=reason, stderr_tail=tail)
        )
        return out
    problems = []
    if result.timed_out:
        problems.append(f"timed out after {timeout:g}s")
    elif result.returncode != 0:
        problems.append(f"exited with {result.returncode}")
    if planted:
        problems.append(
            f"left files the import system would load, removed: {', '.join(planted[:5])}"
        )
    if problems:
        message = f"run as the user ran it (same argv, cwd and environment): {'; '.join(problems)}"
        out.findings.append(
            Finding(
                tool=TOOL,
                path=command,
                code="as-user",
                category=Category.VERIFICATION,
                severity=Severity.ERROR,
                hard=True,
                message=f"{message}; output tail:\n{tail}" if tail else message,
            )
        )
    return out


def verify_in_workdir(
    commands: list[str],
    workdir: Path,
    settings: VerifySettings,
    while_running: Callable[[], None] | None = None,
) -> tuple[VerificationResult, list[Finding]]:
    """The product's own verification run (`verify.run_verification`), in the workdir,
    and the finding of the files it left that a later run would load (removed)."""
    from incidents.verify import run_verification

    before = loadable_files(str(workdir))
    result = run_verification(commands, workdir, settings, while_running)
    planted = take_back(str(workdir), before)
    return result, [leftovers("verify", " && ".join(commands), planted)] if planted else []


def loadable_files(cwd: str) -> set[str]:
    """The paths under cwd the import system or a test runner would load by name."""
    found: set[str] = set()
    for folder, dirs, names in os.walk(cwd):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*names, *dirs]:
            rel = os.path.relpath(os.path.join(folder, name), cwd)
            if loadable(rel):
                found.add(rel)
    return found


def take_back(cwd: str, before: set[str]) -> list[str]:
    """Remove what a run left under cwd that `loadable_files` finds and `before` lacked;
    returns those that fail the run (all but bytecode in a `__pycache__`)."""
    new = sorted(loadable_files(cwd) - before)
    for rel in new:
        _remove(os.path.join(cwd, rel))
    return [rel for rel in new if not _bytecode(rel)]


def _bytecode(rel: str) -> bool:
    parts = rel.split(os.sep)
    return parts[-1].endswith(".pyc") and len(parts) > 1 and parts[-2] == "__pycache__"


def leftovers(tool: str, command: str, planted: list[str]) -> Finding:
    """The finding of a run that left files a later run would load (removed)."""
    shown = ", ".join(planted[:5]) + (f" (and {len(planted) - 5} more)" if len(planted) > 5 else "")
    return Finding(
        tool=tool,
        path=command,
        code="planted",
        category=Category.VERIFICATION,
        severity=Severity.ERROR,
        hard=True,
        message=f"left files the import system would load, removed: {shown}",
    )


def _remove(path: str) -> None:
    import shutil

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        pass
