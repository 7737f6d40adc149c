"""Transient failures clear themselves under a real watcher: a blip's reproduction passes
on its backoff retry (recovered), and seed 004's bare capture waits until its step's
success (`capture --ok`) wakes it, then closes as recovered; nobody is paged."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from incidents.cli import main
from incidents.layout import Root
from tests.watch.helpers import FAST_TOML, places, run_watch, start_watch, stop, wait_until

TIERS_OFF = (
    '[tiers.aider]\nmode = "off"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)


def cli(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(args)) == 0
    return out.getvalue().strip()


def outcome(root: Root, incident_id: str) -> str:
    doc = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    return f"{doc['final_status']}/{doc['outcome']}"


def test_the_watcher_retries_a_blip_and_closes_it_as_recovered(
    tmp_path: Path, root: Root, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "incidents.toml").write_text(FAST_TOML + TIERS_OFF)
    monkeypatch.setenv("INCIDENTS_CONFIG", str(tmp_path / "incidents.toml"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # the command runs in its workdir: it is its reproduction
    marker = tmp_path / "network"
    (work / "download.py").write_text(
        f"import pathlib\nm = pathlib.Path({str(marker)!r})\n"
        "if not m.exists():\n    m.write_text('seen')\n    raise TimeoutError('Network timeout')\n"
    )
    code = main(["run", "--reproduce", "--step", "amazon_download", "--", "python", "download.py"])
    assert code == 1
    [incident_id] = places(root)
    done = run_watch(tmp_path, "--until-idle", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert places(root)[incident_id] == ["error_archive/resolved"]
    assert outcome(root, incident_id) == "resolved/recovered"


def test_seed_004s_capture_waits_and_its_steps_success_wakes_the_watcher(
    tmp_path: Path, root: Root
) -> None:
    (tmp_path / "incidents.toml").write_text(FAST_TOML + TIERS_OFF)
    seed = ["--step", "amazon_download", "--message", "Network timeout during receipt download"]
    incident_id = cli("capture", *seed)
    watcher = start_watch(tmp_path, "--workers", "1")
    try:
        state = root.inbox / incident_id / "state.json"
        assert wait_until(state.exists, 60), "never picked up"
        # picked up and waiting for its step (an hour of quiet by default): not escalated
        assert places(root)[incident_id] == ["error_inbox"]
        cli("capture", "--ok", "--step", "amazon_download")
        assert wait_until(lambda: places(root).get(incident_id) != ["error_inbox"], 60)
    finally:
        stop(watcher)
    assert places(root)[incident_id] == ["error_archive/resolved"]
    assert outcome(root, incident_id) == "resolved/recovered"
    assert not (root.state / "paused").exists()


def test_until_idle_does_not_wait_out_a_blips_quiet_period(tmp_path: Path, root: Root) -> None:
    """Waiting for its step is waiting on something outside, like an agent: `--until-idle`
    ends with the incident still open (not escalated)."""
    (tmp_path / "incidents.toml").write_text(FAST_TOML + TIERS_OFF)
    incident_id = cli("capture", "--step", "amazon_download", "--message", "Network timeout")
    done = run_watch(tmp_path, "--until-idle", "--workers", "1", timeout=60)
    assert done.returncode == 0, done.stderr
    assert places(root)[incident_id] == ["error_inbox"]
