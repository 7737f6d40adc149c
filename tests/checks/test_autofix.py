"""Mechanical autofix on real files: safe fixes only, targets only, changes by hash."""

from __future__ import annotations

from pathlib import Path

from incidents.checks.autofix import apply_mechanical_fixes
from incidents.checks.engine import file_digest
from incidents.checks.settings import ChecksSettings

UGLY = "import os\nimport sys\n\n\ndef f():\n    unused = 1\n    return [1,\n  2]\n"


def test_fixes_targets_with_safe_fixes_only(tmp_path: Path, settings: ChecksSettings) -> None:
    (tmp_path / "a.py").write_text(UGLY)
    (tmp_path / "neighbour.py").write_text(UGLY)
    before = file_digest(tmp_path / "a.py")
    result = apply_mechanical_fixes(["a.py"], settings=settings, cwd=tmp_path)
    assert result.ok and result.outside_changes == []
    [changed] = result.changed
    assert (changed.path, changed.before) == ("a.py", before)
    assert changed.after == file_digest(tmp_path / "a.py")
    # unused imports removed (safe) and formatted; `unused = 1` kept (F841's fix is unsafe)
    assert (tmp_path / "a.py").read_text() == "def f():\n    unused = 1\n    return [1, 2]\n"
    assert (tmp_path / "neighbour.py").read_text() == UGLY
    assert [s.tool for s in result.log] == ["ruff", "ruff-format"]
    assert all(s.argv[-1] == "a.py" for s in result.log)


def test_black_when_enabled_and_nothing_to_change(tmp_path: Path, shared_cache: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    settings = ChecksSettings.model_validate(
        {"cache_dir": str(shared_cache), "profiles": {"black": {"enabled": True}}}
    )
    result = apply_mechanical_fixes(["a.py"], settings=settings, cwd=tmp_path)
    assert result.changed == [] and result.ok
    assert [s.tool for s in result.log] == ["ruff", "ruff-format", "black"]


def test_symlinks_are_refused(tmp_path: Path, settings: ChecksSettings) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text(UGLY)
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "link.py").symlink_to(outside)
    result = apply_mechanical_fixes(["link.py"], settings=settings, cwd=tmp_path / "w")
    assert result.skipped == ["link.py"] and result.log == [] and result.changed == []
    assert outside.read_text() == UGLY


def test_a_missing_fixer_is_logged_as_an_error(tmp_path: Path, shared_cache: Path) -> None:
    (tmp_path / "a.py").write_text(UGLY)
    settings = ChecksSettings.model_validate(
        {
            "cache_dir": str(shared_cache),
            "profiles": {"ruff": {"fix_argv": ["no-such-fixer-xyz", "{files}"]}},
        }
    )
    result = apply_mechanical_fixes(["a.py"], settings=settings, cwd=tmp_path, tools=["ruff"])
    assert not result.ok
    assert result.log[0].error == "program not found: no-such-fixer-xyz"
    assert (tmp_path / "a.py").read_text() == UGLY
