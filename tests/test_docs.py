"""The README stays true: its config example loads, and every command is documented and
has help."""

from __future__ import annotations

import re
from pathlib import Path

from incidents.cli import build_app
from incidents.config import load_config
from tests.helpers import REPO

README = (REPO / "README.md").read_text()


def commands() -> list[tuple[str, str]]:
    import typer.core
    import typer.main

    group = typer.main.get_command(build_app())
    assert isinstance(group, typer.core.TyperGroup)
    return [(name, cmd.help or "") for name, cmd in group.commands.items()]


def test_the_readme_config_example_is_valid(tmp_path: Path) -> None:
    block = re.search(r"## Configuration.*?```toml\n(.*?)```", README, re.S)
    assert block is not None
    (tmp_path / "example.toml").write_text(block.group(1))
    cfg = load_config(str(tmp_path / "example.toml"))
    assert cfg.policy.signature_budget == 3


def test_every_command_has_help_and_a_readme_entry() -> None:
    found = commands()
    assert len(found) >= 10
    for name, help_text in found:
        assert help_text.strip(), f"`incidents {name}` has no help"
        assert (
            f"incidents {name}" in README or f"### {name}" in README or f", {name}" in README
        ), f"`incidents {name}` is not documented in README.md"


def test_quick_start_leads_with_run_and_has_exactly_the_two_commands() -> None:
    """The quick start opens with `incidents run -- CMD`, no flags (the plain path), and
    its set-up block is the two commands: the demo and the whole test suite."""
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, re.S)
    assert blocks and blocks[0].startswith("incidents run --step ")
    setup = [b for b in blocks if "make " in b]
    assert len(setup) == 1
    lines = [ln.split("#")[0].strip() for ln in setup[0].splitlines() if ln.strip()]
    assert lines == ["make demo", "make test"]


def test_the_readme_bundle_file_table_is_the_one_in_code() -> None:
    """One table of caps (issue 15): README's and `bundle_files.RULES` say the same."""
    from incidents.bundle_files import OTHER_MAX_BYTES, RULES

    section = README.split("#### Bundle files", 1)[1].split("\n\n", 3)[2]
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}
    shown: dict[str, int] = {}
    for line in section.splitlines()[2:]:
        name, cap = (cell.strip().strip("`") for cell in line.strip("|").split("|")[:2])
        number, unit = cap.split()
        shown[name] = int(number) * units[unit]
    assert shown.pop("any other file") == OTHER_MAX_BYTES
    assert shown == {name: cap for name, (cap, _) in RULES.items()}
