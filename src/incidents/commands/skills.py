"""`incidents skills list|show|install`: the agent skills shipped with incidents."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from incidents import agent_skills, output
from incidents.commands.common import JsonOpt
from incidents.errors import UsageError

DirArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="DIR",
        help="The skills folder to install into (default: .claude/skills of this folder).",
        show_default=False,
    ),
]


def _install(directory: Path | None, user: bool, force: bool, as_json: bool) -> int:
    if directory is not None and user:
        raise UsageError("skills install: give DIR or --user, not both")
    dest = agent_skills.user_dir() if user else directory or agent_skills.PROJECT_DIR
    done = agent_skills.install(dest, force=force)
    if as_json:
        rows = [{"name": d.name, "path": str(d.path), "action": d.action} for d in done]
        output.out_json({"dir": str(dest), "skills": rows})
    else:
        for d in done:
            output.out(f"{d.name}: {d.action} {d.path}")
    return 0


def register(app: typer.Typer) -> None:
    skills = typer.Typer(
        help="The agent skills shipped with incidents (error-plan, error-exec-loop).",
        no_args_is_help=True,
    )

    @skills.command("list")
    def list_cmd(as_json: JsonOpt = False) -> int:
        """The shipped skills: name and when an agent uses it."""
        found = agent_skills.shipped()
        if as_json:
            output.out_json([{"name": s.name, "description": s.description} for s in found])
        else:
            for s in found:
                output.out(f"{s.name}: {s.description}")
        return 0

    @skills.command("show")
    def show_cmd(name: Annotated[str, typer.Argument(metavar="NAME")]) -> int:
        """Print a skill's SKILL.md (for an agent that reads no skills folder)."""
        output.out(agent_skills.get(name).text.rstrip("\n"))
        return 0

    @skills.command("install")
    def install_cmd(
        directory: DirArg = None,
        user: Annotated[
            bool, typer.Option("--user", help="Into ~/.claude/skills (every project).")
        ] = False,
        force: Annotated[
            bool, typer.Option("--force", help="Replace installed skills that differ from ours.")
        ] = False,
        as_json: JsonOpt = False,
    ) -> int:
        """Copy the skills where agents look for them: DIR/<name>/SKILL.md.

        Refuses (exit 2, nothing written) to replace a skill that differs from this
        version's unless --force; an identical one is left as it is.
        """
        return _install(directory, user, force, as_json)

    app.add_typer(skills, name="skills")
