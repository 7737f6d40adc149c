"""Exactly once across hosts: many incidents in one shared inbox, two watchers standing
for two hosts with leases as rows of a real PostgreSQL (`[watch] leases = "postgres"`),
SIGKILLed at random and restarted; none lost, none worked twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from incidents.layout import Root
from incidents.lease_rows import MACHINE_ENV
from incidents.mirror import connect, target
from tests.watch.helpers import FAST_TOML, capture_step, places, wait_until, workspace

INCIDENTS = 150
KILLS = 30


def _toml(url: str) -> str:
    policy = FAST_TOML.replace("[policy]\n", "[policy]\nlease_ttl_s = 5.0\n")
    return policy + f'leases = "postgres"\n\n[mirror]\nurl = "{url}"\nhost = "shared-inbox"\n'


def _watcher(tmp: Path, machine: str) -> subprocess.Popen[str]:
    """A watcher of the shared root, as if on `machine` (its own working folder)."""
    cwd = tmp / machine
    cwd.mkdir(exist_ok=True)
    # its own machine name: a lease of the other one is taken over only once it expired
    env = {**os.environ, "INCIDENTS_ROOT": str(tmp / "reports"),
           "INCIDENTS_CONFIG": str(tmp / "incidents.toml"), MACHINE_ENV: machine}  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "incidents", "watch", "--log-json", "--workers", "2",
         "--poll", "0.5"],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip


def _step_records(root: Root, incident_id: str) -> list[tuple[str, str]]:
    """(step, label) of every step attempt the incident's events.jsonl records, once per
    key (a line written again with its key after a kill is the same record: the mirror
    and every reader take the first line of a key)."""
    _bucket, folder = root.locate(incident_id)
    found: dict[str, tuple[str, str]] = {}
    for line in (folder / "events.jsonl").read_text().splitlines():
        doc = json.loads(line)
        if doc.get("kind") == "step_attempt":
            found.setdefault(str(doc["key"]), (str(doc.get("step_name")), str(doc.get("label"))))
    return list(found.values())


def _kept_by_the_living(root: Root) -> list[tuple[str, int]]:
    """(incident, pid) of the lease rows still standing whose process is alive."""
    conn = connect(root.db_path)
    try:
        rows = conn.execute(
            "SELECT incident_id, pid FROM leases WHERE generation > 0 "
            "AND expires_at > extract(epoch FROM clock_timestamp())"
        ).fetchall()
    finally:
        conn.close()
    return [(str(i), int(pid)) for i, pid in rows if _alive(int(pid))]


def _alive(pid: int) -> bool:
    """A running process (a killed worker nobody reaped yet, a zombie, is not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
def test_two_hosts_over_one_inbox_work_each_incident_exactly_once(
    tmp_path: Path, pg_url: str
) -> None:
    workspace(tmp_path, _toml(pg_url))
    root = Root(tmp_path / "reports")
    target.bind(root.path, pg_url, "shared-inbox", leases="postgres")
    ids = [capture_step(tmp_path, f"k{i}", dirty=i % 3 == 0) for i in range(INCIDENTS)]
    rng = random.Random(19)
    watchers = {m: _watcher(tmp_path, m) for m in ("host-a", "host-b")}
    in_flight = 0
    for _ in range(KILLS):
        time.sleep(rng.uniform(0.3, 1.0))
        in_flight += len(places(root)) > sum(
            p[0].startswith("error_archive") for p in places(root).values()
        )
        machine = rng.choice(sorted(watchers))
        watchers[machine].send_signal(signal.SIGKILL)
        watchers[machine].wait()
        watchers[machine] = _watcher(tmp_path, machine)
    assert in_flight >= KILLS // 2, "most kills must come while incidents are open"
    assert wait_until(
        lambda: all(p[0].startswith("error_archive") for p in places(root).values())
        and len(places(root)) == INCIDENTS,
        240,
        step=0.5,
    ), places(root)
    # every lease still standing once all are closed was left by a SIGKILL (its process is
    # gone): a live watcher releases its lease at the close. Looked at before the watchers
    # stop and well inside lease_ttl_s (5 s), so a lease a live process kept is still seen
    assert wait_until(lambda: not _kept_by_the_living(root), 2.0, step=0.1), _kept_by_the_living(
        root
    )
    for proc in watchers.values():
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    where = places(root)
    assert sorted(where) == sorted(ids)  # none lost, nothing new
    assert all(len(w) == 1 for w in where.values()), where  # each in exactly one place
    recorded = 0
    for incident_id in ids:
        records = _step_records(root, incident_id)
        recorded += len(records)
        twice = [k for k, n in Counter(records).items() if n > 1]
        assert not twice, f"{incident_id}: step attempts recorded twice: {twice}"
        assert (root.path / "error_runs" / incident_id / "run_result.json").exists()
    assert recorded >= INCIDENTS  # the check above has something to check
    resolved = sum(w == ["error_archive/resolved"] for w in where.values())
    assert resolved >= INCIDENTS * 0.9  # a few may be quarantined (killed 3 times mid-tick)
    assert not (root.state / "leases").exists() or not any(
        n.endswith(".json") for n in os.listdir(root.state / "leases")
    )  # no lease file: the leases were rows
    target.unbind(root.path)
