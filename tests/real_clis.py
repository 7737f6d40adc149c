"""The real fixer CLIs for the tests, installed the ordinary way into a cache outside /tmp
(`~/.cache/incidents-tests/fixers`, once): aider-chat from PyPI into a virtualenv of its
own (`pip install aider-chat`), codex and claude from the npm registry
(`npm install @openai/codex @anthropic-ai/claude-code`; npm itself from Debian when it is
missing, as `tests.debian` installs Chromium). pytest-xdist's workers take turns (a lock
file), so two never install at once; a test that needs a CLI whose install failed skips
with the reason.

The versions are pinned: the scripted model server (`tests.fixers.model_server`) answers
with the tools these versions offer (codex's `exec_command`, claude's `Read`/`Write`).
"""

from __future__ import annotations

import fcntl
import functools
import os
import subprocess
import sys
from pathlib import Path

from tests.debian import find_or_install

AIDER = "aider-chat==0.86.2"
NPM_PACKAGES = {"codex": "@openai/codex@0.171.0", "claude": "@anthropic-ai/claude-code@2.1.197"}
INSTALL_TIMEOUT_S = 900


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "incidents-tests" / "fixers"


# fixed at import: a test gives the CLIs a fresh HOME, and the cache must not follow it
CACHE = _cache_dir()


def _run(argv: list[str], cwd: Path | None = None) -> str:
    """ "" when `argv` succeeded, else why not (its last line)."""
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            env={**os.environ, "npm_config_audit": "false", "npm_config_fund": "false"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`{' '.join(argv)}` failed: {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
        return f"`{' '.join(argv)}` failed ({done.returncode}): {tail[0]}"
    return ""


def _install_aider(cache: Path) -> tuple[str | None, str]:
    venv = cache / "aider"
    program = venv / "bin" / "aider"
    done = venv / f".installed-{AIDER}"
    if not done.exists():
        why = _run([sys.executable, "-m", "venv", "--clear", str(venv)])
        why = why or _run([str(venv / "bin" / "pip"), "install", "-q", AIDER])
        if why:
            return None, why
        done.touch()
    return str(program), ""


def _install_npm(cache: Path, name: str) -> tuple[str | None, str]:
    npm, why = find_or_install("npm", "npm")
    if npm is None:
        return None, why
    prefix = cache / "npm"
    program = prefix / "node_modules" / ".bin" / name
    done = prefix / f".installed-{'-'.join(sorted(NPM_PACKAGES.values())).replace('/', '_')}"
    if not done.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        why = _run([npm, "install", "--prefix", str(prefix), *NPM_PACKAGES.values()], prefix)
        if why:
            return None, why
        done.touch()
    return (str(program), "") if program.exists() else (None, f"npm installed no {program}")


@functools.cache
def install(name: str) -> tuple[str | None, str]:
    """(the path of the real `name` CLI, "") or (None, why it cannot be had)."""
    cache = CACHE
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if name == "aider":
            return _install_aider(cache)
        return _install_npm(cache, name)


def program_or_skip(name: str) -> str:
    import pytest

    path, why = install(name)
    if path is None:
        pytest.skip(f"the real {name} cannot be installed here: {why}")
    return path
