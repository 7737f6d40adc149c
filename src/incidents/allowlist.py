"""Which verification commands may run: the allowlist and its argument rules.

Standard library only: capture checks `--verify` commands with these rules before it
writes a bundle, the step service checks an incident's commands with them when it picks
a bundle up, and `incidents.verify` checks them again before it runs anything. The rules
themselves are described in `incidents.verify`'s docstring.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PROGRAMS = ("python", "python3", "pytest", "ruff", "black", "mypy", "bandit")
_PYTHON_NAME = re.compile(r"python(?:3(?:\.\d+)?)?")


def is_path(program: str) -> bool:
    """A program named by a path (it has a separator), not a bare name found on PATH."""
    return os.sep in program or bool(os.altsep and os.altsep in program)


@dataclass(frozen=True)
class Refusal:
    command: str
    program: str
    reason: str

    def __str__(self) -> str:
        return f"{self.command!r}: {self.reason}"


def _real(path: str) -> str:
    return os.path.realpath(path)


@dataclass(frozen=True)
class _Allowlist:
    names: frozenset[str]  # bare names, matched by basename
    reals: frozenset[str]  # realpaths of every allowed program
    pythons: frozenset[str]  # realpaths of the interpreters among them


_ALLOWLIST_TTL_S = 5.0
_allowlists: dict[tuple[tuple[str, ...], str, str], tuple[float, _Allowlist]] = {}


def _allowlist(allowed: Sequence[str], search_path: str) -> _Allowlist:
    """The allowlist resolved on `search_path`, kept a few seconds: a watcher checks every
    incident's commands, and resolving means a dozen PATH searches and realpaths."""
    key = (tuple(allowed), search_path, os.getcwd())
    now = time.monotonic()
    cached = _allowlists.get(key)
    if cached is not None and now - cached[0] < _ALLOWLIST_TTL_S:
        return cached[1]
    allow = _resolve_allowlist(allowed, search_path)
    _allowlists.clear()  # one allowlist and PATH per process in practice
    _allowlists[key] = (now, allow)
    return allow


def _resolve_allowlist(allowed: Sequence[str], search_path: str) -> _Allowlist:
    names = set(DEFAULT_PROGRAMS)
    pythons = {_real(sys.executable)}
    base = getattr(sys, "_base_executable", None)
    if isinstance(base, str) and base:
        pythons.add(_real(base))
    reals: set[str] = set()
    for entry in allowed:
        if is_path(entry):
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


# Verification re-checks the files as they are: a command must not change them or the
# environment it checks them in. Options that write or install, in every spelling the tool
# accepts (mypy's argparse takes any unique prefix; ruff's and black's parsers take none),
# a formatter run without `--check`/`--diff`, and pip in any form are refused.
_WRITES_LONG = {
    "mypy": ("--install-types",),
    "ruff": ("--fix", "--unsafe-fixes", "--fix-only", "--add-noqa"),
}
_PREFIXES = frozenset({"mypy"})  # tools whose parser accepts an abbreviated long option
_ARGS_FILES = frozenset({"mypy", "pytest"})  # `@file` reads more arguments from a file
_RUFF_FIX_SETTING = re.compile(r"^\s*(?:lint\.)?(?:fix|unsafe-fixes|fix-only)\s*=", re.I)
_RUFF_VALUE_OPTS = frozenset({"--config", "--target-version", "--output-format", "-o",
                              "--output-file", "--line-length", "--stdin-filename"})  # fmt: skip
_READ_ONLY = frozenset({"--check", "--diff"})
_PIP = re.compile(r"pip(?:3(?:\.\d+)?)?|ensurepip")


def _writes(tool: str, args: list[str]) -> str | None:
    """Why a command of `tool` would change files or install something, if it would."""
    if _PIP.fullmatch(tool):
        return "pip installs packages"
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if arg.startswith("@") and tool in _ARGS_FILES:
            return f"argument {arg!r} of {tool} reads more arguments from a file"
        for option in _WRITES_LONG.get(tool, ()):
            if name == option or (tool in _PREFIXES and len(name) > 3 and option.startswith(name)):
                return f"option {option} of {tool} changes files or installs"
        if tool == "ruff" and name == "--config":
            value = (
                arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            )
            if _RUFF_FIX_SETTING.match(value):
                return f"argument {value!r} of ruff changes files or installs"
    read_only = any(a.split("=", 1)[0] in _READ_ONLY for a in args)
    if tool == "black" and not read_only:
        return "black without --check or --diff changes files"
    if tool == "ruff":
        command = _ruff_command(args)
        if command == "format" and not read_only:
            return "ruff format without --check or --diff changes files"
        if command == "clean":
            return "ruff clean changes files"
    return None


def _ruff_command(args: list[str]) -> str | None:
    """ruff's subcommand: its first argument that is neither an option nor an option's value."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _RUFF_VALUE_OPTS
        else:
            return arg
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
    writes = _writes(tool, args)
    if writes is not None:
        return Refusal(command, program, writes)
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
        if _PIP.fullmatch(module):
            return Refusal(command, program, "pip installs packages")
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
    if is_path(program):
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


# what a shell would have taken as a pipe, a list or a redirection: run as argv, it would
# be a literal argument instead, never what the command's author meant
_SHELL_OPERATOR = re.compile(r"^(?:\|\|?|\|&|&&?|;;?|&>>?|\d*[<>]{1,2}&?\d*-?)$|;$")


def shell_operator(argv: list[str]) -> str | None:
    """The first argument that is a shell operator (`|`, `&&`, `;`, `>`, `2>&1`...), or None."""
    return next((arg for arg in argv if _SHELL_OPERATOR.search(arg)), None)


def split_command(command: str) -> list[str]:
    """shlex, POSIX rules; ValueError when it cannot be split, is empty or has a NUL."""
    if "\x00" in command:
        raise ValueError("a NUL byte")
    argv = shlex.split(command)
    if not argv:
        raise ValueError("empty command")
    return argv


def check_allowed(
    commands: Sequence[str], allowed: Sequence[str], workdir: Path | None = None
) -> list[Refusal]:
    """Every command that must not run, with why. Empty list: all may run. `allowed`: the
    programs `[verification] allow` adds, searched on this process's PATH (the PATH that
    `proc.minimal_env` gives the commands)."""
    allow = _allowlist(allowed, os.environ.get("PATH", os.defpath))
    whole_disk = workdir is not None and _real(str(workdir)) == os.sep
    refusals: list[Refusal] = []
    for command in commands:
        try:
            argv = split_command(command)
        except ValueError as exc:
            refusals.append(Refusal(command, "", f"cannot split into arguments: {exc}"))
            continue
        operator = shell_operator(argv)
        refusal = (
            Refusal(
                command,
                argv[0],
                f"a shell operator {operator!r}: a command runs as argv "
                "without a shell (no pipes, redirections, && or ;)",
            )
            if operator is not None
            else _refuse(command, argv, allow, workdir)
        )
        if refusal is None and whole_disk:
            refusal = Refusal(command, argv[0], "the workdir is / (nothing would be contained)")
        if refusal is not None:
            refusals.append(refusal)
    return refusals
