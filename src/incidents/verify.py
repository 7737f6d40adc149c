"""Verification commands: an incident's `verify` list (and its plan's), run safely.

Commands are data from files on disk, so:
- each is split once with `shlex` and run as argv (never a shell), in the incident's
  workdir, with a timeout, a minimal environment and capped output, through `proc.run`;
- its program must be on the allowlist, checked for every command before any runs
  (`check_allowed`). Default allowlist: the Python interpreter (`python`, `python3`,
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
  incident's, and are read as the tool reads them;
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

import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field, field_validator

from incidents import proc
from incidents.config_section import Section
from incidents.models.report import Finding, InfraFailure, ToolRun
from incidents.vocab import Category, Severity

TOOL = "verify"
DEFAULT_PROGRAMS = ("python", "python3", "pytest", "ruff", "black", "mypy", "bandit")
_PYTHON_NAME = re.compile(r"python(?:3(?:\.\d+)?)?")


def _is_path(program: str) -> bool:
    return os.sep in program or bool(os.altsep and os.altsep in program)


class VerifySettings(Section):
    """`[verification]` in incidents.toml."""

    allow: list[str] = Field(
        default_factory=list,
        description="programs allowed besides the interpreter and check tools: bare names "
        "(matched by basename, found on PATH) or paths (matched by realpath)",
    )
    timeout_s: float = Field(default=300.0, gt=0, le=24 * 3600, description="per command")
    output_tail_bytes: int = Field(
        default=4096, ge=256, le=1 << 20, description="how much output a failure keeps"
    )

    @field_validator("allow")
    @classmethod
    def _absolute_paths(cls, value: list[str]) -> list[str]:
        for entry in value:
            if not entry.strip():
                raise ValueError("an empty program name")
            if _is_path(entry) and not os.path.isabs(os.path.expanduser(entry)):
                raise ValueError(f"{entry!r}: a program path must be absolute (or a bare name)")
        return value


@dataclass(frozen=True)
class Refusal:
    command: str
    program: str
    reason: str

    def __str__(self) -> str:
        return f"{self.command!r}: {self.reason}"


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


def _real(path: str) -> str:
    return os.path.realpath(path)


@dataclass(frozen=True)
class _Allowlist:
    names: frozenset[str]  # bare names, matched by basename
    reals: frozenset[str]  # realpaths of every allowed program
    pythons: frozenset[str]  # realpaths of the interpreters among them


_ALLOWLIST_TTL_S = 5.0
_allowlists: dict[tuple[tuple[str, ...], str, str], tuple[float, _Allowlist]] = {}


def _allowlist(settings: VerifySettings, search_path: str) -> _Allowlist:
    """The allowlist resolved on `search_path`, kept a few seconds: a watcher checks every
    incident's commands, and resolving means a dozen PATH searches and realpaths."""
    key = (tuple(settings.allow), search_path, os.getcwd())
    now = time.monotonic()
    cached = _allowlists.get(key)
    if cached is not None and now - cached[0] < _ALLOWLIST_TTL_S:
        return cached[1]
    allow = _resolve_allowlist(settings, search_path)
    _allowlists.clear()  # one settings and PATH per process in practice
    _allowlists[key] = (now, allow)
    return allow


def _resolve_allowlist(settings: VerifySettings, search_path: str) -> _Allowlist:
    names = set(DEFAULT_PROGRAMS)
    pythons = {_real(sys.executable)}
    base = getattr(sys, "_base_executable", None)
    if isinstance(base, str) and base:
        pythons.add(_real(base))
    reals: set[str] = set()
    for entry in settings.allow:
        if _is_path(entry):
            reals.add(_real(os.path.expanduser(entry)))
        else:
            names.add(entry)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for name in (*names, version):
        found = shutil.which(name, path=search_path)
        if found:
            (pythons if _PYTHON_NAME.fullmatch(name) else reals).add(_real(found))
    return _Allowlist(frozenset(names), frozenset(reals | pythons), frozenset(pythons))


