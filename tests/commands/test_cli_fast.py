"""The command line starts with only what the called command uses: `status`'s list and
`--help` load neither typer's commands nor the step service, the fleet, serve or the
document models."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

from incidents import cli_help
from incidents.cli import build_app
from incidents.commands import status_cli
from tests.helpers import Cli, capture

HEAVY = ("incidents.step.service", "incidents.fleet", "incidents.serve", "incidents.models",
         "incidents.handoff", "pydantic", "typer")  # fmt: skip


def loaded_by(tmp_path: Path, *args: str) -> list[str]:
    """The heavy modules a real `incidents ARGS` process imported (its exit code 0)."""
    code = (
        "import json, sys\nfrom incidents.cli import main\n"
        f"code = main({list(args)!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    exit_code, modules = json.loads(p.stderr.strip().splitlines()[-1])
    assert exit_code == 0, p.stderr
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_status_list_imports_no_heavy_module(cli: Cli, tmp_path: Path) -> None:
    incident = capture(cli, message="m")
    assert loaded_by(tmp_path, "status") == []
    assert loaded_by(tmp_path, "status", "--json", "--all") == []
    assert loaded_by(tmp_path, "--help") == []
    # positive control: one incident in full reads its documents with the models
    assert "incidents.models" in loaded_by(tmp_path, "status", incident)


def test_help_is_the_apps_own(cli: Cli) -> None:
    assert cli_help.stored() == cli_help.render(), "run: python -m incidents.cli_help"
    r = cli("--help")
    assert r.code == 0 and r.out == cli_help.stored()
    assert cli().out == r.out


def test_version(cli: Cli) -> None:
    r = cli("--version")
    assert (r.code, r.out) == (0, f"incidents {importlib.metadata.version('incidents')}\n")


def test_status_reads_the_same_options_as_the_typer_command() -> None:
    import typer.main

    command = typer.main.get_command(build_app("status"))
    typed = command.commands["status"]  # type: ignore[attr-defined]
    typed_opts = {o for p in typed.params for o in p.opts if o.startswith("-")}
    parsed = {o for a in status_cli.build_parser()._actions for o in a.option_strings}
    assert typed_opts - {"--help"} == parsed - {"-h", "--help"}


def test_every_command_starts_with_its_own_module_alone() -> None:
    import typer.main

    from incidents.cli import COMMAND_HOMES, LEAN_COMMANDS

    def names(app: object) -> set[str]:
        group = typer.main.get_command(app)  # type: ignore[arg-type]
        return set(group.commands)  # type: ignore[attr-defined]

    every = names(build_app())
    assert every - set(LEAN_COMMANDS) <= set(COMMAND_HOMES), "add the command to COMMAND_HOMES"
    for name in every - set(LEAN_COMMANDS):
        assert name in names(build_app(name))
