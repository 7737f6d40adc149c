"""With no fixer program installed (the machine where agent skills are the fixers), a code
incident waits for an agent instead of escalating at once, for `[handoff] wait_s`, and
then escalates saying that nobody took it. Other classes are never handed to an agent."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import Cli, capture, ctx_of, incidents, use_config

BROKEN = "def add(a, b):\n    return a + b + offset\n"  # F821: no autofix mends it
RUFF = '[checks]\ntools = ["ruff"]\n'


def lint_failure(cli: Cli, tmp_path: Path, failure_class: str = "code") -> str:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    extra = ("--failure-class", failure_class)
    return capture(cli, *extra, ws=ws, target="calc.py", content=BROKEN)


def reason(root: Root, incident_id: str) -> str:
    meta = json.loads((root.bucket("escalated") / incident_id / "metadata.json").read_text())
    return str(meta["reason"])


def test_a_code_incident_waits_for_an_agent_when_no_fixer_is_installed(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, RUFF)  # the tiers as they come: auto, none installed
    incident_id = lint_failure(cli, tmp_path)
    r = cli("drive", incident_id)
    assert r.code == 0 and "(AWAIT_HANDOFF)" in r.out, r.out
    ctx = ctx_of(root, incident_id)
    assert ctx.waiting_for_input and ctx.handoff_agent == "aider"
    assert ctx.handoff_deadline is not None
    assert 86000 < ctx.handoff_deadline.timestamp() - time.time() <= 86400  # a day
    item = cli("next", "--json").json()
    assert item["incident_id"] == incident_id and item["files"] == ["calc.py"]


def test_a_hand_off_nobody_takes_escalates_at_its_deadline_saying_so(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, RUFF + "[handoff]\nwait_s = 0.5\n")
    incident_id = lint_failure(cli, tmp_path)
    assert "(AWAIT_HANDOFF)" in cli("drive", incident_id).out
    deadline = ctx_of(root, incident_id).handoff_deadline
    assert deadline is not None
    time.sleep(max(0.0, deadline.timestamp() - time.time()) + 0.1)
    r = cli("drive", incident_id)
    assert r.code == 0 and (root.bucket("escalated") / incident_id).is_dir(), r.out
    assert "no agent submitted a fix for aider by" in reason(root, incident_id)
    assert "[handoff] wait_s" in reason(root, incident_id)


def test_with_no_wait_it_escalates_at_once(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: `wait_s = 0` is the ladder without a hand-off."""
    use_config(tmp_path, monkeypatch, RUFF + "[handoff]\nwait_s = 0\n")
    incident_id = lint_failure(cli, tmp_path)
    assert cli("drive", incident_id).code == 0
    assert "no further fixer tier enabled" in reason(root, incident_id)


@pytest.mark.parametrize("failure_class", ["env", "transient", "never_retry", "unknown"])
def test_only_code_incidents_wait_for_an_agent(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure_class: str
) -> None:
    use_config(tmp_path, monkeypatch, RUFF)
    incident_id = lint_failure(cli, tmp_path, failure_class)
    cli("drive", incident_id)
    ctx = ctx_of(root, incident_id)
    assert not ctx.waiting_for_input and ctx.tier_modes == {}
    assert cli("next", "--json").json()["incident_id"] is None


def test_the_watcher_escalates_a_hand_off_past_its_deadline(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same through `incidents watch`: a waiting incident is looked at again on each
    pass, and the pass after its deadline escalates it (`stable_s = 0`: the second pass
    need not wait for the folder the first one wrote to settle)."""
    use_config(tmp_path, monkeypatch, RUFF + "[handoff]\nwait_s = 0.5\n[watch]\nstable_s = 0\n")
    incident_id = lint_failure(cli, tmp_path)
    first = incidents("watch", "--once")
    assert first.returncode == 0, first.stderr
    deadline = ctx_of(root, incident_id).handoff_deadline
    assert deadline is not None and (root.inbox / incident_id).is_dir()
    time.sleep(max(0.0, deadline.timestamp() - time.time()) + 0.1)
    second = incidents("watch", "--once")
    assert second.returncode == 0, second.stderr
    assert (root.bucket("escalated") / incident_id).is_dir(), first.stderr + second.stderr
    assert "[handoff] wait_s" in reason(root, incident_id)
