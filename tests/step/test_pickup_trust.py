"""Bundles are judged at pickup as capture judges its inputs, and a state.json is believed
only when the step service wrote it (issue 14, part 5). Bundles are written by hand into a
real inbox, as anyone who can write there could; `incidents step` and `drive` pick them up
with the real check tools."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from incidents.layout import Root
from incidents.models import ErrorPipelineContext
from incidents.models.pipeline import State
from tests.bundles import drop, planted_state, rejected_reason
from tests.helpers import BROKEN, FAST, MESSY, TIERS_OFF, Cli, capture, use_config


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the workdir that the mechanical autofix would rewrite."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "victim.py"
    path.write_text(MESSY)
    return path


@pytest.mark.parametrize(
    "target",
    ["../outside/victim.py", "ABSOLUTE", "sub/../../outside/victim.py"],
)
def test_a_target_outside_the_workdir_is_refused_and_never_touched(
    cli: Cli, root: Root, ws: Path, victim: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, target: str,
) -> None:  # fmt: skip
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    (ws / "sub").mkdir()
    target = str(victim) if target == "ABSOLUTE" else target
    folder = drop(root, "outside", ws, python_files=[target])
    r = cli("drive", folder.name)
    assert victim.read_text() == MESSY, "the autofix rewrote a file outside the workdir"
    assert r.code != 0 and "python_files" in r.err and "error_rejected" in r.err
    reason = rejected_reason(root, folder.name)
    rule = "an absolute path" if target.startswith("/") else "a '..' component"
    assert f"incident.json: python_files {target!r}: {rule}" in reason


def test_a_target_symlinked_outside_the_workdir_is_refused(
    cli: Cli, root: Root, ws: Path, victim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    (ws / "messy.py").symlink_to(victim)
    folder = drop(root, "symlink", ws, python_files=["messy.py"])
    r = cli("drive", folder.name)
    assert victim.read_text() == MESSY, "the autofix rewrote a file outside the workdir"
    assert r.code != 0
    assert (
        f"incident.json: python_files 'messy.py': outside the workdir {ws} (symlinks followed)"
        in rejected_reason(root, folder.name)
    )


def test_a_verification_command_off_the_allowlist_is_refused_at_pickup_and_capture(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    folder = drop(root, "verify", ws, verify=["sh -c 'touch pwned'"])
    r = cli("drive", folder.name)
    assert r.code != 0
    assert not (ws / "pwned").exists()
    assert (
        "incident.json: verify \"sh -c 'touch pwned'\": program 'sh' is not on the allowlist"
        in rejected_reason(root, folder.name)
    )
    unsplittable = drop(root, "unsplittable", ws, verify=["python 'unclosed"])
    assert cli("step", unsplittable.name).code != 0
    assert "cannot split into arguments" in rejected_reason(root, unsplittable.name)
    # capture applies the same rule before it writes anything
    before = sorted(os.listdir(root.inbox))
    r = cli("capture", "--step", "dl", "--message", "m", "--workdir", str(ws),
            "--verify", "sh -c 'touch pwned'")  # fmt: skip
    assert r.code != 0
    assert "--verify \"sh -c 'touch pwned'\": program 'sh' is not on the allowlist" in r.err
    assert sorted(os.listdir(root.inbox)) == before


def test_a_workdir_outside_verification_workdirs_is_refused_at_pickup_and_capture(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    allowed = tmp_path / "projects"
    (allowed / "app").mkdir(parents=True)
    (allowed / "app" / "messy.py").write_text(MESSY)
    (ws / "messy.py").write_text(MESSY)
    use_config(
        tmp_path, monkeypatch,
        FAST + TIERS_OFF + f'[verification]\nworkdirs = ["{allowed}"]\n',
    )  # fmt: skip
    folder = drop(root, "elsewhere", ws, python_files=["messy.py"])
    assert cli("drive", folder.name).code != 0
    assert (ws / "messy.py").read_text() == MESSY
    assert (
        f"incident.json: workdir {str(ws)!r}: outside [verification] workdirs ({allowed})"
        in rejected_reason(root, folder.name)
    )
    r = cli("capture", "--step", "lint", "--message", "m", "--workdir", str(ws),
            "--python-file", "messy.py")  # fmt: skip
    assert r.code != 0 and f"--workdir {ws}: outside [verification] workdirs" in r.err
    # a workdir under one of them is taken (the positive control)
    inside = capture(cli, ws=allowed / "app", target="messy.py")
    r = cli("drive", inside)
    assert r.code == 0 and "archived to error_archive/resolved/" in r.out, r.out + r.err


@pytest.mark.parametrize("state", [State.S_SUCCESS, State.S0_MECHANICAL_RECHECK])
def test_a_new_bundle_bringing_its_own_state_json_is_rejected(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: State
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    (ws / "broken.py").write_text(BROKEN)
    folder = drop(root, "planted", ws, python_files=["broken.py"])
    (folder / "state.json").write_text(planted_state(folder.name, state, ["broken.py"]))
    r = cli("drive", folder.name)
    assert r.code != 0, r.out
    assert not (root.bucket("resolved") / folder.name).exists(), "resolved on a planted state"
    reason = rejected_reason(root, folder.name)
    assert "state.json: seal: not written by the step service (it carries no seal)" in reason


def test_a_state_json_edited_between_two_ticks_is_not_believed(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    incident_id = capture(cli, ws=ws, target="broken.py", content=BROKEN)
    assert cli("step", incident_id).code == 0  # PLAN, committed and sealed
    path = root.inbox / incident_id / "state.json"
    text = path.read_text()
    assert text.startswith('{\n  "seal": "')
    # the seal kept, the state moved on to success behind the step service's back
    edited = text.replace('"current_state": "S_INIT"', '"current_state": "S_SUCCESS"').replace(
        '"final_status": null', '"final_status": "success"'
    )
    assert edited != text
    path.write_text(edited)
    r = cli("step", incident_id)
    assert r.code != 0
    assert not (root.bucket("resolved") / incident_id).exists()
    assert "its seal does not match" in rejected_reason(root, incident_id)


def test_a_sealed_state_json_copied_from_another_incident_is_not_believed(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seal binds the incident id: a resolved incident's genuine S_SUCCESS state does
    not close another incident."""
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    done = capture(cli, ws=ws, target="messy.py", content=MESSY)
    assert "archived to error_archive/resolved/" in cli("drive", done).out
    sealed = (root.bucket("resolved") / done / "state.json").read_text()
    (ws / "broken.py").write_text(BROKEN)
    folder = drop(root, "copied", ws, python_files=["broken.py"])
    (folder / "state.json").write_text(sealed)
    assert cli("drive", folder.name).code != 0
    assert "its seal does not match" in rejected_reason(root, folder.name)