# CPython's options that take a value (`-W ignore`, `-Wignore`, `-X dev`); `-c` and `-m`
# take one too and end the interpreter's options.
_PY_VALUE_OPTS = frozenset("WX")
_PY_LONG_VALUE_OPTS = frozenset({"--check-hash-based-pycs"})


def python_invocation(args: list[str]) -> tuple[str, str, list[str], list[str]]:
    """What `python ARGS` runs, the arguments it passes on, and the interpreter's `-X`
    options: ("code", CODE, rest, xs), ("module", NAME, rest, xs), ("stdin", "-", rest,
    xs), ("script", PATH, rest, xs) or ("none", "", [], xs) (`python -V`). Parsed as
    CPython parses it, so an option value (`-W ignore -c ...`) cannot hide what follows."""
    xs: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-":
            return "stdin", arg, args[i + 1 :], xs
        if arg == "--" or not arg.startswith("-"):
            rest = args[i + 1 :] if arg == "--" else args[i:]
            return ("script", rest[0], rest[1:], xs) if rest else ("none", "", [], xs)
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            i += 2 if name in _PY_LONG_VALUE_OPTS and "=" not in arg else 1
            continue
        for j, flag in enumerate(arg[1:], start=1):
            if flag in "cm" or flag in _PY_VALUE_OPTS:
                value = arg[j + 1 :]
                if not value:
                    i += 1
                    value = args[i] if i < len(args) else ""
                if flag == "c":
                    return "code", value, args[i + 1 :], xs
                if flag == "m":
                    return "module", value, args[i + 1 :], xs
                if flag == "X":
                    xs.append(value)
                break
        i += 1
    return "none", "", [], xs


# `-X` options that only change diagnostics or text handling. Others can point the
# interpreter elsewhere (`-X pycache_prefix=DIR` loads bytecode from DIR for every import).
_SAFE_X = frozenset(
    {"dev", "utf8", "importtime", "faulthandler", "tracemalloc", "showrefcount",
     "no_debug_ranges", "warn_default_encoding", "frozen_modules", "int_max_str_digits"}
)  # fmt: skip


# Options of the allowed tools that run another program or load code from anywhere (not
# only from the workdir): an incident file must not reach them, in any spelling their
# parsers accept: a short option clustered or with its value attached (`-pevil`, `-vp x`),
# a long one abbreviated (`--python-exec`, argparse takes any unique prefix).
_RISKY_SHORT = {"pytest": frozenset("po")}
_RISKY_LONG = {
    "mypy": frozenset({"--python-executable"}),
    "pytest": frozenset({"--pyargs", "--override-ini", "--pdbcls"}),
}


def _risky(tool: str, arg: str) -> str | None:
    """The risky option `arg` is a spelling of, if any."""
    if arg.startswith("--"):
        name = arg.split("=", 1)[0]
        if len(name) > 3:
            return next((o for o in _RISKY_LONG.get(tool, ()) if o.startswith(name)), None)
        return None
    if arg.startswith("-") and len(arg) > 1:
        letter = next((c for c in arg[1:] if c in _RISKY_SHORT.get(tool, ())), None)
        return f"-{letter}" if letter else None
    return None


def _tool(program: str) -> str:
    name = os.path.basename(program)
    return "pytest" if name in ("py.test", "pytest") else name


def _values(arg: str) -> list[str]:
    """What in one argument may name a file: the argument, or an option's value."""
    if not arg.startswith("-"):
        return [arg]
    if "=" in arg:
        return [arg.split("=", 1)[1]]
    if not arg.startswith("--") and len(arg) > 2 and os.sep in arg:
        return [arg[2:]]  # -c/path/to/file
    return []


def _outside(value: str, workdir: Path) -> bool:
    """`value` names a path (it has a separator, or exists in the workdir) that resolves
    outside the workdir (symlinks followed)."""
    path = os.path.join(workdir, value)
    if os.sep not in value and value not in (".", "..") and not os.path.lexists(path):
        return False
    base = _real(str(workdir))
    return os.path.commonpath([_real(path), base]) != base


