"""Retry policy around the escalation machine (seeds 002 and 003).

- What no fixer can mend goes to a person: env and never_retry escalate at
  once (`incidents.fsm`, the headline from `incidents.needs`); transient failures clear
  themselves (re-run with backoff, or their step's success, `incidents.recovery`) and
  never reach a fixer.
- Fail fast (seed 002): RATE_LIMIT and HOOK_FAILURE are not retried. Classification keeps
  what a failure *is* (a rate limit is transient by nature); the policy decides what is
  *done*: these codes enter the machine as never_retry, which escalates at S_INIT without
  a check, a backoff or a fixer.
- Per-signature budget (seed 003): one unit per AI fixer attempt (run or handed off),
  counted over every incident sharing the signature since a human last reset it
  (`mirror.budget_used`: derived from the committed contexts, so exactly once), plus one
  per retry an in-process loop took (`take_loop_unit`, `incidents.tracker`: lines in
  `incidents.budget_ledger`). `budget_used` is the one place that adds them up, for the
  fixer tiers and the loops alike; the later of the mirror's reset (a human's decision)
  and the ledger's (`reset_budget`) starts the count for both.
- Escalation records and the global threshold: each escalation is recorded once; when
  `escalation_threshold` of them fall within `escalation_window_s` (counted from the last
  `resume` at the earliest), the whole system pauses (`pause.pause(by="threshold")` and a
  `build_paused` event).

Every function here is best effort on the mirror: the folders stay the truth, and a
mirror that cannot be opened never stops a tick.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from datetime import datetime, timedelta

from incidents import budget_ledger, mirror, pause
from incidents.config import PolicySettings
from incidents.errors import NotFound
from incidents.layout import Root
from incidents.mirror.target import target_of
from incidents.models.pipeline import AIAttempt
from incidents.vocab import ErrorCode, FailureClass

__all__ = [
    "FAIL_FAST_CODES",
    "RETRIED_CODES",
    "budget_used",
    "effective_failure_class",
    "last_reset",
    "record_escalation",
    "reset_budget",
    "retry_behaviour",
    "take_loop_unit",
]

FAIL_FAST_CODES = frozenset({ErrorCode.RATE_LIMIT, ErrorCode.HOOK_FAILURE})
RETRIED_CODES = frozenset(ErrorCode) - FAIL_FAST_CODES


def effective_failure_class(code: str | None, failure_class: str) -> FailureClass:
    """The class the machine acts on: seed 002's "not retried" codes become never_retry."""
    if code in FAIL_FAST_CODES:
        return FailureClass.NEVER_RETRY
    return FailureClass(failure_class)


def retry_behaviour(code: str | None, failure_class: str) -> str:
    """What happens to a failure, in words (seed 002's table, for docs and `status`)."""
    cls = effective_failure_class(code, failure_class)
    if cls is FailureClass.NEVER_RETRY:
        return "escalate at once"
    if cls is FailureClass.ENV:
        return "escalate at once, saying what is missing; a requeue re-runs the reproduction"
    if cls is FailureClass.TRANSIENT:
        return (
            "re-run the reproduction with backoff (or wait for the step to succeed): "
            "recovered when it passes, escalated if it still fails; never a fixer"
        )
    return "fix within the signature budget"


def _own_attempts(attempts: Iterable[AIAttempt], since: str | None) -> int:
    if since is None:
        return sum(1 for _ in attempts)
    return sum(
        1
        for a in attempts
        if (when := a.started_at or a.finished_at) is not None and when.isoformat() > since
    )


