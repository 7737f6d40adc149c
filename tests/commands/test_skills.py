"""`incidents skills list|show|install`: the shipped skills copied where agents look,
never over a skill someone changed unless forced, nothing written when refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from incidents import agent_skills
from tests.helpers import Cli, incidents, tree
from tests.skills.play import SKILLS

NAMES = list(agent_skills.NAMES)


def shipped(name: str) -> bytes:
    return (SKILLS / name / "SKILL.md").read_bytes()


def test_install_copies_every_skill_then_leaves_them_as_they_are(cli: Cli, tmp_path: Path) -> None:
    dest = tmp_path / "agent" / "skills"
    r = cli("skills", "install", str(dest))
    assert r.code == 0, r.err
    assert r.out.splitlines() == [f"{name}: installed {dest / name / 'SKILL.md'}" for name in NAMES]
    for name in NAMES:
        installed = dest / name / "SKILL.md"
        assert installed.read_bytes() == shipped(name)
        assert installed.stat().st_mode & 0o777 == 0o644 & ~_umask()
    assert sorted(p.name for p in dest.iterdir()) == sorted(NAMES)  # no temp file left
    r = cli("skills", "install", str(dest), "--json")
    assert r.code == 0 and [s["action"] for s in r.json()["skills"]] == ["unchanged"] * 2


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_changed_skill_is_not_replaced_without_force_and_nothing_is_written(
    cli: Cli, tmp_path: Path
) -> None:
    dest = tmp_path / "skills"
    assert cli("skills", "install", str(dest)).code == 0
    edited = dest / "error-exec-loop" / "SKILL.md"
    edited.write_text(edited.read_text() + "\nour own note\n")
    (dest / "error-plan" / "SKILL.md").unlink()  # would be installed, but the refusal is whole
    before = tree(dest)
    r = cli("skills", "install", str(dest))
    assert r.code == 2 and r.out == ""
    assert r.err == (
        f"incidents: {edited} differs from the error-exec-loop skill of this incidents "
        "(edited, or of another version); not replacing it (--force replaces it)\n"
    )
    assert tree(dest) == before
    r = cli("skills", "install", str(dest), "--force")
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        f"error-plan: installed {dest / 'error-plan' / 'SKILL.md'}",
        f"error-exec-loop: replaced {edited}",
    ]
    assert edited.read_bytes() == shipped("error-exec-loop")


def test_install_defaults_to_the_project_folder_and_user_to_home(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli("skills", "install").code == 0  # the tests run in tmp_path
    assert (tmp_path / ".claude" / "skills" / "error-plan" / "SKILL.md").is_file()
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    r = cli("skills", "install", "--user")
    assert r.code == 0 and str(home / ".claude" / "skills" / "error-exec-loop") in r.out
    r = cli("skills", "install", str(tmp_path / "x"), "--user")
    assert r.code == 2 and r.err == "incidents: skills install: give DIR or --user, not both\n"
    assert not (tmp_path / "x").exists()


def test_install_refuses_what_is_not_a_folder_or_a_regular_file(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    r = cli("skills", "install", str(tmp_path / "file"))
    assert r.code == 2
    assert r.err == f"incidents: skills install: {tmp_path / 'file'} exists and is not a folder\n"
    dest = tmp_path / "skills"
    (dest / "error-plan").mkdir(parents=True)
    (tmp_path / "elsewhere.md").write_text("someone's file\n")
    (dest / "error-plan" / "SKILL.md").symlink_to(tmp_path / "elsewhere.md")
    r = cli("skills", "install", str(dest), "--force")
    assert r.code == 2 and "is not a regular file; not replacing it" in r.err
    assert (tmp_path / "elsewhere.md").read_text() == "someone's file\n"
    assert not (dest / "error-exec-loop").exists()  # nothing written


def test_list_and_show(cli: Cli) -> None:
    r = cli("skills", "list", "--json")
    assert [s["name"] for s in r.json()] == NAMES
    assert all(s["description"].startswith(("Write", "Work")) for s in r.json())
    assert cli("skills", "list").out.startswith("error-plan: Write or replace the remediation plan")
    for name in NAMES:
        r = cli("skills", "show", name)
        assert r.code == 0 and r.out.encode() == shipped(name)  # exactly, commands unchanged
    r = cli("skills", "show", "nope")
    assert r.code == 2
    assert r.err == "incidents: no skill 'nope': the skills are error-plan, error-exec-loop\n"


def test_install_as_a_real_process(tmp_path: Path) -> None:
    p = incidents("skills", "install", str(tmp_path / "s"), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["dir"] == str(tmp_path / "s") and len(doc["skills"]) == 2
