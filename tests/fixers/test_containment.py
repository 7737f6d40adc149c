"""Fixer containment at the runner: targets swapped for something that is not their file,
the sandbox's writable and protected paths, and what happens where bubblewrap cannot run
(a stand-in `bwrap` on PATH that fails the way it does in an unprivileged container).
The full misbehaving fixer driven through an incident is tests/step/test_containment.py."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from incidents.fixers import TierSettings, run_fixer, sandbox
from incidents.layout import Root
from tests.debian import bubblewrap_or_skip
from tests.helpers import Cli
from tests.stand_ins import stand_in

BROKEN = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    wd = tmp_path / "project"
    wd.mkdir()
    (wd / "app.py").write_text(BROKEN)
    return wd


@pytest.fixture
def prompt_file(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "prompt_attempt_1.md"
    path.parent.mkdir()
    path.write_text("fix app.py\n")
    return path


def needs_bwrap(mode: str) -> None:
    if mode == "bwrap":
        bubblewrap_or_skip()


def tier(name: str, writable: list[str] | None = None) -> TierSettings:
    return TierSettings(argv=[name, "{files}"], timeout_s=20, writable=writable or [])


def own(reported: list[str]) -> list[str]:
    """Detection's reports without the link other pytest sessions on this machine re-point
    in an ancestor of every tmp_path (/tmp/pytest-of-<user>/pytest-current)."""
    return [p for p in reported if os.path.basename(p) != "pytest-current"]


SWAPS = {
    "fifo": "p = pathlib.Path(sys.argv[-1]); p.unlink(); os.mkfifo(p)",
    "directory": "p = pathlib.Path(sys.argv[-1]); p.unlink(); p.mkdir(); (p / 'x.py').write_text('')",
    "symlink": "p = pathlib.Path(sys.argv[-1]); p.unlink(); p.symlink_to('/etc/hostname')",
}  # fmt: skip
REASONS = {"fifo": "a special file", "directory": "a directory", "symlink": "a symlink"}


@pytest.mark.parametrize("mode", ["bwrap", "none"])
@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_a_target_swapped_for_a_non_file_is_restored_and_not_accepted(
    bin_dir: Path, workdir: Path, prompt_file: Path, swap: str, mode: str
) -> None:
    needs_bwrap(mode)
    stand_in(bin_dir, "swapper", SWAPS[swap])
    containment = sandbox.Containment(mode)
    out = run_fixer("aider", tier("swapper"), prompt_file, ["app.py"], workdir,
                    containment=containment)  # fmt: skip
    assert out.ok, out.infra_error
    assert out.changed_files == [] and own(out.unreverted) == []
    [violation] = [v for v in out.violations if v.startswith("app.py")]
    assert REASONS[swap] in violation
    target = workdir / "app.py"
    assert target.is_file() and not target.is_symlink() and target.read_text() == BROKEN
    assert sorted(os.listdir(workdir)) == ["app.py"]


def test_a_target_swapped_for_a_hard_link_outside_is_restored(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def add(a, b):\n    return a + b\n")
    stand_in(
        bin_dir,
        "linker",
        f"p = pathlib.Path(sys.argv[-1]); p.unlink(); os.link({str(outside)!r}, p)",
    )
    out = run_fixer("aider", tier("linker"), prompt_file, ["app.py"], workdir,
                    containment=sandbox.Containment("none"))  # fmt: skip
    assert out.violations == ["app.py (replaced by a hard link to another file)"]
    assert out.changed_files == [] and (workdir / "app.py").read_text() == BROKEN
    assert os.stat(workdir / "app.py").st_nlink == 1 and "a + b" in outside.read_text()


WRITE_STATE = """
spec = json.loads(pathlib.Path(os.path.dirname(sys.argv[0]), "spec.json").read_text())
for path in spec:
    try:
        pathlib.Path(path).write_text("written\\n")
        print("wrote", path)
    except OSError as exc:
        print("refused", path, exc.strerror)
