"""starlette and uvicorn load only when `incidents serve` runs: not on capture's path (see
tests/test_capture.py), not when the CLI registers every command, not for `status`."""

from __future__ import annotations

import subprocess
import sys

SERVER_MODULES = ("starlette", "uvicorn", "incidents.serve")


def test_registering_every_command_imports_no_server_module() -> None:
    code = (
        "import sys\n"
        "from incidents.cli import build_app, main\n"
        "build_app()\n"
        "main(['status'])\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {SERVER_MODULES!r} "
        f"or m.startswith('incidents.serve')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_serve_command_is_registered_with_help() -> None:
    from incidents.cli import COMMAND_HOMES, COMMAND_MODULES

    assert "incidents.commands.serve" in COMMAND_MODULES
    assert COMMAND_HOMES["serve"] == "incidents.commands.serve"
