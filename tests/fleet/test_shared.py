"""What a fleet decides together, with two hosts (roots) sharing one PostgreSQL mirror,
each host's commands and watchers real processes: one budget per signature, one global
pause, a decision made on one host applied by the host that holds the bundle."""

from __future__ import annotations

import json
import time
from pathlib import Path

from incidents import pause
from tests.fleet.hosts import Host, make_hosts
from tests.helpers import BROKEN, ctx_of, incidents
from tests.mirror.test_derived import CONFIG


def capture(host: Host, content: str = BROKEN) -> str:
    """The same failure on any host: the same step, message and file (one signature)."""
    ws = host.cwd / "work"
    ws.mkdir(exist_ok=True)
    (ws / "f.py").write_text(content)
    args = ["capture", "--step", "step_rq", "--message", "f.py failed its checks",
            "--python-file", "f.py", "--workdir", str(ws), "--no-dedupe"]  # fmt: skip
    p = incidents(*args, env=host.env, cwd=host.cwd)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def attempts(host: Host, incident_id: str) -> int:
    """The fixer attempts the incident's context records (each a unit of its budget)."""
    return len(ctx_of(host.root, incident_id).ai_attempts)


def run(host: Host, *args: str) -> str:
    p = incidents(*args, env=host.env, cwd=host.cwd, timeout=300)
    assert p.returncode == 0, f"{args}: {p.stderr}"
    return p.stdout


def test_one_budget_per_signature_across_hosts(tmp_path: Path, pg_url: str) -> None:
    a, b = make_hosts(tmp_path, pg_url, ("a", "b"))  # signature_budget = 1
    first = capture(a)
    run(a, "drive", first)
    assert (a.root.bucket("escalated") / first).is_dir()
    assert attempts(a, first) == 1  # the one attempt the budget allows
    second = capture(b)
    run(b, "drive", second)
    assert (b.root.bucket("escalated") / second).is_dir()
    assert attempts(b, second) == 0, "host b spent a unit of a budget host a had used up"


def test_one_budget_control_without_the_shared_mirror(tmp_path: Path, pg_url: str) -> None:
    """The same two hosts each on its own SQLite mirror: each spends its own unit (what
    makes the test above able to fail)."""
    a, b = make_hosts(tmp_path, pg_url, ("a", "b"))
    spent = []
    for host in (a, b):
        del host.env["INCIDENTS_MIRROR_URL"]
        incident_id = capture(host)
        run(host, "drive", incident_id)
        spent.append(attempts(host, incident_id))
    assert spent == [1, 1]


def test_an_escalation_storm_on_one_host_pauses_the_other(tmp_path: Path, pg_url: str) -> None:
    config = CONFIG.replace("escalation_threshold = 0", "escalation_threshold = 1")
    a, b = make_hosts(tmp_path, pg_url, ("a", "b"), config)
    run(a, "drive", capture(a))
    assert pause.current(a.root) is not None  # the threshold, on host a
    assert pause.current(b.root) is None
    run(b, "watch", "--until-idle")  # b's pass copies the fleet's pause
    info = pause.current(b.root)
    assert info is not None and info.by == "fleet:a"
    waiting = capture(b)
    run(b, "watch", "--until-idle")
    assert (b.root.inbox / waiting).is_dir()
    assert not (b.root.inbox / waiting / "state.json").exists()  # paused: never started
    assert "resumed" in run(b, "resume")  # a resume anywhere lifts the fleet's pause
    run(a, "watch", "--until-idle")
    assert pause.current(a.root) is None


def test_a_requeue_decided_on_one_host_is_applied_by_the_host_holding_it(
    tmp_path: Path, pg_url: str
) -> None:
    a, b = make_hosts(tmp_path, pg_url, ("a", "b"))
    a.root.ensure()  # host a is set up but holds nothing (a read-only command needs a root)
    held = capture(b)
    run(b, "drive", held)
    assert (b.root.bucket("escalated") / held).is_dir()
    page = run(a, "review", "--stdout")  # host a's review names what host b holds
    assert "Other hosts (1)" in page and f"<td>b</td><td>{held}</td><td>escalated</td>" in page
    said = run(a, "resolve-escalation", held, "--guidance", "close the parenthesis", "--requeue")
    assert "held by host b" in said
    assert not (a.root.bucket("escalated") / held).exists()  # nothing moved on host a
    assert (b.root.bucket("escalated") / held).is_dir()  # nor on b, until its next pass
    run(b, "watch", "--until-idle")
    assert (b.root.bucket("resolved") / held).is_dir()  # requeued, then fixed with the guidance
    p = incidents("resolve-escalation", "nobody_has_it", "--guidance", "g", env=a.env, cwd=a.cwd)
    assert p.returncode != 0 and "Traceback" not in p.stderr


def _occurrences(host: Host, incident_id: str) -> int:
    _bucket, folder = host.root.locate(incident_id)
    return int(json.loads((folder / "incident.json").read_text()).get("occurrences", 1))


def test_a_new_incident_of_a_group_open_on_another_host_is_counted_there(
    tmp_path: Path, pg_url: str
) -> None:
    a, b = make_hosts(tmp_path, pg_url, ("a", "b"))
    opened = capture(a)
    run(a, "status")  # host a reports its open incident
    # the same failure on host b, later: in a later second (created_at has whole seconds;
    # in the same second the ids' random tails decide which is older, and b's won half)
    time.sleep(max(0.0, 1.05 - time.time() % 1))
    again = capture(b)
    run(b, "watch", "--until-idle")
    assert (b.root.bucket("resolved") / again).is_dir()
    reason = json.loads((b.root.bucket("resolved") / again / "incident.json").read_text())
    assert f"occurrence of {opened} on host a" in reason["resolution"]
    assert not (b.root.bucket("resolved") / again / "state.json").exists()  # never worked
    assert _occurrences(a, opened) == 1  # until host a's next pass
    run(a, "watch", "--until-idle")
    assert _occurrences(a, opened) == 2


def test_grouping_across_hosts_can_be_switched_off(tmp_path: Path, pg_url: str) -> None:
    a, b = make_hosts(tmp_path, pg_url, ("a", "b"), CONFIG + "[mirror]\nshare_groups = false\n")
    capture(a)
    run(a, "status")
    again = capture(b)
    run(b, "watch", "--until-idle")
    assert (b.root.bucket("escalated") / again / "state.json").exists()  # worked on host b
