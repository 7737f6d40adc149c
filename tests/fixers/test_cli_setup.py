"""What a real CLI needs from the runner, with small stand-ins where the shape is the point:
its state folders created private before the sandbox binds them, an install behind a chain
of links under /tmp with its package root, one clear line when bubblewrap cannot show the
program, `{own_sandbox}`, literal braces, variables set by default, and a repository a
fixer creates removed with its other stray changes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from incidents.fixers import TierSettings, TiersSettings, render_argv, run_fixer, sandbox
from tests.debian import bubblewrap_or_skip
from tests.stand_ins import stand_in

BROKEN = "def add(a, b):\n    return a - b\n"
FIX = "p = pathlib.Path(sys.argv[-1]); p.write_text(p.read_text().replace('a - b', 'a + b'))"


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
    path.write_text("fix app.py\nthe secret plan of the prompt\n")
    return path


def contained(mode: str) -> sandbox.Containment:
    if mode == "bwrap":
        bubblewrap_or_skip()
    return sandbox.Containment(mode)


WRITE_STATE = """
home = pathlib.Path(os.environ["HOME"])
(home / ".tool" / "session").write_text("s")
json.loads((home / ".tool.json").read_text())
(home / ".tool.json").write_text('{"seen": 1}')
(pathlib.Path(os.environ["TOOL_HOME"]) / "auth").write_text("a")
""" + FIX


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_missing_state_folders_and_files_are_created_private_before_the_run(
    bin_dir: Path,
    workdir: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TOOL_HOME", str(home / "custom" / "toolhome"))
    stand_in(bin_dir, "tool", "import json\n" + WRITE_STATE)
    settings = TierSettings(
        argv=["tool", "{files}"],
        timeout_s=20,
        env=["TOOL_HOME"],
        writable=["~/.tool", "~/.tool.json", "${TOOL_HOME:-~/.toolhome}", "${NOPE:-~/.dflt}"],
    )
    out = run_fixer(
        "aider", settings, prompt_file, ["app.py"], workdir, containment=contained(mode)
    )
    assert out.ok, (out.infra_error, out.notes)
    assert (workdir / "app.py").read_text() != BROKEN
    assert os.stat(home / ".tool").st_mode & 0o777 == 0o700
    assert os.stat(home / ".tool.json").st_mode & 0o777 == 0o600
    assert (home / ".tool.json").read_text() == '{"seen": 1}'
    assert (home / "custom" / "toolhome" / "auth").read_text() == "a"
    assert (home / ".dflt").is_dir() and not (home / ".toolhome").exists()


def test_writable_entries_take_a_default_for_an_unset_variable() -> None:
    env = {"HOME": "/home/u", "SET": "/srv/x"}
    got = sandbox.expand(["${SET:-~/.a}", "${UNSET:-~/.b}", "${UNSET}", "${EMPTY:-/c}"], env)
    assert got == ["/srv/x", os.path.expanduser("~/.b"), "/c"]


def test_an_npm_install_under_tmp_behind_links_starts_with_its_package_root(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path
) -> None:
    """bin/tool -> node_modules/.bin/tool -> ../@x/tool/bin/tool.js, which needs its
    platform package beside it (node_modules/@x/tool-linux-x64), all under /tmp."""
    bubblewrap_or_skip()
    modules = tmp_path / "pkg" / "node_modules"
    (modules / "@x" / "tool" / "bin").mkdir(parents=True)
    (modules / "@x" / "tool-linux-x64").mkdir(parents=True)
    (modules / "@x" / "tool-linux-x64" / "payload.txt").write_text("a + b")
    (modules / ".bin").mkdir()
    entry = modules / "@x" / "tool" / "bin" / "tool.js"
    entry.write_text(
        f"#!{sys.executable}\nimport pathlib, sys\n"
        "here = pathlib.Path(__file__).resolve().parent.parent.parent\n"
        "payload = (here / 'tool-linux-x64' / 'payload.txt').read_text()\n"
        "p = pathlib.Path(sys.argv[-1]); p.write_text(p.read_text().replace('a - b', payload))\n"
    )
    entry.chmod(0o755)
    (modules / ".bin" / "tool").symlink_to("../@x/tool/bin/tool.js")
    (bin_dir / "tool").symlink_to(modules / ".bin" / "tool")
    assert str(tmp_path).startswith("/tmp/")
    out = run_fixer(
        "codex",
        TierSettings(argv=["tool", "{files}"], timeout_s=20),
        prompt_file,
        ["app.py"],
        workdir,
        containment=sandbox.Containment("bwrap"),
    )
    assert out.ok, out.infra_error
    assert (workdir / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert str(modules) in sandbox.program_paths(str(bin_dir / "tool"))


def test_a_program_the_sandbox_cannot_show_is_named_in_one_line(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path
) -> None:
    """An interpreter reached through a link whose own folder lies under /tmp and is not on
    any path we know to show: bubblewrap's execvp fails, and the reason says so."""
    bubblewrap_or_skip()
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "py").symlink_to(os.path.realpath(sys.executable))
    (tmp_path / "a" / "b" / "py").symlink_to(tmp_path / "real" / "py")
    fixer = bin_dir / "hidden"
    fixer.write_text(f"#!{tmp_path / 'a' / 'b' / 'py'}\nprint('ran')\n")
    fixer.chmod(0o755)
    out = run_fixer(
        "aider",
        TierSettings(argv=["hidden"], timeout_s=20),
        prompt_file,
        ["app.py"],
        workdir,
        containment=sandbox.Containment("bwrap"),
    )
    assert out.infra_error is not None
    assert out.infra_error.startswith(f"the sandbox cannot show the program {fixer}")
    assert "\n" not in out.infra_error


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_own_sandbox_is_danger_full_access_only_inside_bubblewrap(
    bin_dir: Path, workdir: Path, prompt_file: Path, mode: str
) -> None:
    stand_in(bin_dir, "codex", "print(sys.argv[1:])")
    settings = TierSettings(argv=["codex", "--sandbox", "{own_sandbox}"], timeout_s=20)
    out = run_fixer("x", settings, prompt_file, ["app.py"], workdir, containment=contained(mode))
    want = "danger-full-access" if mode == "bwrap" else "workspace-write"
    assert out.ok and f"'--sandbox', '{want}'" in out.notes, out.notes
    assert out.argv == ["codex", "--sandbox", want]


