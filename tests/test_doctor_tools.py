"""doctor speaks only of the tools in use: a default nobody chose whose program is not
installed (the PowerShell checks without pwsh) is not a warning; the same tool named in
`[checks] tools` is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import Cli, capture


@pytest.fixture
def no_pwsh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python, ruff, mypy


def test_a_default_tool_nobody_chose_is_not_warned_about(
    cli: Cli, root: Root, no_pwsh: None
) -> None:
    capture(cli, message="m")
    r = cli("doctor", "--json")
    tools = {f["check"]: f for f in r.json() if f["check"].startswith("tool ")}
    assert "tool ruff" in tools  # positive control: the tools in use are checked
    assert not any("pwsh" in f["detail"] for f in r.json()), tools
    assert "pwsh" not in cli("doctor").out


def test_a_chosen_tool_without_its_program_is_warned_about(
    cli: Cli, root: Root, tmp_path: Path, no_pwsh: None
) -> None:
    capture(cli, message="m")
    (tmp_path / "incidents.toml").write_text('[checks]\ntools = ["ruff", "pester"]\n')
    r = cli("doctor", "--json")
    [pester] = [f for f in r.json() if f["check"] == "tool pester"]
    assert pester["level"] == "warn" and "pwsh" in pester["detail"]
