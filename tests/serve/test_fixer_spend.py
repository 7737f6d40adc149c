"""The AI fixers' spend summed per incident, group and day, in `status --json` and serve's
API, from the ledger each attempt appends to (a redone step counted once); the real CLIs'
own spend reports are tests/fixers/test_real_clis.py."""

from __future__ import annotations

from datetime import UTC, datetime

from incidents.fixers import spend
from incidents.layout import Root
from incidents.models import AIAttempt
from tests.helpers import Cli
from tests.serve.server import Server


def attempt(step: int, tier: str, tokens: int, cost: float | None) -> AIAttempt:
    return AIAttempt(
        attempt_number=1,
        agent=tier,
        input_error_report_id="r",
        step=step,
        model="m-1",
        input_tokens=tokens,
        output_tokens=10,
        cost_usd=cost,
    )


def test_today_sums_per_group_and_incident_and_a_redone_step_counts_once(
    cli: Cli, root: Root, server: Server
) -> None:
    root.ensure()
    now = datetime.now(UTC)
    spend.record(root.state, "inc_a", "grp_1", attempt(3, "aider", 1000, 0.01), now)
    spend.record(root.state, "inc_a", "grp_1", attempt(3, "aider", 1000, 0.01), now)  # redo
    spend.record(root.state, "inc_a", "grp_1", attempt(5, "codex", 500, None), now)
    spend.record(root.state, "inc_b", "grp_2", attempt(3, "claude", 200, 0.02), now)
    today = cli("status", "--json").json()["spend"]
    assert today["day"] == now.date().isoformat()
    assert (today["attempts"], today["input_tokens"], today["output_tokens"]) == (3, 1700, 30)
    assert today["cost_usd"] == 0.03
    assert today["by_group"]["grp_1"]["attempts"] == 2
    assert today["by_group"]["grp_1"]["cost_usd"] == 0.01
    assert today["by_incident"]["inc_b"]["input_tokens"] == 200
    assert server.call("GET", "/api/incidents").json()["spend"] == today


def test_a_day_without_spend_is_zero(cli: Cli, root: Root) -> None:
    root.ensure()
    today = cli("status", "--json").json()["spend"]
    assert (today["attempts"], today["cost_usd"], today["by_group"]) == (0, 0.0, {})
