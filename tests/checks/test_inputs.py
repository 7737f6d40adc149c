"""Where the engine looks for the inputs of batch tools (incidents.checks.inputs), on real
folders: which source trees it walks and which config paths it asks about."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from incidents.checks import inputs
from incidents.checks.inputs import config_paths, tree_digest, tree_roots


def touch(root: Path, *rels: str) -> None:
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")


def test_roots_are_cwd_and_the_folders_a_walk_of_it_misses(tmp_path: Path) -> None:
    cwd = tmp_path / "app"
    touch(tmp_path, "lib/pkg/__init__.py", "lib/pkg/a.py", "app/.ci/sub/b.py", "app/src/c.py")
    starts = ["src", "../lib/pkg", ".ci", ".ci/sub", ".ci/sub/.deep", "../lib/pkg/inner"]
    assert tree_roots(str(cwd), starts) == [
        str(cwd),
        str(cwd / ".ci"),  # hidden: walked whole; .ci/sub is in that walk
        str(cwd / ".ci/sub/.deep"),  # hidden below a root: that walk skips it
        str(tmp_path / "lib"),  # lib/pkg is a package: its parent is on sys.path
    ]
    # a hidden package inside cwd rises to the folder below cwd
    touch(cwd, ".ci/sub/__init__.py", ".ci/__init__.py")
    assert tree_roots(str(cwd), [".ci/sub"]) == [str(cwd), str(cwd / ".ci")]
    # cwd itself inside a package: imports resolve from above it, as mypy does, so that
    # is walked too (the hidden folder still on its own: the walk from above skips it)
    touch(cwd, "__init__.py")
    assert tree_roots(str(cwd), [".ci/sub"]) == [str(tmp_path), str(cwd / ".ci")]


def test_a_hidden_root_is_walked_but_not_the_hidden_folders_below_it(tmp_path: Path) -> None:
    touch(tmp_path, ".ci/run.py", ".ci/.cache/junk.py", "pkg/a.py", "pkg/data.txt")
    digest = tree_digest(str(tmp_path), "*.py", ".ci")
    (tmp_path / ".ci/.cache/junk.py").write_text("changed\n")
    assert tree_digest(str(tmp_path), "*.py", ".ci") == digest
    (tmp_path / "pkg/data.txt").write_text("changed\n")
    assert tree_digest(str(tmp_path), "*.py", ".ci") == digest  # by content: .py files only
    with_stat = tree_digest(str(tmp_path), "*.py", ".ci", "stat")
    os.utime(tmp_path / "pkg/data.txt", ns=(1, 1))
    assert tree_digest(str(tmp_path), "*.py", ".ci", "stat") != with_stat
    (tmp_path / ".ci/run.py").write_text("changed\n")
    assert tree_digest(str(tmp_path), "*.py", ".ci") != digest


def test_too_many_files_is_no_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(tmp_path, "a.py", "b.txt", "c.txt")
    monkeypatch.setattr(inputs, "TREE_MAX_FILES", 2)
    assert tree_digest(str(tmp_path), "*.py", "") is not None
    assert tree_digest(str(tmp_path), "*.py", "", "stat") is None


def test_config_paths_cover_every_folder_up_to_the_root_once(tmp_path: Path) -> None:
    cwd = str(tmp_path / "repo/app")
    paths = config_paths(cwd, ["pkg", "pkg/sub", "../lib"], ["ruff.toml", "~/.mypy.ini"])
    folders = [os.path.dirname(p) for p in paths[:-1]]
    assert len(folders) == len(set(folders))
    assert {cwd, f"{cwd}/pkg", f"{cwd}/pkg/sub", str(tmp_path / "repo/lib"), "/"} <= set(folders)
    assert all(os.path.basename(p) == "ruff.toml" for p in paths[:-1])
    assert paths[-1] == os.path.expanduser("~/.mypy.ini")
