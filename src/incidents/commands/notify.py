"""`incidents notify flush` and `incidents notify list`: the alerts' outbox by hand (the
watcher delivers it by itself)."""

from __future__ import annotations

import dataclasses
from typing import Any

import typer

from incidents import clock, output
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root

FLUSH_BUDGET_S = 120.0


def _flush(root: str | None, config: str | None, as_json: bool) -> int:
    from incidents.notify.deliver import deliver

    session = open_root(root, config)
    done = deliver(session.root, session.config.notify, budget_s=FLUSH_BUDGET_S, every=True)
    if as_json:
        output.out_json(dataclasses.asdict(done))
    elif done.busy:
        output.out("another deliverer (a watcher) holds the outbox; its pass delivers it")
    else:
        output.out(
            f"alerts: {done.delivered} delivered ({done.sent} request(s)), {done.waiting} "
            f"waiting, {done.set_aside} set aside, {done.dropped} wanted by no webhook"
        )
        for line in done.errors:
            output.err(f"not delivered: {line}")
    return 1 if done.waiting else 0


def _list(root: str | None, config: str | None, as_json: bool) -> int:
    from incidents.notify import outbox

    session = open_root(root, config)
    rows: list[dict[str, Any]] = [
        {
            "id": doc.get("id"),
            "event": doc.get("event"),
            "at": clock.iso_at(float(doc.get("at") or 0)),
            "attempts": doc.get("attempts"),
            "next_at": clock.iso_at(float(doc.get("next_at") or 0)),
            "last_error": doc.get("last_error"),
        }
        for _, doc in outbox.pending(session.root)
    ]
    if as_json:
        output.out_json(rows)
        return 0
    if not rows:
        output.out("the outbox is empty")
    for row in rows:
        tried = f", {row['attempts']} attempt(s), next {row['next_at']}" if row["attempts"] else ""
        error = f": {row['last_error']}" if row["last_error"] else ""
        output.out(f"{row['id']} ({row['event']}, queued {row['at']}{tried}){error}")
    return 0


def register(app: typer.Typer) -> None:
    notify_app = typer.Typer(
        help="The alerts' outbox ([notify] webhooks): deliver it now, or list it.",
        no_args_is_help=True,
    )
    app.add_typer(notify_app, name="notify")

    @notify_app.command("flush")
    def flush(root: RootOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False) -> int:
        """Deliver every queued alert now, whatever its backoff; exit 1 while some wait."""
        return _flush(root, config, as_json)

    @notify_app.command("list")
    def list_cmd(root: RootOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False) -> int:
        """The queued alerts, oldest first: event, attempts, next attempt, last error."""
        return _list(root, config, as_json)
