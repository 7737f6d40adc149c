"""What detection does outside the workdir must not cost anyone else their files: a person
who edits incidents.toml or a config above the workdir while a fixer runs keeps the edit
under bubblewrap (the fixer could not have written there) and finds it in the stray folder
with detection (it cannot be told from the fixer's); files other programs create in the
shared temporary folders during the run are reported, never moved; beside the workdir only
a new regular file is moved aside, and never deleted."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents.fixers import TierSettings, run_fixer, sandbox
from incidents.fixers.runner import FixerOutcome
from tests.debian import bubblewrap_or_skip
from tests.stand_ins import stand_in

EDIT_AT_S = 0.5  # the person edits this long after the fixer started
FIXER_S = 1.5  # the fixer runs this long


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "proj" / "ws"
    ws.mkdir(parents=True)
    (ws / "a.py").write_text("x = 1\n")
    return ws


def run_while(
    edit: threading.Thread, project: Path, tmp_path: Path, mode: str, body: str = ""
) -> tuple[Path, FixerOutcome]:
    """Run a fixer (a stand-in that does `body`, then sleeps) in `mode` while `edit` runs."""
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "aider", f"{body}\ntime.sleep({FIXER_S})")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("fix a.py\n")
    aside = tmp_path / "reports" / ".state" / "stray" / "incident_x"
    settings = TierSettings(argv=["aider", "{files}"], timeout_s=30)
    edit.start()
    try:
        out = run_fixer(
            "aider", settings, prompt, ["a.py"], project,
            containment=sandbox.Containment(
                mode, watch=(str(tmp_path / "incidents.toml"),), aside=str(aside)),
        )  # fmt: skip
    finally:
        edit.join()
    return aside, out


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_a_persons_config_edits_during_a_fixer_run_are_never_lost(
    bin_dir: Path, project: Path, tmp_path: Path, mode: str
) -> None:
    if mode == "bwrap":
        bubblewrap_or_skip()
    config = tmp_path / "incidents.toml"
    config.write_text("# v1\n")
    upper = project.parent / "pyproject.toml"
    upper.write_text("[tool.x]\n# v1\n")
    new = project.parent / "ruff.toml"

    def person() -> None:
        time.sleep(EDIT_AT_S)
        config.write_text("# v2: the person's edit\n")
        upper.write_text("[tool.x]\n# v2: the person's edit\n")
        new.write_text("# the person's new config\n")

    aside, out = run_while(threading.Thread(target=person), project, tmp_path, mode)
    assert out.ok, out.infra_error
    violations = out.violations
    edited = {config: "# v2", upper: "# v2", new: "new config"}
    if mode == "bwrap":  # the fixer could write none of them: they are left alone
        for path, text in edited.items():
            assert text in path.read_text(), f"{path.name}: the person's edit was reverted"
            assert str(path) not in violations
        assert not aside.exists()
        return
    # detection cannot tell them from the fixer's: put back, and the edits kept aside
    assert set(violations) >= {str(p) for p in edited}
    assert "v1" in config.read_text() and "v1" in upper.read_text() and not new.exists()
    kept = {p.name.rsplit("%", 1)[1]: p.read_text() for p in aside.iterdir()}
    assert kept == {
        "incidents.toml": "# v2: the person's edit\n",
        "pyproject.toml": "[tool.x]\n# v2: the person's edit\n",
        "ruff.toml": "# the person's new config\n",
    }


@pytest.fixture
def temp_names() -> Iterator[dict[str, Path]]:
    tag = uuid.uuid4().hex[:8]
    names = {"file": Path(f"/tmp/incidents-other-{tag}.txt"),
             "socket": Path(f"/tmp/incidents-sock-{tag}")}  # fmt: skip
    yield names
    for path in names.values():
        path.unlink(missing_ok=True)


def test_files_other_programs_make_in_tmp_during_a_run_are_reported_not_moved(
    bin_dir: Path, project: Path, tmp_path: Path, temp_names: dict[str, Path]
) -> None:
    listening: list[socket.socket] = []

    def other_program() -> None:
        time.sleep(EDIT_AT_S)
        temp_names["file"].write_text("another program's temp file\n")
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(temp_names["socket"]))
        listening.append(sock)

    thread = threading.Thread(target=other_program)
    try:
        _, out = run_while(thread, project, tmp_path, "none")
    finally:
        for sock in listening:
            sock.close()
    violations = out.violations
    for path in temp_names.values():
        assert path.exists(), f"{path} was moved away from the program that made it"
        assert str(path) in violations  # still reported: the fixer might have made it


def test_beside_the_workdir_only_a_new_regular_file_is_moved_aside(
    bin_dir: Path, project: Path, tmp_path: Path
) -> None:
    body = (
        "up = pathlib.Path.cwd().parent\n"
        "(up / 'stray.txt').write_text('left by the fixer')\n"
        "os.mkfifo(up / 'pipe')\n"
        "(up / 'link').symlink_to('/etc/hostname')\n"
    )
    aside, out = run_while(threading.Thread(target=lambda: None), project, tmp_path, "none", body)
    up = project.parent
    violations, unreverted = out.violations, out.unreverted
    assert {str(up / n) for n in ("stray.txt", "pipe", "link")} <= set(violations)
    assert not (up / "stray.txt").exists()
    [kept] = aside.iterdir()
    assert kept.name.endswith("%stray.txt") and kept.read_text() == "left by the fixer"
    assert (up / "pipe").exists() and (up / "link").is_symlink()  # reported and left
    assert {str(up / "pipe"), str(up / "link")} <= set(unreverted)


def test_under_bubblewrap_a_config_the_fixer_could_write_is_held_and_the_rest_left_alone(
    bin_dir: Path, project: Path, tmp_path: Path
) -> None:
    bubblewrap_or_skip()
    config = tmp_path / "incidents.toml"  # under the writable path, but bound read-only
    config.write_text("# v1\n")
    bin_dir.mkdir(exist_ok=True)
    stand_in(bin_dir, "aider", "(pathlib.Path.cwd().parent / 'ruff.toml').write_text('x')\n"
             f"time.sleep({FIXER_S})")  # fmt: skip
    prompt = tmp_path / "prompt.md"
    prompt.write_text("fix a.py\n")
    aside = tmp_path / "stray"

    def person() -> None:
        time.sleep(EDIT_AT_S)
        config.write_text("# v2: the person's edit\n")

    edit = threading.Thread(target=person)
    edit.start()
    try:
        out = run_fixer(
            "aider", TierSettings(argv=["aider", "{files}"], timeout_s=30, writable=[str(tmp_path)]),
            prompt, ["a.py"], project,
            containment=sandbox.Containment("bwrap", watch=(str(config),), aside=str(aside)),
        )  # fmt: skip
    finally:
        edit.join()
    assert out.ok and out.contained, out.infra_error
    assert "v2" in config.read_text() and str(config) not in out.violations
    assert str(project.parent / "ruff.toml") in out.violations  # it could write there
    assert not (project.parent / "ruff.toml").exists()
    [kept] = aside.iterdir()
    assert kept.name.endswith("%ruff.toml") and kept.read_text() == "x"