def test_doubled_braces_are_literal_braces(tmp_path: Path) -> None:
    template = ["codex", "-c", 'p={{ name = "m", url = "{workdir}" }}', "{{files}}", "{files}"]
    TierSettings(argv=template)  # accepted
    argv = render_argv(template, tmp_path / "p.md", "x", ["a.py"], tmp_path)
    assert argv == ["codex", "-c", f'p={{ name = "m", url = "{tmp_path}" }}', "{files}", "a.py"]
    with pytest.raises(ValidationError, match="unknown placeholder"):
        TierSettings(argv=["codex", "{{{nope}}}"])


def test_variables_set_by_default_give_way_to_the_users(
    bin_dir: Path, workdir: Path, prompt_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in(bin_dir, "claude", "print(os.environ.get('RETRIES'), os.environ.get('QUIET'))")
    settings = TierSettings(
        argv=["claude"], timeout_s=20, env=["RETRIES"], env_defaults={"RETRIES": "2", "QUIET": "1"}
    )
    monkeypatch.setenv("RETRIES", "5")
    out = run_fixer(
        "x", settings, prompt_file, ["app.py"], workdir, containment=sandbox.Containment("none")
    )
    assert out.notes == "5 1"
    defaults = TiersSettings()
    assert defaults.claude.env_defaults["CLAUDE_CODE_MAX_RETRIES"]
    assert defaults.aider.env_defaults["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_a_repository_the_fixer_creates_is_removed_and_an_existing_one_kept(
    bin_dir: Path, workdir: Path, prompt_file: Path, tmp_path: Path, mode: str
) -> None:
    stand_in(
        bin_dir,
        "aider",
        "import subprocess\nsubprocess.run(['git', 'init', '-q'])\n"
        "pathlib.Path('.gitignore').write_text('.aider*\\n')\n" + FIX,
    )
    aside = tmp_path / "aside"
    out = run_fixer(
        "aider",
        TierSettings(argv=["aider", "{files}"], timeout_s=20),
        prompt_file,
        ["app.py"],
        workdir,
        containment=sandbox.Containment(contained(mode).mode, aside=str(aside)),
    )
    assert out.ok, out.infra_error
    assert sorted(os.listdir(workdir)) == ["app.py"], os.listdir(workdir)
    assert ".git (a repository the fixer created)" in out.violations
    assert out.changed_files == ["app.py"] and out.unreverted == []
    # a repository that was there before is the caller's: left as it was
    (workdir / "app.py").write_text(BROKEN)
    (workdir / ".git").mkdir()
    (workdir / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    out = run_fixer(
        "aider",
        TierSettings(argv=["aider", "{files}"], timeout_s=20),
        prompt_file,
        ["app.py"],
        workdir,
        containment=sandbox.Containment("none"),
    )
    assert (workdir / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert not any(".git (a repository" in v for v in out.violations)


def test_a_failure_reason_falls_back_to_stdout_and_never_echoes_the_prompt(
    bin_dir: Path, workdir: Path, prompt_file: Path
) -> None:
    body = (
        "print(sys.stdin.read()); print('connection refused by the model server'); " "sys.exit(3)"
    )
    stand_in(bin_dir, "codex", body)
    settings = TierSettings(argv=["codex"], stdin="prompt", timeout_s=20)
    out = run_fixer(
        "x", settings, prompt_file, ["app.py"], workdir, containment=sandbox.Containment("none")
    )
    assert out.infra_error is not None
    assert "connection refused by the model server" in out.infra_error
    assert "secret plan" not in out.infra_error


def test_a_file_the_tiers_environment_names_is_readable_under_bubblewrap(
    bin_dir: Path,
    workdir: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """aider's AIDER_MODEL_METADATA_FILE (its model's prices: the attempt's spend) lying
    under /tmp, hidden by the private /tmp unless shown."""
    bubblewrap_or_skip()
    meta = tmp_path / "settings" / "meta.json"
    meta.parent.mkdir()
    meta.write_text("a + b")
    monkeypatch.setenv("TOOL_META", str(meta))
    stand_in(
        bin_dir,
        "tool",
        "p = pathlib.Path(sys.argv[-1]); "
        "p.write_text(p.read_text().replace('a - b', open(os.environ['TOOL_META']).read()))",
    )
    settings = TierSettings(argv=["tool", "{files}"], timeout_s=20, env=["TOOL_META"])
    out = run_fixer(
        "aider",
        settings,
        prompt_file,
        ["app.py"],
        workdir,
        containment=sandbox.Containment("bwrap"),
    )
    assert out.ok, out.infra_error
    assert (workdir / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
