"""Alerts: people are told of an escalation, a pause, a regression and a spend limit
reached (`[notify]`).

Where the event happens (the close into `escalated`, `pause.pause`, a capture that marks a
regression, a fixer step refused by a `[policy]` spend limit) one call here puts an
alert in the outbox (`outbox`: one atomic file each, grouped so a group alerts once until
its state changes); the watcher's loop and `incidents notify flush` deliver it to the
configured webhooks (`deliver`), with retries and backoff. Enqueueing never raises and
never blocks on the network: the event it records (a close, a capture, a pause) is never
broken or slowed by a receiver. An alert's facts are redacted as they enter the outbox;
its texts are composed and redacted when delivered, from the bundle as it then is.

These hooks are on capture's path: standard library only, imported lazily.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from incidents.fixers.spend import Limit
    from incidents.layout import Root

__all__ = ["escalated", "paused", "regressed", "spend_limited"]


def _facts(doc: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: doc[k] for k in keys if isinstance(doc.get(k), str | int)}


def _quietly(what: str, call: Any, *args: Any) -> None:
    """An alert that cannot be queued is said on stderr; the event it records stands."""
    try:
        call(*args)
    except Exception as exc:  # an alert never breaks what it reports
        print(f"incidents: warning: {what} alert not queued: {exc}", file=sys.stderr)


def escalated(root: Root, doc: dict[str, Any], group: str) -> None:
    """An incident was closed into `error_archive/escalated/`."""
    incident_id = str(doc.get("incident_id") or "")

    def still_escalated(member: str) -> bool:
        return os.path.isdir(root.bucket("escalated") / member)

    facts = _facts(doc, "step", "message", "failure_class", "error_code", "resolution")
    _quietly(
        "escalation",
        _enqueue,
        root,
        "escalation",
        f"escalation-{incident_id}",
        group,
        incident_id,
        still_escalated,
        facts,
    )


def regressed(root: Root, doc: dict[str, Any], group: str) -> None:
    """A capture opened `doc`, a regression of its group's resolved incident."""
    incident_id = str(doc.get("incident_id") or "")

    def still_open(member: str) -> bool:
        return any(os.path.isdir(root.bucket(b) / member) for b in ("inbox", "escalated"))

    facts = _facts(doc, "step", "message", "failure_class", "regression_of", "regression_count")
    _quietly(
        "regression",
        _enqueue,
        root,
        "regression",
        f"regression-{incident_id}",
        group,
        incident_id,
        still_open,
        facts,
    )


def paused(
    root: Root, reason: str, since: float, by: str, standing: Callable[[], float | None]
) -> None:
    """The whole system was paused (by a person or by the escalation threshold);
    `standing`: when the pause that stands now began (None: none stands)."""
    member = f"{since:.6f}"

    def still_paused(m: str) -> bool:
        now = standing()
        return now is not None and f"{now:.6f}" == m

    facts = {"reason": reason, "since": since, "by": by}
    stamp = member.replace(".", "")
    _quietly(
        "pause", _enqueue, root, "pause", f"pause-{stamp}", "pause", member, still_paused, facts
    )


def spend_limited(root: Root, limit: Limit, incident_id: str, group: str) -> None:
    """A `[policy]` spend limit stopped the fixers of `incident_id`. One limit alerts once
    until it changes: the daily one once per UTC day, a per-incident one once per incident,
    and again when its setting is changed (then reached again)."""
    import time

    scope = f"day {limit.day}" if limit.daily else f"incident {incident_id}"
    key = f"{scope}: {limit.setting}"
    member = f"{key}@{time.time():.6f}"  # each time it is hit; the key says which limit

    def same_limit(m: str) -> bool:
        return m.rpartition("@")[0] == key

    facts = {
        "reason": limit.why,
        "setting": limit.setting,
        "incident_id": incident_id,
        "incident_group": group,
    }
    stamp = member.rpartition("@")[2].replace(".", "")
    _quietly(
        "spend limit",
        _enqueue,
        root,
        "spend_limit",
        f"spend_limit-{stamp}",
        f"spend_limit {scope}",
        member,
        same_limit,
        facts,
    )


def _enqueue(*args: Any) -> None:
    from incidents.notify.outbox import enqueue

    enqueue(*args)
