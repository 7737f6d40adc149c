"""The plain path's verdicts, end to end: `incidents run -- CMD` and seed 004's capture
around small real projects, driven by the real step service with real ruff and Python.

- the incident's own findings block whatever their severity (an F841 in the file whose
  lint failure was captured is that failure, not "style": never "not reproduced");
- a transient failure clears itself: its reproduction passes on a retry (recovered), its
  step succeeds again (`run` passing, `capture --ok`), or it stays quiet; one still
  failing after its retries goes to a person with its own message, never to a fixer;
- an env failure goes to a person at once, saying what is missing, and comes back only
  through its reproduction passing; no fixer is ever called (a stand-in aider on PATH
  records any call).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import Cli, ctx_of, events, use_config
from tests.stand_ins import stand_in

AIDER_ON = '[tiers.aider]\nmode = "on"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
TIERS_OFF = AIDER_ON.replace('mode = "on"', 'mode = "off"')
LINT = '[checks]\ntools = ["ruff"]\n'
NO_WAIT = "[policy]\nretry_base_s = 0.0\nretry_max_s = 0.0\nmax_transient_retries = 1\n"
F841 = "def build() -> int:\n    unused = 1\n    return 2\n"


def recording_aider(bin_dir: Path, calls: Path, body: str = "pass") -> None:
    """A stand-in aider that writes down that it was called, then runs `body`."""
    stand_in(bin_dir, "aider", f"open({str(calls)!r}, 'a').write('called\\n')\n{body}")


def only_incident(root: Root) -> str:
    [name] = [p.name for p in root.inbox.iterdir() if not p.name.startswith(".")]
    return name


def run_result(root: Root, incident_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    return doc


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    monkeypatch.chdir(path)
    # ruff where a user's shell finds it: beside this interpreter (the venv's bin)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return path


# -- deliver 1: the incident's own findings block ------------------------------------------


@pytest.mark.parametrize("reproduce", [[], ["--reproduce"]])
def test_an_f841_that_still_fails_is_never_resolved(
    cli: Cli,
    root: Root,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reproduce: list[str],
) -> None:
    """`run --python-file gen.py -- ruff check gen.py` with an F841 and no fixer: ruff
    still exits 1, so the incident is escalated, never "not reproduced (flaky)"."""
    (ws / "gen.py").write_text(F841)
    use_config(tmp_path, monkeypatch, LINT + TIERS_OFF)
    argv = ["run", *reproduce, "--step", "lint_gen", "--python-file", "gen.py", "--"]
    r = cli(*argv, "ruff", "check", "gen.py")
    assert r.code == 1, r.err
    incident_id = only_incident(root)
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("escalated") / incident_id).is_dir()
    assert run_result(root, incident_id)["outcome"] == "escalated"
    assert "flaky" not in events(root, incident_id)
    still = subprocess.run(["ruff", "check", "gen.py"], cwd=ws, capture_output=True)
    assert still.returncode == 1  # the reason it must not be resolved


def test_a_real_fix_of_the_f841_resolves_it_as_fixed(
    cli: Cli,
    root: Root,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:
    """The positive control: a fixer that really removes the unused variable is credited."""
    (ws / "gen.py").write_text(F841)
    fix = "p = pathlib.Path('gen.py'); p.write_text(p.read_text().replace('    unused = 1\\n', ''))"
    recording_aider(bin_dir, tmp_path / "calls", fix)
    use_config(tmp_path, monkeypatch, LINT + AIDER_ON)
    r = cli(
        "run",
        "--reproduce",
        "--step",
        "lint_gen",
        "--python-file",
        "gen.py",
        "--",
        "ruff",
        "check",
        "gen.py",
    )
    assert r.code == 1, r.err
    incident_id = only_incident(root)
    assert cli("drive", incident_id).code == 0
    result = run_result(root, incident_id)
    assert (result["final_status"], result["outcome"]) == ("resolved", "fixed"), result
    assert subprocess.run(["ruff", "check", "gen.py"], cwd=ws).returncode == 0


# -- deliver 4: transient failures clear themselves ---------------------------------------


def fails_once(path: Path, marker: Path, message: str = "Network timeout") -> None:
    """A download that times out the first time and works after (the marker, outside the
    workdir, is the network coming back)."""
    path.write_text(
        "import pathlib\n"
        f"m = pathlib.Path({str(marker)!r})\n"
        "if not m.exists():\n"
        "    m.write_text('seen')\n"
        f"    raise TimeoutError({message!r})\n"
        "print('downloaded')\n"
    )


def test_a_blip_whose_reproduction_passes_on_retry_is_recovered(
    cli: Cli,
    root: Root,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:
    fails_once(ws / "download.py", tmp_path / "network")
    recording_aider(bin_dir, tmp_path / "calls")
    use_config(tmp_path, monkeypatch, AIDER_ON + NO_WAIT)
    r = cli("run", "--reproduce", "--step", "amazon_download", "--", sys.executable, "download.py")
    assert r.code == 1, r.err
    incident_id = only_incident(root)
    assert (
        json.loads((root.inbox / incident_id / "incident.json").read_text())["failure_class"]
        == "transient"
    )
    assert cli("drive", incident_id).code == 0
    result = run_result(root, incident_id)
    assert (result["final_status"], result["outcome"]) == ("resolved", "recovered"), result
    assert result["reason"].startswith("recovered: ")
    assert "escalation" not in events(root) and not (tmp_path / "calls").exists()


def test_a_blip_still_failing_after_its_retries_escalates_with_its_own_message(
    cli: Cli,
    root: Root,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:
    """Still timing out after its retry: to a person, the reason its own words, and no
    fixer called (it is not the code)."""
    (ws / "download.py").write_text(
        "raise TimeoutError('Network timeout during receipt download')\n"
    )
    recording_aider(bin_dir, tmp_path / "calls")
    use_config(tmp_path, monkeypatch, AIDER_ON + NO_WAIT)
    r = cli("run", "--reproduce", "--step", "amazon_download", "--", sys.executable, "download.py")
    assert r.code == 1, r.err
    incident_id = only_incident(root)
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("escalated") / incident_id).is_dir()
    ctx = ctx_of(root, incident_id)
    assert ctx.escalation_kind == "still_failing" and ctx.transient_retries == 1
    message = json.loads((root.bucket("escalated") / incident_id / "incident.json").read_text())[
        "message"
    ]
    reason = run_result(root, incident_id)["reason"]  # what failed, then the command
    assert reason.startswith("TimeoutError: Network timeout during receipt download ["), reason
    assert f"[{message}] (transient failure" in reason, reason
    assert not (tmp_path / "calls").exists()


SEED_004 = ["--step", "amazon_download", "--message", "Network timeout during receipt download"]


def test_seed_004s_capture_waits_for_its_step_and_closes_when_it_succeeds(
    cli: Cli,
    root: Root,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:
    """Nothing to re-run: not "unverifiable" at once, it waits; `capture --ok` from the
    script's success path closes it as recovered, nobody paged."""
    recording_aider(bin_dir, tmp_path / "calls")
    use_config(tmp_path, monkeypatch, AIDER_ON)
    r = cli("capture", *SEED_004)
    assert r.code == 0, r.err
    incident_id = r.out.strip()
    assert cli("drive", incident_id).code == 0
    assert (root.inbox / incident_id).is_dir()  # waiting, not escalated
    # another step's success is not its own
    assert cli("capture", "--ok", "--step", "other_step").code == 0
    assert cli("drive", incident_id).code == 0
    assert (root.inbox / incident_id).is_dir()
    assert cli("capture", "--ok", "--step", "amazon_download").code == 0
    assert cli("drive", incident_id).code == 0
    result = run_result(root, incident_id)
    assert (result["final_status"], result["outcome"]) == ("resolved", "recovered"), result
    assert "capture --ok" in result["reason"]
    assert "recovered" in events(root, incident_id) and "flaky" not in events(root, incident_id)
    shown = cli("status", incident_id).out
    assert "outcome:         recovered (cleared, no fix claimed)" in shown, shown
    assert ", 1 recovered" in cli("status", "--all").out
    assert "escalation" not in events(root) and not (tmp_path / "calls").exists()