def test_a_normal_capture_still_resolves_with_a_sealed_state(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    incident_id = capture(cli, ws=ws, target="messy.py", content=MESSY)
    r = cli("drive", incident_id)
    assert r.code == 0 and "archived to error_archive/resolved/" in r.out, r.out + r.err
    assert not root.rejected.exists() or os.listdir(root.rejected) == []
    key = root.seal_key
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_size == 32
    state = (root.bucket("resolved") / incident_id / "state.json").read_text()
    assert json.loads(state)["seal"] and ErrorPipelineContext.model_validate_json(state)


@pytest.mark.parametrize(
    "system",
    ["/", "/etc", "/usr", "/usr/lib/python3", "/proc/sys", "/root", "/root/.config", "/var/lib"],
)
def test_a_system_folder_is_no_workdir_unless_verification_workdirs_allows_it(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str
) -> None:
    """`--workdir /` would make any file on the machine a target; a system folder the
    files of the system. Refused by capture and at pickup, unless named in workdirs."""
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    r = cli("capture", "--step", "lint", "--message", "m", "--workdir", system)
    assert r.code == 2 and f"--workdir {system}: a system folder" in r.err, r.err
    folder = drop(root, "system", Path(system))
    assert cli("drive", folder.name).code != 0
    assert f"workdir {system!r}: a system folder" in rejected_reason(root, folder.name)
    use_config(
        tmp_path, monkeypatch, FAST + TIERS_OFF + f'[verification]\nworkdirs = ["{system}"]\n'
    )
    r = cli("capture", "--step", "lint", "--message", "m", "--workdir", system)
    assert r.code == 0, r.err


def test_below_a_system_tree_is_refused_and_below_a_system_folder_a_project(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15 review: `--workdir /root/.config` was accepted (only the folders themselves
    were listed). Everything under /root, /usr, /etc, /proc, /var/lib... is the system's
    unless `[verification] workdirs` names it; projects live under /home, /tmp, /var/tmp,
    /opt and /srv."""
    use_config(tmp_path, monkeypatch, FAST + TIERS_OFF)
    from incidents.bundle_rules import workdir_problem

    for workdir in ("/home/bob/app", "/tmp/job", "/var/tmp/build", "/opt/x", "/srv/jobs/a"):
        assert workdir_problem(workdir, []) is None, workdir
    refused = ("/root/.config", "/root/app", "/usr/local/src/app", "/etc/nginx/conf.d",
               "/var/lib/jenkins/workspace/app", "/proc/sys/kernel", "/run/secrets")  # fmt: skip
    for workdir in refused:
        assert workdir_problem(workdir, []) == (
            "a system folder (name it in [verification] workdirs to allow it)"
        ), workdir
    assert workdir_problem("/var/lib/jenkins/workspace/app", ["/var/lib/jenkins"]) is None
    r = cli("capture", "--step", "lint", "--message", "m", "--workdir", str(tmp_path))
    assert r.code == 0, r.err