def budget_used(
    root: Root, signature: str, incident_id: str, own: Iterable[AIAttempt], fallback: int
) -> int:
    """Budget units used by `signature`: the other incidents' (mirror) plus this one's own
    attempts since the last reset (from its context: exact even when the mirror lags) plus
    the loops' units (the ledger). `fallback` (at least the ledger's units) when the mirror
    cannot be read."""
    ledger = budget_ledger.read(root, signature)
    with mirror.best_effort(root, what="budget not read", errors=mirror.DATABASE_ERRORS) as conn:
        if conn is not None:
            since = _later(mirror.budget_reset_at(conn, signature), ledger.reset_at)
            others = mirror.budget_used(conn, signature, exclude=incident_id, since=since or "")
            mirror.refresh_budget(conn, signature)  # the display cache
            return others + _own_attempts(own, since) + ledger.attempts_since(since)
    return max(fallback, ledger.attempts_since(ledger.reset_at))


def last_reset(root: Root, signature: str) -> tuple[str | None, str | None]:
    """(when, guidance) of the latest reset of `signature`'s budget: a person's decision on
    an escalation (the mirror) or a loop's `reset_budget` (the ledger)."""
    ledger = budget_ledger.read(root, signature)
    with mirror.best_effort(root, what="reset not read", errors=mirror.DATABASE_ERRORS) as conn:
        if conn is not None:
            found = mirror.last_reset(conn, signature)
            if found is not None and (ledger.reset_at is None or found[0] > ledger.reset_at):
                return found
    return ledger.reset_at, ledger.guidance


def _later(a: str | None, b: str | None) -> str | None:
    return max(a, b) if a is not None and b is not None else a or b


def take_loop_unit(root: Root, policy: PolicySettings, signature: str) -> tuple[bool, int]:
    """An in-process loop's retry: take one unit of `signature`'s budget when one is left.
    Returns (taken, units used after). Counted and taken under the group's budget lock, so
    two loops never both take the last unit (a fixer tier reads the count when it enters a
    tier and commits its attempt later: it can still overrun by its one attempt in flight)."""
    with budget_ledger.lock(root, signature):
        used = budget_used(root, signature, "", (), 0)
        if used >= policy.signature_budget:
            return False, used
        budget_ledger.append(root, signature, "attempt")
        return True, used + 1


def reset_budget(root: Root, signature: str, guidance: str, by: str) -> str:
    """Give `signature` its whole budget again (for the fixers too); returns the reset's time."""
    with budget_ledger.lock(root, signature):
        return budget_ledger.append(root, signature, "reset", guidance=guidance, by=by)


def record_escalation(
    root: Root,
    policy: PolicySettings,
    incident_id: str,
    signature: str,
    reason: str,
    now: datetime,
) -> bool:
    """Record the escalation (once) and pause everything when the threshold is reached.
    Returns whether this call paused the system."""
    with mirror.best_effort(
        root, what="escalation not recorded", errors=mirror.DATABASE_ERRORS
    ) as conn:
        if conn is None:
            return False
        added = mirror.add_escalation(conn, incident_id, signature, reason, now.isoformat())
        if not added or policy.escalation_threshold <= 0:
            return False
        if pause.current(root) is not None:
            return False
        # the window: `escalation_window_s` ago, but not before the last resume
        start = (now - timedelta(seconds=policy.escalation_window_s)).isoformat()
        count = mirror.escalations_in_window(conn, start)
        if count < policy.escalation_threshold:
            return False
        why = (
            f"{count} groups escalated within {policy.escalation_window_s:g}s "
            f"(threshold {policy.escalation_threshold}); last: {incident_id}"
        )
        pause.pause(root, why, by="threshold", now=now.timestamp())
        if target_of(root.db_path).url is not None:  # a fleet's mirror: every host pauses
            mirror.publish_pause(conn, why, now.timestamp(), "threshold")
        from incidents import eventlog

        paused = {"reason": why, "by": "threshold", "escalations": count}
        with contextlib.suppress(NotFound):  # the pause stands without its line
            _, folder = root.locate(incident_id)
            eventlog.append_events(
                folder, incident_id, [("build_paused", paused)], eventlog.unique_key("p"),
                ts=now.isoformat(),
            )  # fmt: skip
        mirror.ingest_incident(conn, root, incident_id)
        return True
    return False  # the mirror could not be written (warned)
