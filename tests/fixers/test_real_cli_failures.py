"""A real CLI's API failure is read from its own output, not guessed: the scripted model
server answers every request with 429, 529/503 or 401, or never answers, and the attempt
records the fixer's own error code. A rate limit or an overloaded API spends no budget and
calls no other tier (the incident waits for the same tier, saying why); a 401 escalates as
infrastructure naming the tier and its settings, and the next incident does not call the
tier at all; a hang is a TIMEOUT within the tier's timeout, its reason without the prompt."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.fixers.model_server import ModelServer
from tests.fixers.real import UNDEFINED, configure
from tests.helpers import Cli, capture, ctx_of

PATHS = {"aider": "/chat/completions", "codex": "/responses", "claude": "/messages"}
NEXT = {"aider": "codex", "codex": "claude", "claude": None}
OVERLOADED = {"aider": 503, "codex": 503, "claude": 529}
# A decision is read from the CLI's output before the tier's timeout_s (configure's 120 s:
# the outcome is the API's code, never TIMEOUT), and after few requests: the CLIs' own
# retries are bounded (claude 2, codex 0 here) and aider, whose own loop retries for over a
# minute (some ten requests and more), is stopped at its first error line. A count, not a
# time: it holds on a loaded machine.
DECIDED_WITHIN_S = 120.0
MAX_REQUESTS = 4
HANG_TIMEOUT_S = 6.0


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s


def drive(cli: Cli, tmp_path: Path, tier: str) -> tuple[str, float]:
    ws = tmp_path / "project" / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    incident_id = capture(cli, ws=ws, target="names.py", content=UNDEFINED)
    t0 = time.monotonic()
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    return incident_id, time.monotonic() - t0


@pytest.mark.parametrize("status", [429, "overloaded"])
@pytest.mark.parametrize("tier", ["aider", "codex", "claude"])
def test_a_rate_limit_or_overload_waits_for_the_same_tier_and_spends_nothing(
    cli: Cli,
    root: Root,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    server: ModelServer,
    tier: str,
    status: int | str,
) -> None:
    code = 429 if status == 429 else OVERLOADED[tier]
    nxt = NEXT[tier]
    configure(tmp_path, monkeypatch, bin_dir, server, tier, "none", also=(nxt,) if nxt else ())
    server.mode = (code, {"retry-after": "1"})
    incident_id, took = drive(cli, tmp_path, tier)
    ctx = ctx_of(root, incident_id)
    want = "RATE_LIMIT" if code == 429 else "OVERLOADED"
    [refused] = ctx.unbudgeted_attempts
    assert refused.agent == tier and refused.error_code == want, refused
    assert ctx.ai_attempts == [] and ctx.signature_attempts_used == 0  # no budget spent
    assert ctx.current_state.value.startswith(f"S{refused.attempt_number}_")  # its FIX state
    assert (
        ctx.fixer_wait and f"{tier} cools down until" in ctx.fixer_wait and want in ctx.fixer_wait
    )
    assert ctx.not_before is not None and ctx.final_status is None
    assert (root.inbox / incident_id).is_dir()  # waiting, not escalated
    if nxt:
        assert not server.posts(PATHS[nxt]), "the next tier was called on the same limit"
    assert 1 <= len(server.posts(PATHS[tier])) <= MAX_REQUESTS, len(server.posts(PATHS[tier]))
    assert took < DECIDED_WITHIN_S, took
    # the next incident reaching the tier while it cools down does not call it at all
    before = len(server.requests)
    second, _ = drive(cli, tmp_path, tier)
    assert len(server.requests) == before
    assert ctx_of(root, second).fixer_wait and ctx_of(root, second).unbudgeted_attempts == []


@pytest.mark.parametrize("tier", ["aider", "codex", "claude"])
def test_an_authentication_failure_escalates_naming_the_tier_and_disables_it(
    cli: Cli,
    root: Root,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    server: ModelServer,
    tier: str,
) -> None:
    configure(tmp_path, monkeypatch, bin_dir, server, tier, "none")
    server.mode = (401, {})
    incident_id, took = drive(cli, tmp_path, tier)
    ctx = ctx_of(root, incident_id)
    [refused] = ctx.unbudgeted_attempts
    assert refused.error_code == "AUTH" and ctx.ai_attempts == []
    assert ctx.current_state.value == "S_ERROR_INFRA"
    reason = ctx.escalation_reason or ""
    assert f"{tier}: AUTH" in reason and f"the {tier} tier is disabled" in reason, reason
    key = "ANTHROPIC_API_KEY" if tier == "claude" else "OPENAI_API_KEY"
    assert key in reason and "not-a-key" not in reason  # the setting's name, never its value
    assert took < DECIDED_WITHIN_S and len(server.requests) <= MAX_REQUESTS, took
    # disabled: the next incident escalates at once, without a call
    before = len(server.requests)
    second, _ = drive(cli, tmp_path, tier)
    assert len(server.requests) == before
    assert ctx_of(root, second).current_state.value == "S_ERROR_INFRA"
    # a new key is a new configuration: the tier is called again
    monkeypatch.setenv(key, "sk-another-test-key")
    drive(cli, tmp_path, tier)
    assert len(server.requests) > before


@pytest.mark.parametrize("tier", ["aider", "codex", "claude"])
def test_a_hang_is_a_timeout_within_the_tiers_limit_and_its_reason_has_no_prompt(
    cli: Cli,
    root: Root,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    server: ModelServer,
    tier: str,
) -> None:
    configure(tmp_path, monkeypatch, bin_dir, server, tier, "none", timeout_s=HANG_TIMEOUT_S)
    server.mode = "hang"
    incident_id, took = drive(cli, tmp_path, tier)
    ctx = ctx_of(root, incident_id)
    [attempt] = ctx.ai_attempts
    assert attempt.error_code == "TIMEOUT" and ctx.current_state.value == "S_ERROR_INFRA"
    reason = ctx.escalation_reason or ""
    assert "TIMEOUT" in reason and "undefined_name" not in reason, reason
    assert "<finding" not in reason and "names.py failed its checks" not in reason
    assert took < HANG_TIMEOUT_S + 30, took