"""


def test_writable_paths_are_writable_and_the_reports_root_never(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    needs_bwrap("bwrap")
    home = tmp_path / "home"
    (home / ".fakecli").mkdir(parents=True)
    (home / "elsewhere").mkdir()
    reports = home / "reports"  # under a writable path, yet protected
    (reports / ".state").mkdir(parents=True)
    (reports / ".state" / "seal.key").write_text("secret\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("FAKECLI_HOME", raising=False)
    wanted = [home / ".fakecli" / "state.json", home / "elsewhere" / "x", reports / "seal.key"]
    stand_in(
        bin_dir,
        "fakecli",
        "import json\n"
        + WRITE_STATE
        + f"print('seal key visible:', os.path.exists({str(reports / '.state' / 'seal.key')!r}))",
    )
    (bin_dir / "spec.json").write_text(json.dumps([str(p) for p in wanted]))
    settings = tier("fakecli", writable=["~/.fakecli", "$FAKECLI_HOME/state", "~/reports"])
    out = run_fixer("claude", settings, prompt_file, ["app.py"], workdir,
                    containment=sandbox.Containment("bwrap", protect=(str(reports),),
                                                    hide=(str(reports / ".state"),)))  # fmt: skip
    assert out.ok and out.contained is True, out.infra_error
    assert (home / ".fakecli" / "state.json").read_text() == "written\n"
    assert not (home / "elsewhere" / "x").exists() and not (reports / "seal.key").exists()
    assert f"refused {reports / 'seal.key'} Read-only file system" in out.notes
    assert "seal key visible: False" in out.notes
    assert (reports / ".state" / "seal.key").read_text() == "secret\n"


def test_writable_entries_expand_home_and_variables() -> None:
    env = {"HOME": "/home/u", "CODEX_HOME": "/srv/codex"}
    got = sandbox.expand(["${CODEX_HOME}", "$CODEX_HOME", "$UNSET/x", "/abs", ""], env)
    assert got == ["/srv/codex", "/abs"]
    assert sandbox.expand(["~/.claude"]) == [os.path.expanduser("~/.claude")]


# A bwrap that cannot create namespaces, as in an unprivileged container (its real message).
NO_NAMESPACES = (
    "if sys.argv[1:] == ['--version']:\n    print('bubblewrap 0.8.0'); sys.exit(0)\n"
    "sys.stderr.write('bwrap: No permissions to creating new namespace, likely because the "
    "kernel does not allow non-privileged user namespaces.\\n'); sys.exit(1)"
)


def test_where_bwrap_cannot_run_auto_falls_back_and_bwrap_mode_refuses(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path, cli: Cli, root: Root,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    root.ensure()
    stand_in(bin_dir, "bwrap", NO_NAMESPACES)
    stand_in(
        bin_dir,
        "fixer",
        "p = pathlib.Path(sys.argv[-1]); p.write_text(p.read_text().replace('-', '+'))",
    )
    found = sandbox.probe()
    assert not found.ok and "No permissions to creating new namespace" in (found.reason or "")
    auto = run_fixer("aider", tier("fixer"), prompt_file, ["app.py"], workdir)
    assert auto.ok and (auto.contained, auto.sandbox) == (False, "detection")
    assert auto.changed_files == ["app.py"]
    attempt = auto.ai_attempt(1, "error_report_attempt_0")
    assert (attempt.contained, attempt.sandbox) == (False, "detection")
    required = run_fixer("aider", tier("fixer"), prompt_file, ["app.py"], workdir,
                         containment=sandbox.Containment("bwrap"))  # fmt: skip
    assert required.exit_code is None and not required.ok
    assert required.infra_error is not None
    assert '[tiers] sandbox = "bwrap" but bubblewrap cannot run' in required.infra_error
    assert "No permissions to creating new namespace" in required.infra_error

    for mode, level in (("auto", "warn"), ("bwrap", "fail")):
        (tmp_path / "incidents.toml").write_text(f'[tiers]\nsandbox = "{mode}"\n')
        monkeypatch.setenv("INCIDENTS_CONFIG", str(tmp_path / "incidents.toml"))
        by = {f["check"]: f for f in json.loads(cli("doctor", "--json").out)}
        assert by["containment"]["level"] == level
        assert "bubblewrap unavailable: " in by["containment"]["detail"]
        if mode == "auto":
            assert (
                "fixers run with detection only (contained: false)" in by["containment"]["detail"]
            )
            assert_warns_root_writable(cli, root)


def assert_warns_root_writable(cli: Cli, root: Root) -> None:
    """With detection only, doctor says plainly that fixers can write the reports root."""
    r = cli("doctor")
    assert (
        f"WARN root-writable: fixers run as uid {os.getuid()}, which can write the reports root "
        f"{root.path}" in r.out
    ), r.out
    assert "under bubblewrap the root is read-only to fixers" in r.out


def test_doctor_warns_that_fixers_without_a_sandbox_can_write_the_root(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root.ensure()
    (tmp_path / "incidents.toml").write_text('[tiers]\nsandbox = "none"\n')
    monkeypatch.setenv("INCIDENTS_CONFIG", str(tmp_path / "incidents.toml"))
    assert_warns_root_writable(cli, root)


def test_doctor_names_the_bubblewrap_in_use(cli: Cli, root: Root) -> None:
    needs_bwrap("bwrap")
    root.ensure()
    r = cli("doctor")
    assert f"ok   containment: fixers run under bubblewrap ({sandbox.probe().label})" in r.out


def test_an_unknown_sandbox_mode_is_a_config_error(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "incidents.toml").write_text('[tiers]\nsandbox = "docker"\n')
    monkeypatch.setenv("INCIDENTS_CONFIG", str(tmp_path / "incidents.toml"))
    r = cli("status")
    assert r.code != 0 and "tiers.sandbox" in r.err and "Traceback" not in r.err


def test_a_target_rewritten_by_rename_is_an_ordinary_edit(
    bin_dir: Path, workdir: Path, prompt_file: Path
) -> None:
    stand_in(bin_dir, "renamer",
             "p = pathlib.Path(sys.argv[-1]); t = p.with_suffix('.tmp')\n"
             "t.write_text(p.read_text().replace('-', '+')); os.replace(t, p)")  # fmt: skip
    out = run_fixer("aider", tier("renamer"), prompt_file, ["app.py"], workdir)
    assert out.ok and out.changed_files == ["app.py"] and out.violations == []
    assert "a + b" in (workdir / "app.py").read_text()


REMOUNT = """
import subprocess
status = pathlib.Path("/proc/self/status").read_text()
caps = [line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")]
remount = subprocess.run(["mount", "-o", "remount,bind,rw", "/"], capture_output=True)
try:
    pathlib.Path(os.environ["ESCAPE_TO"]).write_text("escaped\\n")
    wrote = "wrote"
except OSError as exc:
    wrote = exc.strerror
pathlib.Path(sys.argv[-1]).write_text(f"caps={caps[0]} remount={remount.returncode} {wrote}\\n")
"""


def test_a_fixer_run_as_root_keeps_no_capability_to_remount_its_way_out(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """As root (the service's account on many hosts, and in CI), a fixer under bubblewrap
    must not keep the capabilities to remount `/` read-write and write outside."""
    needs_bwrap("bwrap")
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount(8) to show that root's capabilities are dropped")
    escape = tmp_path / "escaped.txt"
    monkeypatch.setenv("ESCAPE_TO", str(escape))
    stand_in(bin_dir, "remounter", REMOUNT)
    settings = tier("remounter").model_copy(update={"env": ["ESCAPE_TO"]})
    out = run_fixer("aider", settings, prompt_file, ["app.py"], workdir,
                    containment=sandbox.Containment("bwrap"))  # fmt: skip
    assert out.ok, out.infra_error
    report = (workdir / "app.py").read_text()
    assert report.startswith("caps=0000000000000000 ") and " remount=0 " not in report, report
    assert not escape.exists()


def test_a_change_outside_the_targets_that_cannot_be_put_back_fails_the_attempt(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path
) -> None:
    """A file too large for the snapshot to keep (over 4 MiB) edited by the fixer stays
    edited: the recheck would judge it, so the attempt cannot stand."""
    table = workdir / "table.py"
    table.write_text("EXPECTED = 3\n" + "# padding\n" * 500_000)
    stand_in(bin_dir, "bigedit", "p = pathlib.Path('table.py'); "
             "p.write_text(p.read_text().replace('EXPECTED = 3', 'EXPECTED = -1'))")  # fmt: skip
    out = run_fixer("aider", tier("bigedit"), prompt_file, ["app.py"], workdir,
                    containment=sandbox.Containment("none", aside=str(tmp_path / "a")))  # fmt: skip
    assert out.violations == ["table.py"] and out.unreverted == ["table.py"]
    assert out.infra_error is not None and "could not be put back: table.py" in out.infra_error


def test_a_folder_swapped_for_a_symlink_loses_no_file(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path
) -> None:
    src = workdir / "src"
    src.mkdir()
    (src / "calc.py").write_text(BROKEN)
    stand_in(bin_dir, "swapdir", "os.rename('src', 'real'); os.mkdir('fake'); "
             "pathlib.Path('fake/calc.py').write_text('fixed = True\\n'); os.symlink('fake', 'src')")  # fmt: skip
    aside = tmp_path / "aside"
    run_fixer("aider", tier("swapdir"), prompt_file, ["src/calc.py"], workdir,
              containment=sandbox.Containment("none", aside=str(aside)))  # fmt: skip
    kept = [p for p in (*workdir.rglob("*"), *aside.rglob("*")) if p.is_file()]
    assert any(p.read_text() == BROKEN for p in kept), kept


def test_the_repository_history_is_read_only_to_a_fixer_under_bubblewrap(
    bin_dir: Path, workdir: Path, prompt_file: Path
) -> None:
    needs_bwrap("bwrap")
    git = workdir / ".git"
    (git / "objects" / "ab").mkdir(parents=True)
    (git / "objects" / "ab" / "cdef").write_bytes(b"blob")
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    stand_in(bin_dir, "gitwrecker", "import contextlib, shutil\n"
             "shutil.rmtree('.git/objects', True)\n"
             "with contextlib.suppress(OSError):\n    pathlib.Path('.git/HEAD').write_text('x')")  # fmt: skip
    out = run_fixer("aider", tier("gitwrecker"), prompt_file, ["app.py"], workdir,
                    containment=sandbox.Containment("bwrap"))  # fmt: skip
    assert out.ok, out.infra_error
    assert (git / "objects" / "ab" / "cdef").read_bytes() == b"blob"
    assert (git / "HEAD").read_text() == "ref: refs/heads/main\n"


# it writes into this venv's real site-packages, whose mtime every check's cache key and
# replay probe read (checks.engine: site_packages stamps): run in parallel, a check elsewhere
# saw its inputs change under it and refused to replay (test_replay failed now and then), so
# it runs with the slow tests, alone
@pytest.mark.slow
def test_a_pth_file_left_in_the_checks_site_packages_is_moved_aside_by_detection(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path
) -> None:
    """Without bubblewrap, a `.pth` in the site-packages of the interpreter the checks run
    with would run in every later check (and could forge its results)."""
    import sysconfig
    import uuid

    pth = Path(sysconfig.get_paths()["purelib"]) / f"zz_incidents_test_{uuid.uuid4().hex}.pth"
    stand_in(bin_dir, "pthwriter", f"pathlib.Path({str(pth)!r}).write_text('# harmless\\n')")
    aside = tmp_path / "aside"
    try:
        out = run_fixer("aider", tier("pthwriter"), prompt_file, ["app.py"], workdir,
                        containment=sandbox.Containment("none", aside=str(aside)))  # fmt: skip
        assert not pth.exists(), "the .pth stayed where every check would run it"
        assert str(pth) in out.violations
        assert any(p.name.endswith(pth.name) for p in aside.iterdir())
    finally:
        pth.unlink(missing_ok=True)


@pytest.mark.parametrize("shebang", ["direct", "env"])
def test_a_fixer_whose_interpreter_lives_under_tmp_still_starts_under_bubblewrap(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path, shebang: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A checkout (and its .venv) under /tmp, as `git clone . /tmp/x` makes: the private
    /tmp must not hide the interpreter a fixer script's `#!` line names."""
    needs_bwrap("bwrap")
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python3").symlink_to(os.path.realpath(sys.executable))
    line = f"#!{venv_bin / 'python3'}" if shebang == "direct" else "#!/usr/bin/env python3"
    if shebang == "env":
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{venv_bin}{os.pathsep}/usr/bin:/bin")
    fixer = bin_dir / "tmpfixer"
    fixer.write_text(
        f"{line}\nimport pathlib, sys\npathlib.Path(sys.argv[-1]).write_text('OK = 1\\n')\n"
    )
    fixer.chmod(0o755)
    assert str(tmp_path).startswith("/tmp/")
    out = run_fixer("aider", tier("tmpfixer"), prompt_file, ["app.py"], workdir,
                    containment=sandbox.Containment("bwrap"))  # fmt: skip
    assert out.ok, out.infra_error
    assert (workdir / "app.py").read_text() == "OK = 1\n"
