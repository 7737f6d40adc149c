"""The status and archive scripts need the package's dependencies, which live in the
checkout's virtualenv: started by another interpreter (`python3 scripts/...`, or the
`#!/usr/bin/env python3` line), they run again with `.venv/bin/python`. Capture needs
nothing beyond the standard library and never comes here."""

import importlib.util
import os
import sys


def ensure(script: str) -> None:
    if importlib.util.find_spec("typer") is not None:
        return
    venv = os.path.join(os.path.dirname(os.path.abspath(script)), os.pardir, ".venv")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, os.path.abspath(script), *sys.argv[1:]])
