"""Delivering the outbox: compose each alert from the bundle as it is now (the headline and
decision of `incidents.evidence`), redact it, POST it to every webhook that wants its event
(urllib, a timeout each), and keep it until every one of them took it.

A failed POST leaves the alert in the outbox with its next attempt after a backoff
(`retry_base_s` doubling up to `retry_max_s`); a receiver that failed once is not tried
again in the same pass (it is down: the rest wait their turn). An alert undelivered for
`give_up_after_s` is set aside in `.state/notify/failed/`. One deliverer at a time per
root (a lock; a second one skips its pass), so nothing is sent twice by two watchers.
An alert records the webhooks that took it, so a retry sends only to the others; the
alert's `id` lets a receiver drop the one duplicate a crash between a POST and that
record could make.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents import clock, fsutil
from incidents.errors import IncidentsError, LockBusy, NotFound
from incidents.layout import Root
from incidents.locks import flocked
from incidents.notify import outbox
from incidents.notify.send import LATE, LONGEST_S, post
from incidents.notify.settings import NotifySettings, Webhook
from incidents.redact import redact, redact_json


@dataclass
class Pass:
    """What one delivery pass did."""

    sent: int = 0  # POSTs a receiver took
    delivered: int = 0  # alerts every webhook took (gone from the outbox)
    waiting: int = 0  # alerts left for a later attempt
    set_aside: int = 0
    dropped: int = 0  # no webhook wants them
    errors: list[str] = field(default_factory=list)
    busy: bool = False  # another deliverer holds the outbox


def webhook_key(hook: Webhook) -> str:
    return hashlib.sha256(hook.url.encode()).hexdigest()[:16]


def _name(hook: Webhook, index: int) -> str:
    """How a webhook is named in messages: never its URL (a Slack URL is a secret)."""
    return f"webhook {index + 1} ({urllib.parse.urlsplit(hook.url).hostname or '?'})"


def _read_evidence(root: Root, incident_id: str) -> tuple[Any, str] | None:
    from incidents.review.gather import read_card

    try:
        bucket, folder = root.locate(incident_id)
    except (NotFound, IncidentsError, OSError):
        return None
    return read_card(folder, bucket), bucket


def _spend_limit(body: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    incident_id = facts.get("incident_id")
    body |= {
        "reason": facts.get("reason"),
        "setting": facts.get("setting"),
        "incident_id": incident_id,
        "incident_group": facts.get("incident_group"),
    }
    body["text"] = (
        f"incidents: {facts.get('reason')} (reached by {incident_id}). No fixer tier runs "
        "while it stands: the incident waits or escalates as [policy] spend_limit says, "
        "until the next UTC day for the daily limit or until the setting is raised."
    )
    return redact_json(body)  # type: ignore[no-any-return]


def compose(root: Root, alert: dict[str, Any]) -> dict[str, Any]:
    """The alert's JSON body (redacted): its text and its facts."""
    from incidents.review.render import decision_command

    event, member = str(alert.get("event")), str(alert.get("member") or "")
    given = alert.get("facts")
    facts: dict[str, Any] = given if isinstance(given, dict) else {}
    record = outbox.group_record(root, alert)
    also = max(0, len(record.get("members") or [member]) - 1)
    body: dict[str, Any] = {
        "id": alert.get("id"),
        "event": event,
        "group": alert.get("group"),
        "at": clock.iso_at(float(alert.get("at") or 0)),
        "root": str(root.path),
    }
    if event == "pause":
        since = clock.iso_at(float(facts.get("since") or 0))
        body |= {"reason": facts.get("reason"), "by": facts.get("by"), "since": since}
        body["text"] = (
            f"incidents paused since {since} by {facts.get('by')}: {facts.get('reason')}. "
            "Step, watch, next and claim start no new work until someone runs "
            "`incidents resume`; capture still accepts incidents."
        )
        return redact_json(body)  # type: ignore[no-any-return]
    if event == "spend_limit":
        return _spend_limit(body, facts)
    found = _read_evidence(root, member)
    card = found[0] if found else None
    ev = card.evidence if card else None
    headline = ev.headline if ev else str(facts.get("message") or "(no message)")
    step = card.step if card else facts.get("step", "?")
    body |= {
        "incident_id": member,
        "step": step,
        "headline": headline,
        "failure_class": card.failure_class if card else facts.get("failure_class"),
        "reason": card.reason if card else facts.get("resolution"),
        "occurrences": ev.occurrences if ev else None,
        "recurrences": ev.recurrences if ev else None,
        "also": also,
    }
    if event == "regression":
        body["regression_of"] = facts.get("regression_of")
        text = f"incidents: {member} regressed {facts.get('regression_of')} ({step}): {headline}"
    else:
        text = f"incidents: {member} escalated ({step}): {headline}"
        if card and card.reason:
            text += f"\nwhy: {card.reason}"
    if ev and ev.suggestion.argv:
        command = decision_command(ev.suggestion.argv, str(root.path))
        body["suggestion"] = {
            "kind": ev.suggestion.kind,
            "text": ev.suggestion.text,
            "command": command,
        }
        text += f"\nsuggested: {ev.suggestion.text}\n{command}"
    if also:
        text += f"\n({also} more of this group since, not alerted separately)"
    body["text"] = text
    return redact_json(body)  # type: ignore[no-any-return]


def _shape(hook: Webhook, body: dict[str, Any]) -> dict[str, Any]:
    return {"text": slack_text(redact(str(body["text"])))} if hook.format == "slack" else body


