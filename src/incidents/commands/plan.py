"""`incidents plan ID [--from FILE]`: show an incident's plan, or supply/replace it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from incidents import output, planner, store
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, Session, open_root
from incidents.errors import AlreadyArchived, InvalidDocument, NotFound, UsageError
from incidents.layout import BUCKETS, Root, validate_id

if TYPE_CHECKING:
    from incidents.config import Config
    from incidents.models import Plan

FromOpt = Annotated[
    Path | None,
    typer.Option(
        "--from",
        help="A plan.json (seed 004's shape) to validate and install as this incident's plan.",
    ),
]


def supply(root: Root, cfg: Config, incident_id: str, plan: Plan, where: str) -> tuple[Path, str]:
    """Install a validated `plan` (from `where`) as the incident's plan: `plan --from` and
    the MCP server's `supply_plan`, one door each, one rule set. A plan is held to
    capture's rules (`planner.plan_problems`): a refusal is InvalidDocument naming the
    field and the rule, and nothing is written (the old plan stays). Returns the plan.json
    path and the incident's status."""
    from incidents.step.documents import workdir_of

    where_now, folder = root.locate(incident_id)
    if where_now != "inbox":
        raise AlreadyArchived(
            f"incident {incident_id} is closed ({BUCKETS[where_now]}); its plan is not replaced"
        )
    workdir = workdir_of(root, store.read_incident(folder).get("workdir"))
    problems = planner.plan_problems(plan, str(workdir), cfg.verification.allow)
    if problems:
        first = problems[0]
        more = (
            f" (and {len(problems) - 1} more: "
            + "; ".join(f"{p.field}: {p.value!r}" for p in problems[1:4])
            + ")"
            if len(problems) > 1
            else ""
        )
        raise InvalidDocument(where, f"{first.value!r}: {first.rule}{more}", first.field)
    with store.incident_lock(root, incident_id):
        where_now, folder = root.locate(incident_id)
        if where_now != "inbox":
            raise AlreadyArchived(f"incident {incident_id} was closed meanwhile")
        path, status = planner.apply_plan(root, folder, plan)
    store.mirror_bundle(root, "inbox", folder, "plan_supplied", {"source": plan.source})
    return path, status


def _supply(session: Session, incident_id: str, source: Path, as_json: bool) -> int:
    root = session.root
    where, _ = root.locate(incident_id)
    if where != "inbox":
        raise AlreadyArchived(
            f"incident {incident_id} is closed ({BUCKETS[where]}); its plan is not replaced"
        )
    if not source.is_file():
        raise UsageError(f"plan --from {source}: no such file")
    plan = planner.validate_plan_file(source, incident_id)  # nothing is written before this
    path, status = supply(root, session.config, incident_id, plan, str(source))
    rel = path.relative_to(root.path)
    if as_json:
        output.out_json({"incident_id": incident_id, "plan": str(rel), "status": status})
    else:
        output.out(f"{incident_id}: plan written to {rel} (status {status})")
    return 0


def _show(root: Root, incident_id: str, as_json: bool) -> int:
    plan = planner.load_plan(root, incident_id)
    if plan is None:
        root.locate(incident_id)  # an unknown id says so
        raise NotFound(f"incident {incident_id} has no plan yet")
    if as_json:
        output.out_json(plan.model_dump(mode="json"))
    else:
        output.out(planner.render_plan_md(plan).rstrip("\n"))
    return 0


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan(
        incident_id: Annotated[str, typer.Argument(metavar="ID", help="The incident.")],
        source: FromOpt = None,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Print an incident's plan, or replace it with a validated one (--from FILE).

        A plan that does not validate is refused with the file and field; the old plan
        stays. Supplying a plan moves a `new` incident to `planned`.
        """
        validate_id(incident_id)
        session = open_root(root, config)
        if source is not None:
            return _supply(session, incident_id, source, as_json)
        return _show(session.root, incident_id, as_json)
