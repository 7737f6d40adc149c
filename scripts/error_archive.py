#!/usr/bin/env python3
"""Close an incident into the archive. Same options as `incidents archive`."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src"))

from _venv import ensure

ensure(__file__)

from incidents.cli import main  # noqa: E402  (after ensure: it may re-run us in .venv)

sys.exit(main(["archive", *sys.argv[1:]]))