def slack_text(text: str) -> str:
    """Slack reads `<...>` in a message as a link or a mention (`<!channel>`): a log line or
    a test's message, which anyone who can make a step fail writes, must reach it as text.
    Slack's own escaping: only these three characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def deliver(
    root: Root,
    settings: NotifySettings,
    *,
    now: float | None = None,
    budget_s: float = 30.0,
    every: bool = False,
) -> Pass:
    """One pass over the outbox (`every`: ignore the backoff, as a person's flush does)."""
    done = Pass()
    base = outbox.base(root)
    if not base.is_dir():
        return done
    try:
        with flocked(base / "deliver.lock", timeout_s=0):
            _pass(root, settings, done, time.time() if now is None else now, budget_s, every)
    except LockBusy:
        done.busy = True
    return done


def _pass(
    root: Root, settings: NotifySettings, done: Pass, now: float, budget_s: float, every: bool
) -> None:
    deadline = time.monotonic() + budget_s
    down: set[str] = set()
    for path, alert in outbox.pending(root):
        event = str(alert.get("event"))
        wanted = [
            (i, h)
            for i, h in enumerate(settings.webhooks)
            if event in h.events and webhook_key(h) not in (alert.get("done") or [])
        ]
        if not wanted:  # every webhook took it, or none wants it (any more)
            _remove(path)
            if alert.get("done"):
                done.delivered += 1
            else:
                done.dropped += 1
            continue
        if now - float(alert.get("at") or now) > settings.give_up_after_s:
            outbox.set_aside(root, path)
            done.set_aside += 1
            continue
        if (not every and float(alert.get("next_at") or 0) > now) or time.monotonic() > deadline:
            done.waiting += 1
            continue
        _attempt(root, settings, done, path, alert, wanted, down, now)


def _attempt(
    root: Root,
    settings: NotifySettings,
    done: Pass,
    path: Path,
    alert: dict[str, Any],
    wanted: list[tuple[int, Webhook]],
    down: set[str],
    now: float,
) -> None:
    try:
        body = compose(root, alert)
    except (IncidentsError, OSError, ValueError) as exc:  # the bundle changed under us
        body = redact_json(
            {
                "id": alert.get("id"),
                "event": alert.get("event"),
                "text": f"incidents: {alert.get('event')} {alert.get('member')} "
                f"(details unreadable: {exc})",
            }
        )
    took = list(alert.get("done") or [])
    given = alert.get("late")
    late = {k: v for k, v in (given if isinstance(given, dict) else {}).items() if type(v) is int}
    errors = []
    for index, hook in wanted:
        key = webhook_key(hook)
        why = "not tried: it failed earlier in this pass" if key in down else None
        # a receiver that answered too late may have taken the alert all the same: each
        # retry gives it twice as long, so a slow one costs a duplicate or two, not one
        # per retry until give_up_after_s
        timeout_s = min(
            max(settings.timeout_s, LONGEST_S), settings.timeout_s * 2 ** late.get(key, 0)
        )
        why = why or post(hook, _shape(hook, body), timeout_s)
        if why is None:
            took.append(key)
            done.sent += 1
        else:
            down.add(key)
            errors.append(f"{_name(hook, index)}: {why}")
            if why.startswith(LATE):
                late[key] = min(late.get(key, 0) + 1, 10)
    if len(took) == len(alert.get("done") or []) + len(wanted):
        _remove(path)
        done.delivered += 1
        return
    attempts = int(alert.get("attempts") or 0) + 1
    delay = min(settings.retry_max_s, settings.retry_base_s * 2 ** min(attempts - 1, 30))
    alert |= {
        "done": took,
        "late": late,
        "attempts": attempts,
        "next_at": now + delay,
        "last_error": "; ".join(errors),
    }
    fsutil.atomic_write_json(path, alert)
    done.waiting += 1
    done.errors.append(f"{alert.get('id')}: {'; '.join(errors)}")


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class Notifier:
    """The watcher's deliverer: a pass in a background thread whenever the outbox holds
    something and no pass is running, so a slow or hanging receiver never holds up the
    loop (each request has its timeout; the pass its budget)."""

    CHECK_S = 1.0  # how often the loop looks at the outbox

    def __init__(self, root: Root, settings: NotifySettings, report: Any) -> None:
        self.root, self.settings, self.report = root, settings, report
        self.thread: threading.Thread | None = None
        self.next_check = 0.0

    def pump(self) -> None:
        """Start a pass if one is due; returns at once."""
        now = time.monotonic()
        if now < self.next_check or (self.thread is not None and self.thread.is_alive()):
            return
        self.next_check = now + self.CHECK_S
        base = outbox.folder(self.root, outbox.OUTBOX)
        try:
            if not any(n.endswith(".json") for n in os.listdir(base)):
                return
        except OSError:
            return
        self.thread = threading.Thread(target=self._run, name="notify", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.report(deliver(self.root, self.settings, budget_s=self.CHECK_S * 30))
        except Exception as exc:  # a delivery failure never stops the watcher
            self.report(Pass(errors=[f"delivery failed: {exc}"]))

    def finish(self, timeout_s: float) -> None:
        """At the watcher's exit: wait for a running pass, then one last pass, both
        bounded by `timeout_s`, so alerts of a burst run go out before it returns."""
        started = time.monotonic()
        if self.thread is not None:
            self.thread.join(timeout_s)
            if self.thread.is_alive():
                return
        self.next_check = 0.0
        self.pump()
        if self.thread is not None:
            self.thread.join(max(0.0, timeout_s - (time.monotonic() - started)))
