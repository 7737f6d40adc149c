"""`incidents step ID`, `incidents error-step --run-id R --ws-id W` and `incidents drive ID`."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import typer

from incidents import output
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root
from incidents.step.outcome import StepOutcome
from incidents.step.service import drive, find_by_run, run_step


def _json(outcome: StepOutcome) -> dict[str, Any]:
    doc = asdict(outcome)
    doc["not_before"] = outcome.not_before.isoformat() if outcome.not_before else None
    return doc


def _show(outcome: StepOutcome, as_json: bool) -> None:
    if as_json:
        output.out_json(_json(outcome))
    else:
        output.out(outcome.line())


IdArg = Annotated[str, typer.Argument(metavar="ID", help="The incident.")]


def register(app: typer.Typer) -> None:
    @app.command("step")
    def step(
        incident_id: IdArg, root: RootOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False
    ) -> int:
        """Advance one incident by one step of the escalation machine."""
        session = open_root(root, config)
        _show(run_step(session.root, session.config, incident_id), as_json)
        return 0

    @app.command("error-step")
    def error_step(
        run_id: Annotated[str, typer.Option("--run-id", help="The incident's run_id.")],
        ws_id: Annotated[str, typer.Option("--ws-id", help="The workstream (= incident) id.")],
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Seed 000's form of `step`: one tick for (run_id, workstream_id)."""
        session = open_root(root, config)
        incident_id = find_by_run(session.root, run_id, ws_id)
        _show(run_step(session.root, session.config, incident_id), as_json)
        return 0

    @app.command("drive")
    def drive_cmd(
        incident_id: IdArg, root: RootOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False
    ) -> int:
        """Tick one incident until it is closed, waiting for an agent, or not yet due."""
        session = open_root(root, config)
        steps: list[StepOutcome] = []
        final = drive(
            session.root,
            session.config,
            incident_id,
            on_step=None if as_json else (lambda o: output.out(o.line())),
        )
        steps.append(final)
        if as_json:
            output.out_json(_json(final))
        return 0
