#!/usr/bin/env python3
"""Show open incidents (or one, or all). Same options as `incidents status`."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src"))

from _venv import ensure

ensure(__file__)

from incidents.cli import main  # noqa: E402  (after ensure: it may re-run us in .venv)

sys.exit(main(["status", *sys.argv[1:]]))
