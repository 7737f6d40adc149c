"""`status` says why an open incident is where it is, in text and JSON: waiting for an
agent, claimed by one until when, a retry not due yet, paused since when; every time in
its JSON is ISO 8601."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from incidents.layout import Root
from tests.handoff.conftest import waiting  # noqa: F401  (the fixture)
from tests.helpers import Cli, capture

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$")


def rows(cli: Cli) -> dict[str, dict[str, Any]]:
    r = cli("status", "--json")
    assert r.code == 0, r.err
    return {row["incident_id"]: row for row in r.json()["incidents"]}


def times_are_iso(doc: Any, key: str = "") -> None:
    """Every value under a key that names a time is an ISO 8601 string (or None)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            times_are_iso(v, k)
    elif isinstance(doc, list):
        for v in doc:
            times_are_iso(v, key)
    elif key.endswith(("_at", "_before", "since", "last_seen")) and doc is not None:
        assert isinstance(doc, str) and ISO.match(doc), (key, doc)


def test_waiting_then_claimed_says_who_and_until_when(cli: Cli, waiting: str) -> None:  # noqa: F811
    assert rows(cli)[waiting]["why"] == "waiting for an agent (incidents next)"
    assert "waiting for an agent" in cli("status").out
    assert cli("claim", waiting, "--agent", "skill-a", "--lease", "30m").code == 0
    row = rows(cli)[waiting]
    until = row["lease_expires_at"]
    assert ISO.match(until) and datetime.fromisoformat(until) > datetime.now().astimezone()
    assert row["why"] == f"claimed by skill-a until {until}"
    assert f"claimed by skill-a until {until}" in cli("status").out


def test_a_retry_says_when_and_its_time_is_iso(cli: Cli, root: Root, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "fetch.py").write_text("import sys\nsys.exit(1)\n")
    message = "Network timeout during receipt download: connection timed out"
    flaky = capture(cli, "--verify", "python fetch.py", ws=ws, step="download", message=message)
    for _ in range(3):  # plan, baseline check, then the wait
        assert cli("step", flaky).code == 0
    r = cli("status", "--json")
    [row] = r.json()["incidents"]
    assert isinstance(row["not_before"], str) and ISO.match(row["not_before"])
    assert row["why"] == f"retry at {row['not_before']}"
    times_are_iso(r.json())
    assert f"retry at {row['not_before']}" in cli("status").out


def test_paused_says_since_when(cli: Cli, root: Root) -> None:
    first = capture(cli, message="m")
    assert cli("pause", "--reason", "provider outage").code == 0
    doc = cli("status", "--json").json()
    since = doc["paused"]["since"]
    assert rows(cli)[first]["why"] == f"paused since {since}"
    assert f"paused since {since}" in cli("status").out
    assert cli("resume").code == 0  # positive control: nothing to wait on once resumed
    assert rows(cli)[first]["why"] is None
    assert "WHY" not in cli("status").out
