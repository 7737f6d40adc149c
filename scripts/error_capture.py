#!/usr/bin/env python3
"""Capture a failure as an incident bundle; prints its id. Same options as `incidents capture`."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src"))

from incidents.cli import main

sys.exit(main(["capture", *sys.argv[1:]]))
