"""Debian packages a test needs, installed when missing (as root, with apt-get, as CI runs),
or the reason they cannot be: the test then skips with that reason."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from incidents.fixers.sandbox import Probe

APT_TIMEOUT_S = 900


@functools.cache
def find_or_install(package: str, *programs: str) -> tuple[str | None, str]:
    """(path of the first of `programs` found, "") or (None, why it is not available),
    installing `package` when none is on PATH."""

    def found() -> str | None:
        return next((p for p in map(shutil.which, programs) if p), None)

    if (path := found()) is not None:
        return path, ""
    why = install(package)
    if why:
        return None, why
    path = found()
    return (path, "") if path else (None, f"apt-get installed {package} but it is not on PATH")


@functools.cache
def install(package: str) -> str:
    """Install `package` with apt-get ("" when done, else why not). pytest-xdist's workers
    take turns (a lock file), so two never race for dpkg's lock and one of them skips."""
    import fcntl

    apt = shutil.which("apt-get")
    if apt is None:
        return f"{package} is not installed and there is no apt-get to install it"
    if os.geteuid() != 0:
        return f"{package} is not installed and installing it needs root (apt-get)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with open("/tmp/incidents-tests-apt.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        for argv in ([apt, "update"], [apt, "install", "-y", "--no-install-recommends", package]):
            try:
                done = subprocess.run(
                    argv, env=env, capture_output=True, text=True, timeout=APT_TIMEOUT_S
                )
            except subprocess.TimeoutExpired:
                return f"`{' '.join(argv)}` timed out after {APT_TIMEOUT_S}s"
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
                return f"`{' '.join(argv)}` failed ({done.returncode}): {tail[0]}"
    return ""


def bubblewrap_or_skip() -> Probe:
    """A bubblewrap that works here (installed first when missing), or the test skips."""
    import pytest

    from incidents.fixers import sandbox

    path, why = find_or_install("bubblewrap", "bwrap")
    if path is None:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    found = sandbox.probe()
    if not found.ok:
        pytest.skip(f"bubblewrap cannot run here: {found.reason}")
    return found
