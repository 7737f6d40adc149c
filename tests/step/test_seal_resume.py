"""The seal on state.json never makes the step service reject its own state: not after a
SIGKILL before or after any state.json write of a commit, not in a root whose incidents
were in flight before the seal existed, not after a kill in the middle of that upgrade.
Real `incidents` processes, killed by an audit hook at exact points (kill_driver.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import BROKEN, FAST, MESSY, TIERS_OFF, incidents

DRIVER = Path(__file__).with_name("kill_driver.py")


@pytest.fixture
def env(root: Root, tmp_path: Path) -> dict[str, str]:
    (tmp_path / "incidents.toml").write_text(FAST + TIERS_OFF)
    return {**os.environ, "INCIDENTS_ROOT": str(root.path),
            "INCIDENTS_CONFIG": str(tmp_path / "incidents.toml")}  # fmt: skip


def capture(env: dict[str, str], ws: Path, content: str = MESSY) -> str:
    ws.mkdir()
    (ws / "target.py").write_text(content)
    p = incidents("capture", "--step", "lint", "--message", "ruff failed", "--no-dedupe",
                  "--python-file", "target.py", "--workdir", str(ws), env=env, check=True)  # fmt: skip
    return p.stdout.strip()


def killed_at(n: int, when: str, env: dict[str, str], *args: str) -> bool:
    """`incidents ARGS`, SIGKILLed before/after its nth state.json replacement; False when
    it finished first (it has fewer)."""
    p = subprocess.run([sys.executable, str(DRIVER), str(n), when, *args], env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    if p.returncode == 0:
        return False
    assert p.returncode == -signal.SIGKILL, p.stderr
    return True


def drive(env: dict[str, str], incident_id: str) -> str:
    p = incidents("drive", incident_id, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def nothing_rejected(root: Root) -> bool:
    return not root.rejected.exists() or os.listdir(root.rejected) == []


def unseal_as_before(root: Root) -> None:
    """The root as the version before the seal left it: no key, state.json unsealed."""
    root.seal_key.unlink()
    for bucket in (root.inbox, root.bucket("escalated")):
        for state in bucket.glob("*/state.json"):
            doc = json.loads(state.read_text())
            del doc["seal"]
            state.write_text(json.dumps(doc, indent=2) + "\n")


def test_a_kill_before_or_after_any_state_json_write_resumes(
    root: Root, tmp_path: Path, env: dict[str, str]
) -> None:
    n, kills = 0, 0
    while True:
        n += 1
        for when in ("before", "after"):
            incident_id = capture(env, tmp_path / f"ws{n}{when}")
            if not killed_at(n, when, env, "drive", incident_id):
                assert n > 4 and kills >= 8, "the kill points were not reached"
                return
            kills += 1
            out = drive(env, incident_id)
            assert "archived to error_archive/resolved/" in out, (n, when, out)
            assert nothing_rejected(root), (n, when)


def test_incidents_in_flight_in_a_root_from_before_the_seal_keep_working(
    root: Root, tmp_path: Path, env: dict[str, str]
) -> None:
    first = capture(env, tmp_path / "ws1")
    second = capture(env, tmp_path / "ws2")
    escalated = capture(env, tmp_path / "ws3", BROKEN)
    for incident_id in (first, second):
        incidents("step", incident_id, env=env, check=True)  # PLAN: state.json in flight
    assert "archived to error_archive/escalated/" in drive(env, escalated)
    unseal_as_before(root)
    assert "archived to error_archive/resolved/" in drive(env, first)
    assert root.seal_key.is_file()
    assert "archived to error_archive/resolved/" in drive(env, second)
    # a person's decision on an incident escalated before the seal still reads its state
    (tmp_path / "ws3" / "target.py").write_text(MESSY)
    p = incidents("resolve-escalation", escalated, "--requeue", "--guidance", "fixed by hand",
                  env=env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "archived to error_archive/resolved/" in drive(env, escalated)
    assert nothing_rejected(root)


def test_a_kill_in_the_middle_of_sealing_the_states_in_flight_resumes(
    root: Root, tmp_path: Path, env: dict[str, str]
) -> None:
    ids = [capture(env, tmp_path / f"ws{i}") for i in range(3)]
    for incident_id in ids:
        incidents("step", incident_id, env=env, check=True)
    unseal_as_before(root)
    # the upgrade seals the three states, then publishes the key: killed after the second
    assert killed_at(2, "after", env, "drive", ids[0])
    assert not root.seal_key.exists()
    sealed = [json.loads((root.inbox / i / "state.json").read_text()).get("seal") for i in ids]
    assert sum(s is not None for s in sealed) == 2  # sealed with a key that was lost
    for incident_id in ids:
        assert "archived to error_archive/resolved/" in drive(env, incident_id)
    assert nothing_rejected(root)
