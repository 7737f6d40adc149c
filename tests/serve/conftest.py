"""A real server per test (`server`), on a real root with real incidents: captured through
the CLI and driven by the real step service (`escalated`: quarantined at the baseline)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import BROKEN, FAST, TIERS_OFF, Cli, capture, use_config
from tests.serve.server import Server, running


@pytest.fixture
def fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ruff only, no AI tier: a syntax error escalates in three ticks."""
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def escalate(cli: Cli, ws: Path, name: str = "bad.py") -> str:
    """A captured syntax error, driven by the step service until it is quarantined."""
    incident_id = capture(cli, ws=ws, target=name, content=BROKEN)
    r = cli("drive", incident_id)
    assert r.code == 0, r.out + r.err
    return incident_id


@pytest.fixture
def server(root: Root) -> Iterator[Server]:
    with running(root.path) as s:
        yield s