def _refuse_args(
    command: str, program: str, tool: str, args: list[str], workdir: Path | None
) -> Refusal | None:
    for arg in args:
        option = _risky(tool, arg)
        if option is not None:
            return Refusal(command, program, f"option {option} of {tool} is not run from incidents")
        if "$" in arg or arg.startswith("~") or "=~" in arg:
            # tools expand these themselves in some values (pytest --junitxml, mypy paths)
            return Refusal(command, program, f"argument {arg!r} asks for $ or ~ expansion")
        if workdir is None:
            continue
        for value in _values(arg):
            if _outside(value, workdir):
                return Refusal(command, program, f"argument {value!r} is outside the workdir")
    return None


def _refuse_python(
    command: str, program: str, args: list[str], allow: _Allowlist, workdir: Path | None
) -> Refusal | None:
    kind, value, rest, xs = python_invocation(args)
    unsafe = next((x for x in xs if x.split("=", 1)[0] not in _SAFE_X), None)
    if unsafe is not None:
        return Refusal(
            command, program, f"interpreter option -X {unsafe} is not run from incidents"
        )
    if kind == "code":
        return Refusal(command, program, "inline code (python -c) is not run from incidents")
    if kind == "stdin":
        return Refusal(command, program, "code from standard input (python -) is not run")
    if kind == "module":
        module = value.split(".")[0]
        if module not in allow.names:
            return Refusal(
                command, program, f"module {value!r} (python -m) is not on the allowlist"
            )
        return _refuse_args(command, program, _tool(module), rest, workdir)
    if kind == "script" and workdir is not None:
        if _outside(value, workdir):
            return Refusal(command, program, f"script {value!r} is outside the workdir")
        return _refuse_args(command, program, "python", rest, workdir)
    return None


def _refuse(
    command: str, argv: list[str], allow: _Allowlist, workdir: Path | None
) -> Refusal | None:
    program = argv[0]
    not_allowed = Refusal(command, program, f"program {program!r} is not on the allowlist")
    if _is_path(program):
        if not os.path.isabs(program) and workdir is None:
            return Refusal(command, program, "a relative program path needs a workdir")
        real = _real(os.path.join(workdir or "", program))
        if real not in allow.reals:
            return not_allowed
        is_python = real in allow.pythons
    else:
        is_python = bool(_PYTHON_NAME.fullmatch(program))
        if program not in allow.names and not is_python:
            return not_allowed
    if is_python:
        return _refuse_python(command, program, argv[1:], allow, workdir)
    return _refuse_args(command, program, _tool(program), argv[1:], workdir)


def split_command(command: str) -> list[str]:
    """shlex, POSIX rules; ValueError when it cannot be split, is empty or has a NUL."""
    if "\x00" in command:
        raise ValueError("a NUL byte")
    argv = shlex.split(command)
    if not argv:
        raise ValueError("empty command")
    return argv


def check_allowed(
    commands: list[str], settings: VerifySettings, workdir: Path | None = None
) -> list[Refusal]:
    """Every command that must not run, with why. Empty list: all may run."""
    allow = _allowlist(settings, proc.minimal_env()["PATH"])
    whole_disk = workdir is not None and _real(str(workdir)) == os.sep
    refusals: list[Refusal] = []
    for command in commands:
        try:
            argv = split_command(command)
        except ValueError as exc:
            refusals.append(Refusal(command, "", f"cannot split into arguments: {exc}"))
            continue
        refusal = _refuse(command, argv, allow, workdir)
        if refusal is None and whole_disk:
            refusal = Refusal(command, argv[0], "the workdir is / (nothing would be contained)")
        if refusal is not None:
            refusals.append(refusal)
    return refusals


def _tail(result: proc.ProcResult, limit: int) -> str:
    from incidents.redact import redact

    data = result.stdout + (b"\n" if result.stdout and result.stderr else b"") + result.stderr
    text = data[-limit:].decode("utf-8", errors="replace")
    return redact(text.strip())


def _run_one(
    command: str,
    workdir: Path,
    settings: VerifySettings,
    out: VerificationResult,
    while_running: Callable[[], None] | None = None,
) -> None:
    argv = split_command(command)
    result = proc.run(
        argv, cwd=workdir, timeout=settings.timeout_s, env=proc.minimal_env(),
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
