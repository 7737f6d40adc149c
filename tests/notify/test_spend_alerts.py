"""A `[policy]` spend limit reached is alerted like a pause (`[notify]`, event
`spend_limit`): to a real webhook on loopback, once per limit until it changes — the daily
limit once per UTC day however many incidents it stops, a per-incident limit once per
incident — and again once its setting is changed and reached again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from incidents.fixers import spend
from incidents.layout import Root
from incidents.models import AIAttempt
from tests.helpers import BROKEN, FAST, Cli, capture, ctx_of, use_config
from tests.notify.receiver import Receiver
from tests.stand_ins import on_path, stand_in

AIDER_ONLY = (
    '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def configure(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    receiver: Receiver,
    policy: str,
    tiers: str = AIDER_ONLY,
) -> None:
    use_config(
        tmp_path,
        monkeypatch,
        FAST + tiers + "[policy]\n" + policy + "[notify]\nretry_base_s = 0.1\n"
        f'[[notify.webhooks]]\nurl = "{receiver.url("/hook")}"\n'
        f'[[notify.webhooks]]\nurl = "{receiver.url("/slack")}"\nformat = "slack"\n'
        '[[notify.webhooks]]\nurl = "' + receiver.url("/other") + '"\nevents = ["pause"]\n',
    )


def stopped(cli: Cli, root: Root, tmp_path: Path, name: str) -> str:
    """An incident driven into the spend limit: it waits, no tier ran."""
    ws = tmp_path / name
    ws.mkdir()
    incident_id = capture(cli, ws=ws, target="f.py", content=BROKEN, message=f"{name} broke")
    assert cli("drive", incident_id).code == 0
    ctx = ctx_of(root, incident_id)
    assert ctx.fixer_wait and "spend limit" in ctx.fixer_wait, ctx.fixer_wait
    return incident_id


def spent_today(root: Root, cost: float) -> None:
    """What earlier attempts spent today, in the root's ledger as a fixer call writes it."""
    root.ensure()
    attempt = AIAttempt(
        attempt_number=1, agent="aider", input_error_report_id="r", step=3, cost_usd=cost
    )
    spend.record(root.state, "inc_earlier", "grp_earlier", attempt, datetime.now(UTC))


def test_the_daily_limit_alerts_once_a_day_and_again_once_its_setting_changes(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    configure(tmp_path, monkeypatch, receiver, "max_cost_usd_per_day = 0.01\n")
    stand_in(on_path(tmp_path, monkeypatch), "aider", "raise SystemExit('must not run')")
    spent_today(root, 0.02)
    first = stopped(cli, root, tmp_path, "a")
    stopped(cli, root, tmp_path, "b")  # the same limit stops another group: no new alert
    assert cli("notify", "flush").code == 0
    [alert] = receiver.bodies("/hook")
    assert alert["event"] == "spend_limit" and alert["incident_id"] == first
    assert alert["setting"] == "max_cost_usd_per_day = 0.01"
    assert "$0.0200 spent today" in alert["reason"]
    [slack] = receiver.bodies("/slack")
    assert "max_cost_usd_per_day = 0.01" in slack["text"] and first in slack["text"]
    assert receiver.bodies("/other") == []  # a webhook that asked for pauses only
    # a person raises the limit, still below today's spend: the changed limit alerts again
    configure(tmp_path, monkeypatch, receiver, "max_cost_usd_per_day = 0.015\n")
    third = stopped(cli, root, tmp_path, "c")
    assert cli("notify", "flush").code == 0
    assert [b["incident_id"] for b in receiver.bodies("/hook")] == [first, third]
    assert receiver.bodies("/hook")[-1]["setting"] == "max_cost_usd_per_day = 0.015"


def test_under_the_limit_nothing_is_alerted(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    configure(tmp_path, monkeypatch, receiver, "max_cost_usd_per_day = 0.05\n")
    stand_in(on_path(tmp_path, monkeypatch), "aider", "pass  # changes nothing")
    spent_today(root, 0.02)
    ws = tmp_path / "a"
    ws.mkdir()
    incident_id = capture(cli, ws=ws, target="f.py", content=BROKEN)
    assert cli("drive", incident_id).code == 0
    assert len(ctx_of(root, incident_id).ai_attempts) >= 1  # the tier ran
    assert cli("notify", "flush").code == 0
    assert receiver.bodies("/hook")  # it escalated after its tries: that alerted
    assert all(b["event"] != "spend_limit" for b in receiver.bodies("/hook"))


def test_a_per_incident_limit_alerts_once_for_each_incident_it_stops(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    """aider reports what its call cost; the next tier of the incident is over its limit."""
    tiers = '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "on"\n[tiers.claude]\nmode = "off"\n'
    configure(tmp_path, monkeypatch, receiver, "max_cost_usd_per_incident = 0.001\n", tiers)
    said = "Tokens: 1.2k sent, 40 received. Cost: $0.0042 message, $0.0042 session."
    stand_in(on_path(tmp_path, monkeypatch), "aider", f"print({said!r})  # changes nothing")
    stand_in(on_path(tmp_path, monkeypatch), "codex", "raise SystemExit('must not run')")
    a = stopped(cli, root, tmp_path, "a")
    b = stopped(cli, root, tmp_path, "b")
    assert len(ctx_of(root, a).ai_attempts) == 1
    assert cli("notify", "flush").code == 0
    alerts = receiver.bodies("/hook")
    assert sorted(x["incident_id"] for x in alerts) == sorted([a, b])
    assert {x["setting"] for x in alerts} == {"max_cost_usd_per_incident = 0.001"}
