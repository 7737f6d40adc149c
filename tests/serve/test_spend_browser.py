"""The live dashboard shows the AI fixers' spend, in a real headless Chromium: today's total
and each group's (serve's `/api/incidents` `spend`, the root's ledger), an inbox row's
today, and an escalated card's whole spend (its attempts, as `status ID --json` sums
them)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from incidents.fixers import spend
from incidents.layout import Root
from incidents.models import AIAttempt
from tests.helpers import BROKEN, FAST, Cli, capture, use_config
from tests.review.chromium import Browser
from tests.serve.server import running
from tests.serve.test_browser import present, wait_for
from tests.stand_ins import on_path, stand_in

AIDER_ONLY = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
SAID = "Tokens: 1.2k sent, 40 received. Cost: $0.0042 message, $0.0042 session."


def text(browser: Browser, selector: str) -> str:
    found: str = browser.js(
        f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''"
    )
    return found


def test_the_dashboard_shows_spend_today_per_group_and_per_incident(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser
) -> None:
    use_config(tmp_path, monkeypatch, FAST + AIDER_ONLY)
    stand_in(on_path(tmp_path, monkeypatch), "aider", f"print({SAID!r})  # changes nothing")
    ws = tmp_path / "ws"
    ws.mkdir()
    escalated = capture(cli, ws=ws, target="f.py", content=BROKEN)
    assert cli("drive", escalated).code == 0  # aider's one try changed nothing: escalated
    assert (root.bucket("escalated") / escalated).is_dir()
    waiting = capture(cli, step="deploy", message="deploy failed")  # open, not driven
    attempt = AIAttempt(
        attempt_number=1,
        agent="codex",
        input_error_report_id="r",
        step=3,
        cost_usd=0.5,
        input_tokens=7,
        output_tokens=3,
    )
    spend.record(root.state, waiting, "grp_deploy", attempt, datetime.now(UTC))
    with running(root.path) as server:
        today = server.call("GET", "/api/incidents").json()["spend"]
        assert today["attempts"] == 2 and today["cost_usd"] == 0.5042
        browser.goto(f"http://{server.host}/#key={server.token}")
        wait_for(lambda: present(browser, ".card .meta.spend:not(:empty)"), "the card's spend")
        total = text(browser, "#spend .spend-total")
        assert total == "2 AI attempt(s), 1207 tokens in, 43 out, $0.5042", total
        group = text(browser, '#spend li[data-group="grp_deploy"]')
        assert group == "grp_deploy: 1 AI attempt(s), 7 tokens in, 3 out, $0.5000", group
        row = text(browser, f'#inbox tr[data-id="{waiting}"] td.spend')
        assert row == "1 AI attempt(s), 7 tokens in, 3 out, $0.5000", row
        card = text(browser, f'.card[data-id="{escalated}"] .meta.spend')
        assert card == "AI spend: 1 AI attempt(s), 1200 tokens in, 40 out, $0.0042", card


def test_a_day_without_spend_says_none(root: Root, cli: Cli, browser: Browser) -> None:
    waiting = capture(cli, step="deploy", message="deploy failed")
    with running(root.path) as server:
        browser.goto(f"http://{server.host}/#key={server.token}")
        wait_for(lambda: present(browser, f'#inbox tr[data-id="{waiting}"]'), "the inbox row")
        assert text(browser, "#spend .spend-total") == "none"
        assert not present(browser, "#spend li")
        assert text(browser, f'#inbox tr[data-id="{waiting}"] td.spend') == "-"
