"""The hand-off tests' incident: one of ws/f.py (a syntax error) waiting for an agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import BROKEN, Cli, capture, use_config

CONFIG = (
    '[checks]\ntools = ["ruff"]\n[tiers.aider]\nmode = "handoff"\n'
    '[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)


@pytest.fixture
def waiting(cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    use_config(tmp_path, monkeypatch, CONFIG)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "other.py").write_text("y = 1\n")
    incident_id = capture(cli, message="f.py broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "S0_BASELINE_CHECK -> S1_AIDER_FIX (AWAIT_HANDOFF)" in r.out, r.out + r.err
    assert "AI action required: yes" in r.out
    return incident_id
