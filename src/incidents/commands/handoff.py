"""`incidents next|claim|submit|attempt` (hand-off to agent skills) and
`incidents resolve-escalation` (a human's decision on an escalated incident)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from incidents import fleet, handoff, output
from incidents.commands.common import (
    ConfigOpt,
    JsonOpt,
    RootOpt,
    open_root,
    route_elsewhere,
    said_routed,
)
from incidents.commands.several import check_ids, decide_each, members
from incidents.errors import NotFound
from incidents.handoff.human import deciding_user
from incidents.layout import Root
from incidents.models.requests import ResolveRequest, parse


def decide(root: Root, incident_id: str, request: ResolveRequest) -> dict[str, Any]:
    """A person's decision on an escalated incident (`resolve-escalation`, the HTTP API's
    resolve): what `--json` prints. One that another host of a fleet's shared mirror holds
    is decided there, on that host's next pass."""
    try:
        decision = handoff.resolve_escalation(
            root,
            incident_id,
            request.guidance,
            requeue=request.requeue,
            accept_fix=request.accept_fix,
            by=_by(request),
        )
    except NotFound as missing:  # a shared mirror: the host holding it applies it
        args = {
            "guidance": request.guidance,
            "requeue": request.requeue,
            "accept_fix": request.accept_fix,
            "by": _by(request),
        }
        return route_elsewhere(root, incident_id, fleet.RESOLVE, args, missing)
    return dict(decision.__dict__)


def _by(request: ResolveRequest) -> str:
    """Who decides: as the request says; an accepted fix names the person (the user
    running the command) rather than "human"."""
    return request.by or (deciding_user() if request.accept_fix else "human")


IdArg = Annotated[str, typer.Argument(metavar="ID", help="The incident.")]


def _show_item(item: handoff.WorkItem, as_json: bool) -> None:
    if as_json:
        output.out_json(item.to_json())
        return
    output.out(f"{item.incident_id}: waiting for {item.agent}")
    output.out(f"  prompt: {item.prompt_file}")
    output.out(f"  files: {', '.join(item.files) or '-'}  (in {item.workdir})")
    output.out(f"  last report: {item.last_report or '-'}")
    if item.lease_expires_at:
        output.out(f"  lease expires at {item.lease_expires_at}")


def register(app: typer.Typer) -> None:
    @app.command("next")
    def next_cmd(root: RootOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False) -> int:
        """The next incident waiting for an agent: its prompt, files and last report."""
        session = open_root(root, config, create=False)
        why: dict[str, str] = {}
        item = handoff.next_incident(session.root, cfg=session.config, why=why)
        if item is None:
            if as_json:
                output.out_json(handoff.no_work(why))
            else:
                output.out("no incident is waiting for an agent")
                for incident_id, reason in why.items():
                    output.out(f"  {incident_id}: {reason}")
            return 0
        _show_item(item, as_json)
        return 0

    @app.command("claim")
    def claim_cmd(
        incident_id: IdArg,
        agent: Annotated[str, typer.Option("--agent", help="Who works on it (a skill's name).")],
        lease: Annotated[str, typer.Option("--lease", help="For how long: 30m, 2h, 90s.")] = "30m",
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Take a waiting incident for an agent until its lease expires."""
        session = open_root(root, config)
        item = handoff.claim(session.root, incident_id, agent, handoff.parse_ttl(lease))
        _show_item(item, as_json)
        return 0

    @app.command("submit")
    def submit_cmd(
        incident_id: IdArg,
        notes: Annotated[str, typer.Option("--notes", help="What the agent did.")] = "",
        agent: Annotated[
            str | None, typer.Option("--agent", help="Check that this agent holds the claim.")
        ] = None,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Hand a claimed incident back; the next `step` runs its recheck."""
        session = open_root(root, config)
        attempt = handoff.submit(session.root, incident_id, notes, agent=agent)
        if as_json:
            output.out_json(attempt.model_dump(mode="json"))
        else:
            changed = ", ".join(attempt.changed_files) or "no target file"
            output.out(f"{incident_id}: submitted by {attempt.agent} (changed {changed})")
        return 0

    @app.command("attempt")
    def attempt_cmd(
        incident_id: IdArg,
        file: Annotated[str, typer.Option("--file", help="The attempt_XX.json to record.")],
        agent: Annotated[
            str | None,
            typer.Option("--agent", help="Who records it: the holder of the claim, if any."),
        ] = None,
        root: RootOpt = None,
        config: ConfigOpt = None,
    ) -> int:
        """Validate a skill's attempt document and record it as attempt_XX.json."""
        session = open_root(root, config)
        target = handoff.record_attempt(session.root, incident_id, Path(file), agent=agent)
        output.out(f"recorded {target.relative_to(session.root.path)}")
        return 0

    @app.command("resolve-escalation")
    def resolve_cmd(
        incident_ids: Annotated[
            list[str] | None, typer.Argument(metavar="[ID ...]", help="The incidents.")
        ] = None,
        group: Annotated[
            str | None,
            typer.Option("--group", help="Every escalated incident of this group (id, signature)."),
        ] = None,
        guidance: Annotated[str, typer.Option("--guidance", help="The human's decision.")] = "",
        requeue: Annotated[
            bool, typer.Option("--requeue", help="Back to the inbox with this guidance.")
        ] = False,
        accept_fix: Annotated[
            bool, typer.Option("--accept-fix", help="Accept a fix escalated for review.")
        ] = False,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
    ) -> int:
        """Record a decision on escalated incidents and reset their signature's budget."""
        ids = check_ids(incident_ids, group, "resolve-escalation")
        request = parse(
            ResolveRequest, {"guidance": guidance, "requeue": requeue, "accept_fix": accept_fix}
        )
        session = open_root(root, config)
        if group is not None:
            ids = list(dict.fromkeys([*ids, *members(session.root, group, "escalated")]))

        def line(done: dict[str, Any]) -> str:
            if "routed_to" in done:
                return said_routed(done)
            return f"{done['incident_id']}: {done['decision']} -> {done['location']}"

        def decided(incident_id: str) -> dict[str, Any]:
            return decide(session.root, incident_id, request)

        return decide_each(ids, decided, line, as_json, one=group is None and len(ids) == 1)
