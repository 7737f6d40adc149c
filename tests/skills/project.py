"""A small real project whose lint step fails: the real ruff's real finding, captured as
an incident the skills are played against."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import Cli, capture
from tests.skills.play import BIN

# an unused import (fixable) and an undefined name (no autofix: an agent must mend it)
BROKEN = "import os\n\n\ndef add(a, b):\n    return a + b + offset\n"
FIXED = "def add(a, b):\n    return a + b\n"
# ruff only (fast); the first AI tier waits for an agent, the others are off
HANDOFF = (
    '[checks]\ntools = ["ruff"]\n[tiers.aider]\nmode = "handoff"\n'
    '[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)


def capture_lint_failure(cli: Cli, ws: Path, name: str) -> str:
    """Run the real `ruff check` on `ws/name` (BROKEN), capture its failure with the log
    and exit code, as a pipeline's lint step would; returns the incident id."""
    ws.mkdir(exist_ok=True)
    (ws / name).write_text(BROKEN)
    ruff = subprocess.run(
        [str(BIN / "ruff"), "check", "--no-cache", name], cwd=ws, capture_output=True, text=True
    )
    assert ruff.returncode == 1 and "F821" in ruff.stdout, ruff.stdout + ruff.stderr
    log = ws.parent / f"{name}.ruff.log"
    log.write_text(ruff.stdout + ruff.stderr)
    extra = ("--log-file", str(log), "--exit-code", str(ruff.returncode))
    return capture(cli, *extra, message=f"ruff check {name} failed", ws=ws, target=name)
