"""Commands that only read never create a reports root: a root that does not exist is
`no reports root at PATH`, exit 1, and nothing appears on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import Cli

READ_ONLY = [
    ("status",),
    ("status", "--json"),
    ("status", "--all"),
    ("status", "incident_20260101_000000_build_abcdef"),
    ("explain", "incident_20260101_000000_build_abcdef"),
    ("review",),
    ("review", "--stdout"),
    ("doctor",),
    ("verify-archive",),
    ("next", "--json"),
]


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_a_mistyped_root_is_an_error_and_nothing_is_created(
    cli: Cli, tmp_path: Path, args: tuple[str, ...]
) -> None:
    missing = tmp_path / "srv" / "repots"
    r = cli(*args, "--root", str(missing))
    assert r.code == 1, r
    assert f"no reports root at {missing}" in r.err
    assert not (tmp_path / "srv").exists()


@pytest.mark.parametrize("args", READ_ONLY[:3], ids=" ".join)
def test_the_default_root_is_not_created_in_another_folder(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("INCIDENTS_ROOT")
    r = cli(*args)
    assert r.code == 1 and f"no reports root at {elsewhere / 'reports'}" in r.err
    assert os.listdir(elsewhere) == []


def test_an_existing_empty_root_is_listed(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()  # positive control: an empty root is an all-clear
    r = cli("status")
    assert r.code == 0 and "no open incidents" in r.out
