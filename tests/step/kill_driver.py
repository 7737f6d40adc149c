"""Runs `incidents ARGS` in this process and SIGKILLs it at a chosen instant: just before
the Nth replacement of a `state.json` (its temp file written and fsynced, the old file in
place) or, with `after`, just after it (renamed, its folder not fsynced yet).

    python kill_driver.py N before|after ARGS...

An audit hook sees every `os.replace` (audit event `os.rename`); exits as `incidents`
does when the run has fewer than N such replacements.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> int:
    target, when, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    seen = 0
    armed = False

    def hook(event: str, hook_args: tuple[object, ...]) -> None:
        nonlocal seen, armed
        if armed and event in ("open", "os.rename", "os.link", "os.remove"):
            os.kill(os.getpid(), signal.SIGKILL)  # the first file operation after it
        if event != "os.rename":
            return
        dst = hook_args[1]
        name = os.fspath(dst) if isinstance(dst, str | os.PathLike) else ""
        if isinstance(name, str) and os.path.basename(name) == "state.json":
            seen += 1
            if seen == target:
                if when == "before":
                    os.kill(os.getpid(), signal.SIGKILL)
                armed = True

    sys.addaudithook(hook)
    from incidents.cli import main as cli

    return cli(args)


if __name__ == "__main__":
    sys.exit(main())
