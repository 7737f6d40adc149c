"""The MCP tests' incident: one of ws/f.py (a syntax error) waiting for an agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import BROKEN, Cli, capture, use_config
from tests.mcp.test_server import CONFIG


@pytest.fixture
def waiting(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An incident of ws/f.py (a syntax error) waiting for an agent (aider = handoff)."""
    use_config(tmp_path, monkeypatch, CONFIG)
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, message="f.py broken", ws=ws, target="f.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "(AWAIT_HANDOFF)" in r.out, r.out + r.err
    return incident_id
