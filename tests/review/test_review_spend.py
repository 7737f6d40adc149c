"""The review page sums the AI fixers' spend: each incident's card its own attempts (as
`status ID --json` sums them), and a header per UTC day and per group from the root's
spend ledger (`incidents.fixers.spend`), which counts incidents still open too."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from incidents.fixers import spend
from incidents.layout import Root
from incidents.models import AIAttempt
from tests.helpers import BROKEN, FAST, Cli, capture, use_config
from tests.stand_ins import on_path, stand_in

AIDER_ONLY = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
SAID = "Tokens: 1.2k sent, 40 received. Cost: $0.0042 message, $0.0042 session."


def row(page: str, kind: str, key: str) -> str:
    found = re.search(rf'<tr data-{kind}="{re.escape(html.escape(key))}">(.*?)</tr>', page)
    assert found is not None, (kind, key)
    return html.unescape(found.group(1))


def test_the_page_sums_spend_per_incident_group_and_day(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, FAST + AIDER_ONLY)
    stand_in(on_path(tmp_path, monkeypatch), "aider", f"print({SAID!r})  # changes nothing")
    ws = tmp_path / "ws"
    ws.mkdir()
    escalated = capture(cli, ws=ws, target="f.py", content=BROKEN)
    assert cli("drive", escalated).code == 0  # aider's one try changed nothing: escalated
    assert (root.bucket("escalated") / escalated).is_dir()
    group = cli("status", escalated, "--json").json()
    own = group["spend"]
    assert own["attempts"] == 1 and own["cost_usd"] == 0.0042
    # an open incident of another group spent too, today and yesterday
    now = datetime.now(UTC)
    attempt = AIAttempt(
        attempt_number=1,
        agent="codex",
        input_error_report_id="r",
        step=3,
        cost_usd=0.5,
        input_tokens=7,
        output_tokens=3,
    )
    spend.record(root.state, "inc_open", "grp_open", attempt, now)
    spend.record(root.state, "inc_open", "grp_open", attempt, now - timedelta(days=1))
    assert cli("review").code == 0
    page = (root.path / "error_review" / "index.html").read_text()
    card = page[page.index(f'<article class="card" id="{escalated}"') :]
    card = html.unescape(card[: card.index("</article>")])
    assert "AI spend: 1 attempt(s), 1200 tokens in, 40 out, $0.0042" in card
    today, yesterday = now.date().isoformat(), (now - timedelta(days=1)).date().isoformat()
    assert "2 attempt(s), 1207 tokens in, 43 out, $0.5042" in row(page, "day", today)
    assert "1 attempt(s), 7 tokens in, 3 out, $0.5000" in row(page, "day", yesterday)
    assert "2 attempt(s), 14 tokens in, 6 out, $1.0000" in row(page, "group", "grp_open")
    ledger = spend.day(root.state, now)["by_group"]
    [mine] = [g for g in ledger if g != "grp_open"]
    assert "$0.0042" in row(page, "group", mine)


def test_a_root_without_spend_shows_no_sums(cli: Cli, root: Root) -> None:
    escalated = capture(cli, message="deploy failed", step="deploy")
    assert cli("archive", escalated, "--escalated", "--reason", "a person must look").code == 0
    assert cli("review").code == 0
    page = (root.path / "error_review" / "index.html").read_text()
    assert f'id="{escalated}"' in page
    assert "AI spend" not in page and 'id="spend"' not in page
