"""A code incident waits for an agent only because no fixer program is installed. Once one
is installed, the next pickup runs it: the ladder is read again at every pickup, and a
wait that only stood in for a missing program does not hold the incident for a day."""

from __future__ import annotations

from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import Cli, capture, ctx_of, use_config
from tests.stand_ins import on_path, stand_in

BROKEN = "def add(a, b):\n    return a + b + offset\n"  # F821: no autofix mends it
FIXED = "def add(a, b):\n    return a + b\n"
FIXER = f"pathlib.Path(sys.argv[-1]).write_text({FIXED!r}); print('fixed')"
RUFF = '[checks]\ntools = ["ruff"]\n'


def waiting(cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: str) -> str:
    use_config(tmp_path, monkeypatch, cfg)
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, "--failure-class", "code", ws=ws, target="calc.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert "(AWAIT_HANDOFF)" in r.out, r.out + r.err
    assert ctx_of(root, incident_id).waiting_for_input
    return incident_id


def test_a_fixer_installed_during_the_wait_is_run_at_the_next_pickup(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    incident_id = waiting(cli, root, tmp_path, monkeypatch, RUFF)  # the tiers as they come
    stand_in(on_path(tmp_path, monkeypatch), "aider", FIXER)
    r = cli("drive", incident_id)
    assert r.code == 0 and (root.bucket("resolved") / incident_id).is_dir(), r.out + r.err
    ctx = ctx_of(root, incident_id)
    assert [a.agent for a in ctx.ai_attempts] == ["aider"] and not ctx.ai_attempts[0].handoff
    assert ctx.outcome == "fixed" and not ctx.waiting_for_input
    assert (tmp_path / "ws" / "calc.py").read_text() == FIXED


def test_a_tier_set_to_hand_off_keeps_waiting_though_its_program_is_installed(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: a hand-off a person configured is what they asked for."""
    cfg = RUFF + '[tiers.aider]\nmode = "handoff"\n'
    incident_id = waiting(cli, root, tmp_path, monkeypatch, cfg)
    stand_in(on_path(tmp_path, monkeypatch), "aider", FIXER)
    r = cli("drive", incident_id)
    assert r.code == 0 and "(WAIT_INPUT)" in r.out, r.out + r.err
    ctx = ctx_of(root, incident_id)
    assert ctx.waiting_for_input and ctx.ai_attempts == []
    assert (tmp_path / "ws" / "calc.py").read_text() == BROKEN