def test_a_recurrence_after_the_success_keeps_it_open(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step succeeded, then failed the same way again (an occurrence folded in, in a
    later second than the success): its last failure is after the success, so it keeps
    waiting; the next success closes it."""
    use_config(tmp_path, monkeypatch, TIERS_OFF)
    incident_id = cli("capture", *SEED_004).out.strip()
    assert cli("capture", "--ok", *SEED_004).code == 0  # the success of this very failure
    time.sleep(1.05)  # capture records whole seconds: the recurrence is in a later one
    assert cli("capture", *SEED_004).out.strip() == incident_id  # folded: one incident
    assert cli("drive", incident_id).code == 0
    assert (root.inbox / incident_id).is_dir()
    assert cli("capture", "--ok", *SEED_004).code == 0
    assert cli("drive", incident_id).code == 0
    assert run_result(root, incident_id)["outcome"] == "recovered"


def test_with_no_recurrence_for_transient_quiet_it_closes_as_recovered(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, TIERS_OFF + "[policy]\ntransient_quiet = 0\n")
    incident_id = cli("capture", *SEED_004).out.strip()
    assert cli("drive", incident_id).code == 0
    result = run_result(root, incident_id)
    assert (result["final_status"], result["outcome"]) == ("resolved", "recovered"), result
    assert "no recurrence within [policy] transient_quiet" in result["reason"]


def test_a_passing_run_of_the_step_closes_its_open_blip(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing `run` of a step, then the same `run` passing: the incident closes as
    recovered. The same step passing another command does not close it."""
    fails_once(ws / "download.py", tmp_path / "network")
    (ws / "other.py").write_text("print('fine')\n")
    use_config(tmp_path, monkeypatch, TIERS_OFF + "[policy]\nmax_transient_retries = 0\n")
    step = ["run", "--step", "amazon_download", "--"]
    assert cli(*step, "python", "download.py").code == 1
    incident_id = only_incident(root)
    assert cli(*step, "python", "other.py").code == 0
    (tmp_path / "network").unlink()  # the network is down again: only a success closes it
    if json.loads((root.inbox / incident_id / "incident.json").read_text())["verify"] == []:
        assert cli("drive", incident_id).code == 0
        assert (root.inbox / incident_id).is_dir()  # other.py passing is not its command
    (tmp_path / "network").write_text("back")
    assert cli(*step, "python", "download.py").code == 0
    assert cli("drive", incident_id).code == 0
    result = run_result(root, incident_id)
    assert (result["final_status"], result["outcome"]) == ("resolved", "recovered"), result


def test_a_passing_run_re_runs_a_blip_waiting_out_its_backoff_at_once(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With its reproduction: the first check fails and the retry is minutes away; the same
    `run` passing since makes the next tick re-run it now, and it closes as recovered."""
    network = tmp_path / "network"
    network.write_text("down")
    (ws / "download.py").write_text(
        f"import pathlib\nif pathlib.Path({str(network)!r}).read_text() != 'up':\n"
        "    raise TimeoutError('Network timeout during receipt download')\n"
    )
    slow = "[policy]\nretry_base_s = 600.0\nretry_max_s = 600.0\n"
    use_config(tmp_path, monkeypatch, TIERS_OFF + slow)
    step = ["run", "--reproduce", "--step", "amazon_download", "--"]
    assert cli(*step, "python", "download.py").code == 1
    incident_id = only_incident(root)
    r = cli("drive", incident_id)
    assert "WAIT_RETRY" in r.out and (root.inbox / incident_id).is_dir(), r.out
    network.write_text("up")
    assert cli(*step, "python", "download.py").code == 0
    r = cli("drive", incident_id)
    assert "S0_BASELINE_CHECK -> S0_BASELINE_CHECK (RUN_PIPELINE)" in r.out, r.out  # not due
    result = run_result(root, incident_id)
    assert (result["final_status"], result["outcome"]) == ("resolved", "recovered"), result


# -- deliver 5: env and never_retry go to a person ----------------------------------------

PUSH = 'import os\n\ntoken = os.environ["WAREHOUSE_API_TOKEN"]\nprint("pushed", len(token))\n'


def test_a_missing_variable_escalates_at_once_naming_it_and_no_fixer_runs(
    cli: Cli,
    root: Root,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:
    """A KeyError on os.environ (env): escalated at once, the headline names the variable
    and says to set it and requeue; the fixer on PATH is never called, and a change to
    the code does not close it. Set (and passed to the re-run), a requeue re-runs the
    reproduction: recovered."""
    (ws / "push.py").write_text(PUSH)
    recording_aider(
        bin_dir,
        tmp_path / "calls",
        "p = pathlib.Path('push.py'); p.write_text(p.read_text().replace("
        '\'os.environ["WAREHOUSE_API_TOKEN"]\', \'os.environ.get("WAREHOUSE_API_TOKEN", "")\'))',
    )
    config = AIDER_ON + '[verification]\npass_env = ["WAREHOUSE_API_TOKEN"]\n'
    use_config(tmp_path, monkeypatch, config)
    monkeypatch.delenv("WAREHOUSE_API_TOKEN", raising=False)
    r = cli(
        "run",
        "--reproduce",
        "--step",
        "push",
        "--python-file",
        "push.py",
        "--",
        sys.executable,
        "push.py",
    )
    assert r.code == 1, r.err
    incident_id = only_incident(root)
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("escalated") / incident_id).is_dir()
    reason = run_result(root, incident_id)["reason"]
    assert reason.startswith("the environment variable WAREHOUSE_API_TOKEN is not set"), reason
    assert "set WAREHOUSE_API_TOKEN" in reason
    assert f"resolve-escalation {incident_id} --requeue" in reason
    assert ctx_of(root, incident_id).escalation_kind == "environment"
    assert not (tmp_path / "calls").exists()
    # requeued before it is set: its reproduction still fails, back to the person
    assert cli("resolve-escalation", incident_id, "--guidance", "retry", "--requeue").code == 0
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("escalated") / incident_id).is_dir()
    assert not (tmp_path / "calls").exists()
    # set, then requeued: the reproduction passes, recovered (no fix claimed)
    monkeypatch.setenv("WAREHOUSE_API_TOKEN", "s3cr3t-value")
    assert cli("resolve-escalation", incident_id, "--guidance", "set", "--requeue").code == 0
    assert cli("drive", incident_id).code == 0
    result = run_result(root, incident_id)
    assert (result["final_status"], result["outcome"]) == ("resolved", "recovered"), result
    assert not (tmp_path / "calls").exists()
    assert (ws / "push.py").read_text() == PUSH


def test_a_refused_credential_is_never_retry_and_names_the_credential(
    cli: Cli,
    root: Root,
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
) -> None:
    recording_aider(bin_dir, tmp_path / "calls")
    (ws / "sync.py").write_text("import sys\nsys.exit('HTTP 401 Unauthorized: Bad credentials')\n")
    use_config(tmp_path, monkeypatch, AIDER_ON)
    r = cli(
        "run",
        "--reproduce",
        "--step",
        "sync",
        "--python-file",
        "sync.py",
        "--",
        sys.executable,
        "sync.py",
    )
    assert r.code == 1, r.err
    incident_id = only_incident(root)
    assert cli("drive", incident_id).code == 0
    assert (root.bucket("escalated") / incident_id).is_dir()
    ctx = ctx_of(root, incident_id)
    assert ctx.escalation_kind == "never_retry", ctx.escalation_reason
    assert run_result(root, incident_id)["reason"].startswith("a credential is missing or refused")
    assert not (tmp_path / "calls").exists()
