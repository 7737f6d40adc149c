"""Seed 003's error-signature tracker, for loops that retry in their own process.

An agent loop hands each failure to `record_and_check` and gets a `Decision`: retry, with
a `RetryContext` to put in its next prompt, or escalate. Everything it decides on is the
reports root's, shared with every other user of the root:

- classification and signatures are capture's (`classify_error` of a text or an exception
  is what `incidents capture --message TEXT` would record; the signature too, with the
  tracker's `step`);
- the budget is the signature's group's `policy.signature_budget`, one pool for the fixer
  tiers and the loops (`policy.take_loop_unit`, `policy.budget_used`);
- an escalation is an incident in `error_archive/escalated/` (so `status`, `review` and
  `resolve-escalation` see it) and an escalation record in the mirror, written before the
  global threshold is checked (`policy.record_escalation`, which may pause the root);
  repeats while it is open (no reset since, still in the escalated bucket) fold into it
  (an `escalation_repeat` event), opening nothing and counting nothing toward the pause;
- `global_threshold_exceeded` is the root's pause (`incidents resume` lifts it).

`retry_counts` is the caller's dict when given (seed 003's checkpoint sharing): it is
updated in place, signature -> units used, and never replaced. The root stays the truth:
the dict is what the tracker last saw.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from incidents import (
    artifacts,
    budget_ledger,
    clock,
    eventlog,
    fsutil,
    grouping,
    leases,
    policy,
    store,
)
from incidents.bundle_rules import workdir_problem
from incidents.capture import CaptureInput, capture
from incidents.classify import classify
from incidents.config import Config, load_config
from incidents.errors import AlreadyArchived, NotFound, UsageError
from incidents.fingerprint import signature_fields
from incidents.fixers.prompt import RetryContext
from incidents.layout import Root, resolve_root
from incidents.models import QuarantineMetadata
from incidents.models.pipeline import EscalationKind, State
from incidents.redact import redact
from incidents.step import close as closing
from incidents.vocab import ErrorCode, FailureClass, FinalStatus

__all__ = ["Decision", "ErrorSignatureTracker", "Failure"]

MAX_GUIDANCE = 4000


@dataclass(frozen=True)
class Failure:
    """One failure as capture reads it: the message it signs and what it classifies from."""

    message: str
    step: str
    signature: str
    failure_class: FailureClass
    error_code: ErrorCode
    log_text: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    given: bool = False  # a signature was given: its class is the caller's, not classified


@dataclass(frozen=True)
class Decision:
    """What the loop does next: "retry", "escalate", or "paused" (the root is paused: stop,
    without retrying; `incidents resume` lifts it). `attempts` are the units of `budget` used (by everyone);
    `retry_context` is set when `action` is "retry"; `incident_id` names the escalated
    incident; `guidance` is what the last reset of the budget said (`reset_signature`, or
    a person's `resolve-escalation` of an incident in the group)."""

    action: Literal["retry", "escalate", "paused"]
    signature: str
    failure_class: FailureClass
    error_code: ErrorCode
    attempts: int
    budget: int
    retry_context: RetryContext | None
    reason: str
    incident_id: str | None = None
    paused: bool = False
    guidance: str | None = None

    @property
    def retry(self) -> bool:
        return self.action == "retry"


class ErrorSignatureTracker:
    def __init__(
        self,
        root: Root | str | os.PathLike[str] | None,
        retry_counts: dict[str, int] | None = None,
        *,
        step: str = "agent",
        workdir: str | os.PathLike[str] | None = None,
        config: Config | None = None,
    ) -> None:
        """`root`: the reports root (None: as the CLI finds it: `INCIDENTS_ROOT`, the
        config's `root`, `./reports`); `step`: the step name of its signatures and
        escalated incidents; `workdir`: theirs (default: the current directory, under the
        same rules as capture's `--workdir`); `config`: the root's settings (default: as
        the CLI finds `incidents.toml`)."""
        if retry_counts is not None and not isinstance(retry_counts, dict):
            raise TypeError(f"retry_counts: expected a dict or None, got {_kind(retry_counts)}")
        if not isinstance(step, str) or not step.strip() or len(step) > 200:
            raise UsageError("step: must be 1 to 200 characters")
        self.config = config if config is not None else load_config()
        if isinstance(root, Root):
            self.root = root.ensure()
        else:
            self.root = resolve_root(None if root is None else _path(root), self.config.root)
            self.root.ensure()
        self.step = step
        self.workdir = _workdir(workdir, self.config.verification.workdirs)
        self.retry_counts: dict[str, int] = {} if retry_counts is None else retry_counts

    # --- classification -------------------------------------------------------------------

    def failure(self, value: object) -> Failure:
        """`value` read as capture would: an exception from its type and message (a timeout
        as timed out, a failed subprocess with its exit code and output), a text as a
        message; a text in signature form (`class | step | message`, as `Failure.signature`
        reads) is that signature, its class the one it names."""
        if isinstance(value, BaseException):
            return self._read(*_from_exception(value))
        if isinstance(value, str):
            parts = value.split(" | ", 2)
            if len(parts) == 3 and parts[0] in set(FailureClass) and parts[1] and parts[2]:
                code = classify(parts[2]).error_code
                cls = FailureClass(parts[0])
                return Failure(parts[2], parts[1], value, cls, code, given=True)
            return self._read(value, "", None, False)
        raise TypeError(
            f"expected an exception or a str (an error text or a signature), got {_kind(value)}"
        )

    def _read(self, message: str, log_text: str, exit_code: int | None, timed_out: bool) -> Failure:
        text = redact(message.strip())[: self.config.capture.max_message_chars]
        if not text:
            raise UsageError("the error text is empty: nothing to classify or sign")
        log = redact(log_text)
        verdict = classify(text, log, exit_code, timed_out)
        signature, _ = signature_fields(verdict.failure_class.value, self.step, text)
        return Failure(
            text, self.step, signature, verdict.failure_class, verdict.error_code, log,
            exit_code, timed_out,
        )  # fmt: skip

    def classify_error(self, value: object) -> FailureClass:
        """The failure class capture gives `value` (an exception or a text)."""
        return self.failure(value).failure_class

    def should_escalate_immediately(self, value: object) -> bool:
        """Never-retry (seed 003), or a code the policy never retries (seed 002's fail fast:
        RATE_LIMIT, HOOK_FAILURE): no budget is spent on it."""
        f = self.failure(value)
        return policy.effective_failure_class(f.error_code, f.failure_class) is (
            FailureClass.NEVER_RETRY
        )

    def signature(self, value: object) -> str:
        return self.failure(value).signature

    # --- the decision ---------------------------------------------------------------------

    def record_and_check(self, value: object, *, tried: str = "") -> Decision:
        """Record one failure and decide: retry while its group's budget has a unit left
        (taking it), else escalate; never-retry escalates at once. While the root is
        paused, "paused" (`paused=True`): no retry, no unit taken, nothing recorded; the
        loop stops until `incidents resume`. `tried`: what the failed attempt did, for the
        next prompt."""
        if not isinstance(tried, str):
            raise TypeError(f"tried: expected a str, got {_kind(tried)}")
        f = self.failure(value)
        group = self._group(f.signature)
        budget = self.config.policy.signature_budget
        from incidents import pause

        held = pause.current(self.root)
        if held is not None:  # the loop stops: no retry, no unit taken, nothing written
            used = policy.budget_used(self.root, group, "", (), 0)
            why = f"the root is paused ({held.reason}): `incidents resume` lifts it"
            return Decision(
                "paused", f.signature, f.failure_class, f.error_code, used, budget, None, why,
                paused=True,
            )  # fmt: skip
        if policy.effective_failure_class(f.error_code, f.failure_class) is (
            FailureClass.NEVER_RETRY
        ):
            used = policy.budget_used(self.root, group, "", (), 0)
            why = (
                f"{f.error_code} is not retried (fail fast): escalated at once"
                if f.error_code in policy.FAIL_FAST_CODES
                else f"{f.failure_class}: never retried, escalated at once"
            )
            return self._escalate(f, used, why, EscalationKind.NEVER_RETRY)
        taken, used = policy.take_loop_unit(self.root, self.config.policy, group)
        self.retry_counts[f.signature] = used
        if not taken:
            why = f"signature budget exhausted ({used}/{budget})"
            return self._escalate(f, used, why, EscalationKind.BUDGET_EXHAUSTED)
        context = RetryContext(
            attempt_number=used,
            max_attempts=budget,
            previous_error_code=f.error_code,
            previous_error=f.message if not f.log_text else f"{f.message}\n\n{f.log_text}",
            what_was_tried=tried,
        )
        return Decision(
            "retry", f.signature, f.failure_class, f.error_code, used, budget, context,
            f"retry {used} of {budget}", guidance=policy.last_reset(self.root, group)[1],
        )  # fmt: skip

    def global_threshold_exceeded(self) -> bool:
        """Whether the root is paused: by the escalation threshold (`[policy]
        escalation_threshold` within `escalation_window_s`) or by a person."""
        from incidents import pause

        return pause.current(self.root) is not None

    def reset_signature(self, signature: str, guidance: str) -> None:
        """A human's decision: `signature`'s group gets its whole budget again (for the
        fixer tiers too), and later retries carry `guidance` (`Decision.guidance`)."""
        if not isinstance(signature, str) or not isinstance(guidance, str):
            raise TypeError("reset_signature: signature and guidance are str")
        if not guidance.strip():
            raise UsageError("reset_signature: guidance must not be empty")
        text = redact(guidance.strip())[:MAX_GUIDANCE]
        policy.reset_budget(self.root, self._group(signature), text, by="tracker")
        self.retry_counts.pop(signature, None)

    # --- the escalation record ------------------------------------------------------------

    def _group(self, signature: str) -> str:
        alias = grouping.read_alias(self.root, signature)
        return alias[0] if alias is not None else signature

    def _escalate(self, f: Failure, used: int, why: str, kind: EscalationKind) -> Decision:
        """The record first: an incident captured as capture would, closed into the
        escalated bucket with its quarantine metadata, and the mirror's escalation record;
        then the threshold (`policy.record_escalation` writes the record, then counts, as
        the step service's close does), then the bundle's row and events."""
        self.retry_counts[f.signature] = used
        budget = self.config.policy.signature_budget
        group = self._group(f.signature)
        with budget_ledger.lock(self.root, group):
            folded = self._fold_into_open(group, f, why, kind)
            if folded is not None:
                return Decision(
                    "escalate", f.signature, f.failure_class, f.error_code, used, budget, None,
                    f"{why}; again: folded into the open escalation {folded}", folded,
                    self.global_threshold_exceeded(),
                )  # fmt: skip
            incident_id, target, finished = self._escalated_incident(f, used, why, kind)
            budget_ledger.append(self.root, group, "escalation", incident=incident_id)
        paused = False
        if target is not None:
            paused = policy.record_escalation(
                self.root, self.config.policy, incident_id, f.signature, why, finished
            )
            eventlog.append_events(
                target, incident_id, [("escalation", {"kind": kind.value, "reason": why})],
                eventlog.unique_key("t"),
            )  # fmt: skip
            payload = {"bucket": "escalated", "kind": kind.value, "by": "tracker"}
            store.mirror_bundle(self.root, "escalated", target, "archived", payload)
        return Decision(
            "escalate", f.signature, f.failure_class, f.error_code, used, budget, None, why,
            incident_id, paused or self.global_threshold_exceeded(),
        )  # fmt: skip

    def _fold_into_open(self, group: str, f: Failure, why: str, kind: EscalationKind) -> str | None:
        """The group's escalation still open since its last reset (in the escalated bucket:
        nobody answered it yet), with this repeat logged on it; None when there is none."""
        latest = budget_ledger.read(self.root, group).escalation
        if latest is None:
            return None
        at, incident_id = latest
        reset_at = policy.last_reset(self.root, group)[0]
        if reset_at is not None and reset_at >= at:
            return None
        try:
            where, folder = self.root.locate(incident_id)
        except (NotFound, UsageError):
            return None
        if where != "escalated":
            return None
        eventlog.append_events(
            folder, incident_id,
            [("escalation_repeat", {"kind": kind.value, "reason": why, "message": f.message})],
            eventlog.unique_key("t"),
        )  # fmt: skip
        return incident_id

    def _escalated_incident(
        self, f: Failure, used: int, why: str, kind: EscalationKind
    ) -> tuple[str, Path | None, datetime]:
        """(id, its folder in the escalated bucket, when it was closed); no folder when a
        watcher took the new incident first and closed it (its own record stands)."""
        cap = self.config.capture
        inp = CaptureInput(
            f.step, f.message, workdir=self.workdir, log_text=f.log_text, exit_code=f.exit_code,
            timed_out=f.timed_out, dedupe=False,
            failure_class=f.failure_class.value if f.given else None,
            error_code=f.error_code.value if f.given else None,
            context={"tracker": {"attempts": used, "escalation_kind": kind.value}},
        )  # fmt: skip
        result = capture(self.root, inp, cap.max_message_chars, cap.regression_window_days)
        incident_id = result.incident_id
        # a watcher that sees the new bundle leaves it to this lease holder
        lease = leases.acquire(self.root, incident_id, leases.new_owner("tracker"), 60.0)
        finished = clock.utc_now()
        try:
            _, folder = self.root.locate(incident_id)
            with store.incident_lock(self.root, incident_id):
                _write_metadata(folder, _metadata(result.incident, why, kind, finished))
            return incident_id, closing.archive(self.root, incident_id, "escalated", why), finished
        except AlreadyArchived:
            return incident_id, None, finished
        finally:
            if lease is not None:
                leases.release(self.root, lease, closed=True)


def _metadata(
    incident: dict[str, object], why: str, kind: EscalationKind, finished: datetime
) -> QuarantineMetadata:
    return QuarantineMetadata.model_validate(
        {
            "incident_id": incident["incident_id"],
            "run_id": incident["run_id"],
            "workstream_id": incident["incident_id"],
            "created_at": incident["created_at"],
            "finished_at": finished,
            "final_status": FinalStatus.QUARANTINED,
            "reason": why,
            "last_state": State.S_INIT.value,
            "enabled_tiers": [],
            "tool_versions": {},
            "final_error_counts": {},
            "escalation_kind": kind.value,
            "error_signature": incident["error_signature"],
        }
    )


def _write_metadata(folder: Path, meta: QuarantineMetadata) -> None:
    fsutil.atomic_write_json(folder / artifacts.METADATA, meta.model_dump(mode="json"))


def _from_exception(exc: BaseException) -> tuple[str, str, int | None, bool]:
    """(message, log text, exit code, timed out) of an exception, as a traceback's last
    line names it (`TimeoutError: ...`, `subprocess.TimeoutExpired: ...`)."""
    kind = type(exc)
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = f"{kind.__module__}.{name}"
    text = str(exc)
    message = f"{name}: {text}" if text else name
    log, exit_code = "", None
    if isinstance(exc, subprocess.CalledProcessError | subprocess.TimeoutExpired):
        log = "\n".join(_decode(o) for o in (exc.stdout, exc.stderr) if o)
    if isinstance(exc, subprocess.CalledProcessError):
        exit_code = exc.returncode
    timed_out = isinstance(exc, TimeoutError | subprocess.TimeoutExpired)
    return message, log, exit_code, timed_out


def _decode(output: object) -> str:
    if isinstance(output, bytes):
        return output.decode("utf-8", "backslashreplace")
    return str(output)


def _path(value: object) -> str:
    if isinstance(value, str | Path):
        return os.path.abspath(os.path.expanduser(value))
    raise TypeError(f"expected a str or a pathlib.Path, got {_kind(value)}")


def _workdir(value: object, allowed: list[str]) -> str:
    path = os.getcwd() if value is None else _path(value)
    if not os.path.isdir(path):
        raise UsageError(f"workdir {path}: not a directory")
    real = os.path.realpath(path)
    problem = workdir_problem(real, allowed)
    if problem is not None:
        raise UsageError(f"workdir {real}: {problem} (pass workdir=...)")
    return real


def _kind(value: object) -> str:
    return type(value).__name__
