"""Each default tier with the real program (aider-chat from PyPI, @openai/codex and
@anthropic-ai/claude-code from npm, tests/real_clis.py), on a fresh HOME, pointed at a
scripted model server on 127.0.0.1 that answers in its API's own format: a real fix of a
real ruff failure resolves the incident, under bubblewrap and in detection mode."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.debian import bubblewrap_or_skip
from tests.fixers.model_server import ModelServer
from tests.fixers.real import FIXED, UNDEFINED, configure, mode_of
from tests.helpers import Cli, capture, ctx_of

# (the CLI's folder or file in HOME it must be able to write, its mode once we made it)
STATE = {
    "aider": [(".aider", 0o700)],
    "codex": [(".codex", 0o700)],
    "claude": [(".claude", 0o700), (".claude.json", 0o600)],
}


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s


@pytest.mark.parametrize("mode", ["bwrap", "none"])
@pytest.mark.parametrize("tier", ["aider", "codex", "claude"])
def test_the_real_cli_fixes_the_incident(
    cli: Cli,
    root: Root,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    server: ModelServer,
    tier: str,
    mode: str,
) -> None:
    if mode == "bwrap":
        bubblewrap_or_skip()
    configure(tmp_path, monkeypatch, bin_dir, server, tier, mode)
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True)
    server.fix_path, server.fix_content, server.workdir = "names.py", FIXED, str(ws)
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    [attempt] = ctx_of(root, incident_id).ai_attempts
    assert (root.bucket("resolved") / incident_id).is_dir(), (
        attempt.notes,
        attempt.violations,
        r.out,
    )
    assert attempt.agent == tier and attempt.changed_files == ["names.py"]
    assert attempt.contained is (mode == "bwrap") and attempt.error_code is None
    assert (ws / "names.py").read_text() == FIXED
    assert server.posts(
        "/responses"
        if tier == "codex"
        else "/messages" if tier == "claude" else "/chat/completions"
    ), server.requests
    # a fresh HOME: what the CLI keeps there was made for it, private, before it ran
    home = Path(str(tmp_path / "home"))
    for name, bits in STATE[tier]:
        assert mode_of(home, name) == bits, name
    # no repository made in a workdir that had none, nothing else left behind
    assert not (ws / ".git").exists()
    assert attempt.input_tokens and attempt.output_tokens, attempt
    # what it spent: on the attempt, the incident, and today's sums per group and incident
    if tier != "codex":  # codex reports tokens, not money
        assert attempt.cost_usd and attempt.cost_usd > 0, attempt
    detail = cli("status", incident_id, "--json").json()
    assert detail["spend"]["input_tokens"] == attempt.input_tokens
    today = cli("status", "--all", "--json").json()["spend"]
    assert today["by_incident"][incident_id]["output_tokens"] == attempt.output_tokens
    assert sum(g["attempts"] for g in today["by_group"].values()) == 1


@pytest.mark.parametrize("action", ["wait", "escalate"])
def test_a_spend_limit_reached_runs_no_tier(
    cli: Cli,
    root: Root,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    server: ModelServer,
    action: str,
) -> None:
    text = configure(tmp_path, monkeypatch, bin_dir, server, "claude", "none")
    limit = f'[policy]\nmax_cost_usd_per_day = 0.001\nspend_limit = "{action}"\n'
    (tmp_path / "incidents.toml").write_text(limit + text)
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True)
    server.fix_path, server.fix_content, server.workdir = "names.py", FIXED, str(ws)
    first = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    assert cli("drive", first).code == 0
    assert (root.bucket("resolved") / first).is_dir()  # under the limit when it started
    calls = len(server.requests)
    second = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    assert cli("drive", second).code == 0
    assert len(server.requests) == calls  # no tier ran
    ctx = ctx_of(root, second)
    assert ctx.ai_attempts == [] and ctx.unbudgeted_attempts == []
    if action == "wait":
        assert ctx.fixer_wait and "max_cost_usd_per_day = 0.001" in ctx.fixer_wait
        assert ctx.not_before is not None and (root.inbox / second).is_dir()
    else:
        assert ctx.current_state.value == "S_ERROR_INFRA"
        assert "max_cost_usd_per_day" in (ctx.escalation_reason or "")


def test_the_review_page_shows_what_an_attempt_spent(
    cli: Cli,
    root: Root,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    server: ModelServer,
) -> None:
    """The real claude answers without editing: no progress, escalated; its card says what
    the attempt cost as claude reported it."""
    configure(tmp_path, monkeypatch, bin_dir, server, "claude", "none")
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True)
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    assert cli("drive", incident_id).code == 0
    [attempt] = ctx_of(root, incident_id).ai_attempts
    assert (root.bucket("escalated") / incident_id).is_dir()
    assert attempt.cost_usd and attempt.model == "claude-test"
    assert cli("review").code == 0
    page = html.unescape((root.path / "error_review" / "index.html").read_text())
    assert f"spent: claude-test, {attempt.input_tokens} tokens in" in page
    assert f"${attempt.cost_usd:.4f}" in page
