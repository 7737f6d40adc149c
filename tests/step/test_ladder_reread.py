"""The ladder is read again at every pickup: a fixer installed after an incident escalated
for want of one is used once a person requeues it, and metadata.json and state.json say
the same about which tiers it had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import Cli, capture, ctx_of, use_config
from tests.stand_ins import on_path, stand_in

# an undefined name: no autofix mends it, only a fixer can
BROKEN = "def add(a, b):\n    return a + b + offset\n"
FIXED = "def add(a, b):\n    return a + b\n"
# ruff only (fast); no hand-off wait: with no fixer the incident escalates at once
CONFIG = '[checks]\ntools = ["ruff"]\n'
# the stand-in for aider: writes the fix into the files it is given (the last arguments)
FIXER = f"pathlib.Path(sys.argv[-1]).write_text({FIXED!r}); print('fixed')"


def metadata(root: Root, incident_id: str) -> dict[str, object]:
    doc: dict[str, object] = json.loads(
        (root.bucket("escalated") / incident_id / "metadata.json").read_text()
    )
    return doc


@pytest.fixture
def escalated(cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A lint failure escalated because no fixer program is installed."""
    use_config(tmp_path, monkeypatch, CONFIG)
    ws = tmp_path / "ws"
    ws.mkdir()
    incident_id = capture(cli, ws=ws, target="calc.py", content=BROKEN)
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert "no further fixer tier enabled" in metadata(root, incident_id)["reason"]  # type: ignore[operator]
    assert metadata(root, incident_id)["enabled_tiers"] == []
    assert not ctx_of(root, incident_id).enable_aider
    return incident_id


def requeue(cli: Cli, incident_id: str) -> None:
    r = cli("resolve-escalation", incident_id, "--requeue", "--guidance", "aider is installed")
    assert r.code == 0, r.err


def test_a_fixer_installed_after_the_escalation_is_used_at_the_requeue(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, escalated: str
) -> None:
    stand_in(on_path(tmp_path, monkeypatch), "aider", FIXER)
    requeue(cli, escalated)
    r = cli("drive", escalated)
    assert r.code == 0, r.err
    assert (root.bucket("resolved") / escalated).is_dir(), r.out
    ctx = ctx_of(root, escalated)
    assert ctx.enable_aider and [a.agent for a in ctx.ai_attempts] == ["aider"]
    assert ctx.outcome == "fixed"
    assert (tmp_path / "ws" / "calc.py").read_text() == FIXED


def test_metadata_and_state_agree_on_the_tiers_read_again(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, escalated: str
) -> None:
    # installed, but it mends nothing: the incident escalates again, after aider's pass
    stand_in(on_path(tmp_path, monkeypatch), "aider", "print('looked at it')")
    requeue(cli, escalated)
    assert cli("drive", escalated).code == 0
    meta, ctx = metadata(root, escalated), ctx_of(root, escalated)
    assert [a.agent for a in ctx.ai_attempts] == ["aider"]
    assert meta["enabled_tiers"] == ["aider"]
    assert (ctx.enable_aider, ctx.enable_codex, ctx.enable_claude) == (True, False, False)
    assert "no further fixer tier enabled" in str(meta["reason"])


def test_without_a_new_fixer_the_requeue_escalates_again(
    cli: Cli, root: Root, escalated: str
) -> None:
    """The control: nothing was installed, so the second climb ends as the first did."""
    requeue(cli, escalated)
    assert cli("drive", escalated).code == 0
    meta, ctx = metadata(root, escalated), ctx_of(root, escalated)
    assert ctx.ai_attempts == [] and meta["enabled_tiers"] == []
    assert "no further fixer tier enabled" in str(meta["reason"])
