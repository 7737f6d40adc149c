"""The escalation machine's context (seed 000 §4.1, seed 001 §2) and what it leaves behind.

`ErrorPipelineContext` is `state.json`: everything `incidents.fsm.decide_next_action`
decides on. The `record_*` / `*_step` methods are the only way the step service writes an
action's outcome into it (see the protocol at the top of `incidents.fsm`). They are pure:
no clock, no files; times are passed in.
"""

from __future__ import annotations

import posixpath
import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field

from incidents.models.ai_attempt import AIAttempt as AIAttempt  # re-exported
from incidents.models.base import Document, Timestamp
from incidents.models.report import ErrorReport, Finding
from incidents.vocab import ErrorCode, FailureClass, FinalStatus, Outcome

Agent = Literal["none", "aider", "codex", "claude"]
TierMode = Literal["run", "handoff"]
FindingKey = tuple[str, str, str, str, str]
BaselineKey = tuple[str, str, str]  # (path, code, message normalised): lines left out


class State(StrEnum):
    """Seed 001's states. `S_SUCCESS`, `S4_QUARANTINE` and `S_ERROR_INFRA` are terminal."""

    S_INIT = "S_INIT"
    S0_BASELINE_CHECK = "S0_BASELINE_CHECK"
    S0_MECHANICAL_AUTOFIX = "S0_MECHANICAL_AUTOFIX"
    S0_MECHANICAL_RECHECK = "S0_MECHANICAL_RECHECK"
    S1_AIDER_FIX = "S1_AIDER_FIX"
    S1_AIDER_RECHECK = "S1_AIDER_RECHECK"
    S2_CODEX_FIX = "S2_CODEX_FIX"
    S2_CODEX_RECHECK = "S2_CODEX_RECHECK"
    S3_CLAUDE_FIX = "S3_CLAUDE_FIX"
    S3_CLAUDE_RECHECK = "S3_CLAUDE_RECHECK"
    S4_QUARANTINE = "S4_QUARANTINE"
    S_SUCCESS = "S_SUCCESS"
    S_ERROR_INFRA = "S_ERROR_INFRA"


class Action(StrEnum):
    """What the step service performs. The last two start no step (nothing to do)."""

    PLAN = "PLAN"
    RUN_PIPELINE = "RUN_PIPELINE"
    WAIT_RETRY = "WAIT_RETRY"
    MECHANICAL_AUTOFIX = "MECHANICAL_AUTOFIX"
    CALL_AIDER = "CALL_AIDER"
    CALL_CODEX = "CALL_CODEX"
    CALL_CLAUDE = "CALL_CLAUDE"
    AWAIT_HANDOFF = "AWAIT_HANDOFF"
    QUARANTINE = "QUARANTINE"
    FINALIZE_SUCCESS = "FINALIZE_SUCCESS"
    FINALIZE_INFRA_ERROR = "FINALIZE_INFRA_ERROR"
    WAIT_INPUT = "WAIT_INPUT"
    NONE = "NONE"


class EscalationKind(StrEnum):
    """Why an incident left the ladder for a human (the escalation record's `kind`)."""

    NEVER_RETRY = "never_retry"
    UNVERIFIABLE = "unverifiable"
    BUDGET_EXHAUSTED = "budget_exhausted"
    NO_FIXER = "no_fixer"
    TIERS_EXHAUSTED = "tiers_exhausted"
    INFRA_FAILURE = "infra_failure"
    VERDICT_MISMATCH = "verdict_mismatch"  # the close found the clean report no longer holds
    REVIEW_FIX = "review_fix"  # clean, but the fix reads its runtime or changed a test
    REGRESSIONS = "regressions"  # its group regressed more than [policy] max_regressions times
    ENVIRONMENT = "environment"  # an env failure: what the step needs is missing (a person)
    STILL_FAILING = "still_failing"  # a transient failure still failing after its retries


class PendingStep(Document):
    """The intent journal: a step begun (persisted before its action) and not completed."""

    step: int = Field(ge=0)
    action: Action
    from_state: State
    new_state: State
    started_at: Timestamp | None = None


def finding_keys(report: ErrorReport) -> tuple[FindingKey, ...]:
    """The findings as a multiset (a sorted tuple), to tell "same findings again" apart.
    Lines move when code is edited, so they are left out; duplicates are kept, so fixing
    one of three findings with one message is a change."""
    return tuple(
        sorted((f.tool, f.path, f.code or "", str(f.category), f.message) for f in report.issues)
    )


_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")


def baseline_key(finding: Finding) -> BaselineKey:
    """A finding as the "same failure" across reports: path, code and message with numbers
    (lines, columns, counts, durations, addresses) and spacing normalised. A verification
    command's finding carries the output's tail: only its first line is kept."""
    message = finding.message.split("; output tail:", 1)[0]
    message = _SPACE.sub(" ", _VOLATILE.sub("<n>", message)).strip()
    return (normal_path(finding.path), finding.code or "", message)


def normal_path(path: str) -> str:
    """A path as findings and own_files compare it: normalised, `/`-separated
    (`./calc.py` and `pkg//m.py` are `calc.py` and `pkg/m.py`)."""
    return posixpath.normpath(path.replace("\\", "/")) if path else path


def own_files(targets: list[str], report: ErrorReport) -> list[str]:
    """The files an incident is about: its targets, every test file the test runner
    selected through a target at the first baseline (a target that is a test, a test that
    imports a target's module or is named after it, the file of a test the failure names:
    `ToolRun.own_tests`; every file of `tests` in an older report), and each target's
    conventional test file (`test_<stem>.py`, `<stem>_test.py`). Only test files that
    `[checks] test_paths` alone brought in are not: a finding there that the first
    baseline already had is the only kind a recheck may excuse (fsm.preexisting)."""
    stems = {posixpath.splitext(posixpath.basename(t))[0] for t in targets}
    conventional = {f"test_{s}.py" for s in stems} | {f"{s}_test.py" for s in stems}
    own = dict.fromkeys(normal_path(t) for t in targets)
    for run in report.tool_runs:
        selected = run.tests if run.own_tests is None else run.own_tests
        for test in run.tests:
            path = normal_path(test.partition("::")[0])
            if test in selected or posixpath.basename(path) in conventional:
                own.setdefault(path)
        for test in selected:
            own.setdefault(normal_path(test.partition("::")[0]))
    return list(own)


class ErrorPipelineContext(Document):
    """Everything the pure state machine decides on, serialized as `state.json`."""

    seal: str | None = Field(
        default=None,
        exclude=True,
        description="state.json only: the step service's HMAC-SHA256 over the rest of the "
        "file (incidents.step.seal); a state.json without a valid one is not believed",
    )
    # identity and targets (seed 001 §2)
    run_id: str
    workstream_id: str
    python_files: list[str] = Field(default_factory=list)
    powershell_files: list[str] = Field(default_factory=list)
    verification_commands: list[str] = Field(
        default_factory=list, description="argv strings; the check of a non-code incident"
    )
    # configuration (seed 001 §2, plus tier modes)
    enable_mechanical_autofix: bool = True
    enable_aider: bool = False
    enable_codex: bool = False
    enable_claude: bool = False
    strict_mode: bool = False
    max_attempts_per_agent: int = Field(
        default=1, ge=1, description="passes of a tier missing from agent_max_attempts"
    )
    agent_max_attempts: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict, description="agent -> its tier's max_attempts (passes allowed)"
    )
    tier_modes: dict[str, TierMode] = Field(
        default_factory=dict, description="agent -> run|handoff; a missing agent runs"
    )
    # what failed (classification, seeds 002/003)
    failure_class: FailureClass = FailureClass.UNKNOWN
    error_code: ErrorCode | None = None
    error_signature: str | None = None
    budget_group: str | None = Field(
        default=None,
        description="the group whose retry budget it draws on (incidents.groups: its "
        "signature's until a person merges or splits it), as of the last budget read",
    )
    # transient retry policy: re-run the baseline check with backoff before any fix
    max_transient_retries: int = Field(default=3, ge=0)
    retry_base_s: float = Field(default=5.0, ge=0)
    retry_max_s: float = Field(default=300.0, ge=0)
    retry_jitter: float | None = Field(
        default=None, ge=0, le=1, description="jitter in [0,1]; None: derived from the id"
    )
    transient_retries: int = Field(default=0, ge=0)
    not_before: Timestamp | None = None
    # a failure that clears by itself (transient) with nothing to re-run waits for its step
    transient_quiet_s: float = Field(
        default=3600.0, ge=0, description="[policy] transient_quiet: quiet this long, recovered"
    )
    last_seen: Timestamp | None = Field(
        default=None, description="its last occurrence (incident.json), as of the last tick"
    )
    step_ok_at: Timestamp | None = Field(
        default=None,
        description="the latest success of its step that matches it (`incidents run` of its "
        "command passing, `capture --ok` of its step), as of the last tick",
    )
    step_ok_by: str | None = Field(default=None, description="what reported that success")
    requeues: int = Field(
        default=0, ge=0, description="times a person sent it back (resolve-escalation --requeue)"
    )
    # per-signature budget, counted across incidents by the caller
    signature_attempts_used: int = Field(default=0, ge=0)
    signature_attempt_limit: int | None = Field(default=None, ge=0)
    # regressions (incident.json `regression_count`, `[policy] max_regressions`)
    regression_count: int = Field(
        default=0, ge=0, description="how many times its group failed again after a close"
    )
    max_regressions: int | None = Field(
        default=None, ge=0, description="more regressions than this escalate at once"
    )
    # the machine
    current_state: State = State.S_INIT
    step: int = Field(default=0, ge=0, description="completed steps; keys each step's effects")
    pending: PendingStep | None = None
    planned: bool = False
    attempt_number: int = Field(default=0, ge=0)
    current_agent: Agent = "none"
    mechanical_fix_applied: bool = False
    agent_attempt_counts: dict[str, int] = Field(default_factory=dict)
    same_error_repeats: int = Field(default=0, ge=0)
    waiting_for_input: bool = False
    handoff_agent: str | None = None
    handoff_deadline: Timestamp | None = None  # unsubmitted then: escalates ([handoff])
    fixer_failure: str | None = Field(
        default=None, description="a fixer crashed or timed out: the reason (-> S_ERROR_INFRA)"
    )
    last_check_at: Timestamp | None = None
    report_labels: list[str] = Field(default_factory=list)
    last_error_report: ErrorReport | None = None
    previous_error_report: ErrorReport | None = None
    ai_attempts: list[AIAttempt] = Field(default_factory=list)
    fixer_wait: str | None = Field(
        default=None, description="why the same tier is called again at not_before (its API)"
    )
    unbudgeted_attempts: list[AIAttempt] = Field(
        default_factory=list, description="fixer calls the API refused: recorded, no try spent"
    )
    # the incident's own failure (issue 14): what success must see gone, and whether a
    # check that passes saw any change at all
    own_files: list[str] | None = Field(
        default=None,
        description="the files the incident is about (targets, every test file the test "
        "runner selected through a target, their conventional test files), fixed by the "
        "first baseline check; None: an older state, every hard finding blocks",
    )
    baseline_keys: list[BaselineKey] | None = Field(
        default=None,
        description="(path, code, normalised message) of every finding of the first baseline "
        "report: outside own_files, these are pre-existing and do not block at a recheck "
        "(never at the baseline check; strict_mode off)",
    )
    baseline_files: dict[str, str] | None = Field(
        default=None,
        description="path -> sha256 of every file the latest complete baseline check "
        "judged: at the close, a file that is not a target must still have this hash "
        "(the fix is in the targets; a test edited by anything else is not a fix)",
    )
    capture_digest: str | None = Field(
        default=None,
        description="sha256 over the targets as capture saw them (incident.json "
        "target_digests); None: not recorded",
    )
    check_digests: list[str] = Field(
        default_factory=list,
        description="sha256 over the targets as each check saw them, in order (a check that "
        "passes with the same digest as before its fix saw no change: not a fix)",
    )
    outcome: Outcome | None = Field(
        default=None,
        description="fixed, not_reproduced (flaky), changed_before_check, recovered, escalated",
    )
    # finalization
    final_status: FinalStatus | None = None
    escalation_kind: EscalationKind | None = None
    escalation_reason: str | None = None
    quarantine_path: str | None = None
    # a human's requeue
    guidance: str | None = Field(
        default=None,
        exclude=True,
        description="the guidance of a requeue, for the prompts of the process that requeued "
        "it; not written to state.json (decisions.json is its record, read for later prompts)",
    )

    @property
    def target_files(self) -> list[str]:
        return [*self.python_files, *self.powershell_files]

    def max_attempts_for(self, agent: str) -> int:
        """Seed 001's `max_attempts_per_agent`, per agent: how many passes its tier gets."""
        return self.agent_max_attempts.get(agent, self.max_attempts_per_agent)

    def has_something_to_check(self) -> bool:
        return bool(self.target_files or self.verification_commands)

    def update_error_reports(self, new_report: ErrorReport) -> None:
        """Shift last -> previous and make `new_report` the last one."""
        self.previous_error_report = self.last_error_report
        self.last_error_report = new_report

    def record_ai_attempt(self, attempt: AIAttempt) -> None:
        """Append to the attempt log; count it for its agent and for the signature budget."""
        self.ai_attempts = [*self.ai_attempts, attempt]
        counts = dict(self.agent_attempt_counts)
        counts[attempt.agent] = counts.get(attempt.agent, 0) + 1
        self.agent_attempt_counts = counts
        self.signature_attempts_used += 1

    # -- outcomes of actions (one per action; see incidents.fsm) --------------------------

    def record_plan(self, verification_commands: list[str] | None = None) -> None:
        """PLAN done: a plan may add verification commands (kept in order, no duplicates)."""
        merged = dict.fromkeys([*self.verification_commands, *(verification_commands or [])])
        self.verification_commands = list(merged)
        self.planned = True

    def adopt_plan(self, verification_commands: list[str]) -> None:
        """The plan on disk, read when a step begins after PLAN: its commands (a plan
        supplied or replaced since) are what the next check runs, replacing the old ones."""
        self.verification_commands = list(dict.fromkeys(verification_commands))

    def record_baseline(self, report: ErrorReport) -> None:
        """The first baseline check's report: what the incident's own failure is. Kept
        across transient retries and a requeue (the first one stands). A report with an
        infrastructure failure is not a baseline: what it could not check would later look
        pre-existing or new at random; the next complete baseline (after a requeue) is."""
        if report.infra_failures:
            return
        if report.judged is not None:  # the latest: a requeued incident's files as they are
            self.baseline_files = dict(report.judged.files)
        if self.baseline_keys is not None:
            return
        self.own_files = own_files(self.target_files, report)
        self.baseline_keys = sorted({baseline_key(f) for f in report.issues})

    def record_check(self, report: ErrorReport, at: datetime, digest: str | None = None) -> None:
        """RUN_PIPELINE done: the canonical check's report becomes the last one; `digest`:
        the targets as the check saw them."""
        if digest is not None:
            self.check_digests = [*self.check_digests, digest]
        if self.last_error_report is not None and finding_keys(report) == finding_keys(
            self.last_error_report
        ):
            self.same_error_repeats += 1
        self.update_error_reports(report)
        self.report_labels = [*self.report_labels, report.label]
        self.last_check_at = at
        self.not_before = None

    def schedule_retry(self, not_before: datetime) -> None:
        """WAIT_RETRY done: the check re-runs once `not_before` has passed."""
        self.transient_retries += 1
        self.not_before = not_before

    def record_autofix(self) -> None:
        """MECHANICAL_AUTOFIX done."""
        self.mechanical_fix_applied = True

    def enter_tier(self, agent: Agent, attempt_number: int) -> None:
        """Seed 001's FIX entry actions (before a CALL_* or AWAIT_HANDOFF)."""
        self.fixer_wait, self.not_before = None, None  # a wait for this tier, if any, is over
        self.current_agent = agent
        self.attempt_number = attempt_number

    def begin_handoff(self, agent: Agent, number: int, until: datetime | None = None) -> None:
        """AWAIT_HANDOFF done: an outside agent may now claim and submit (until `until`)."""
        self.enter_tier(agent, number)
        self.waiting_for_input = True
        self.handoff_agent = agent
        self.handoff_deadline = until

    def end_handoff(self, why: str) -> None:
        """Nobody is awaited any more: the tier calls its program (as after a wait)."""
        self.waiting_for_input, self.handoff_agent, self.handoff_deadline = False, None, None
        self.fixer_wait, self.not_before = why, None

    def submit_handoff(self, attempt: AIAttempt) -> bool:
        """The outside agent's submission; False (and nothing recorded) if none is awaited."""
        if not self.waiting_for_input or attempt.agent != self.handoff_agent:
            return False
        self.record_ai_attempt(attempt)
        self.waiting_for_input = False
        self.handoff_agent = None
        self.handoff_deadline = None
        return True

    def record_api_failure(
        self, attempt: AIAttempt | None, wait: str | None = None, until: datetime | None = None
    ) -> None:
        """A fixer call the API refused: recorded without counting as a try; with `wait`,
        the same tier is called again once `until` has passed."""
        if attempt is not None:
            self.unbudgeted_attempts = [*self.unbudgeted_attempts, attempt]
        self.fixer_wait, self.not_before = wait, until

    def record_fixer_failure(self, reason: str) -> None:
        """A fixer (mechanical or AI) crashed, timed out or could not start."""
        self.fixer_failure = reason

    def record_final(
        self,
        status: FinalStatus,
        *,
        reason: str | None = None,
        kind: EscalationKind | None = None,
        quarantine_path: str | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        """QUARANTINE / FINALIZE_SUCCESS / FINALIZE_INFRA_ERROR done."""
        self.final_status = status
        self.outcome = outcome or (
            Outcome.FIXED if status is FinalStatus.SUCCESS else Outcome.ESCALATED
        )
        self.escalation_reason = reason
        self.escalation_kind = kind
        self.quarantine_path = quarantine_path

    def poison(self, reason: str) -> None:
        """Quarantined without running its step again: its processing kept killing the
        worker (the watcher's poison rule)."""
        self.pending = None
        self.current_state = State.S4_QUARANTINE
        self.record_final(
            FinalStatus.QUARANTINED,
            reason=reason,
            quarantine_path=f"error_archive/escalated/{self.workstream_id}",
        )

    def requeue(self, guidance: str) -> None:
        """A human sent the escalated incident back: to S_INIT for another climb with
        `guidance`, its history kept (steps, report labels, attempts and the artifacts
        keyed by them continue, never overwritten), the per-climb counters reset."""
        reset: dict[str, object] = {
            "current_state": State.S_INIT,
            # env and never_retry keep their class: a requeue re-runs the reproduction
            # (the person set what was missing), never a fixer
            "requeues": self.requeues + 1,
            "pending": None,
            "planned": True,  # the plan and original_scripts/ of the first climb stand
            "current_agent": "none",
            "attempt_number": 0,
            "agent_attempt_counts": {},
            "transient_retries": 0,
            "not_before": None,
            "waiting_for_input": False,
            "handoff_agent": None,
            "handoff_deadline": None,
            "fixer_failure": None,
            "fixer_wait": None,
            "signature_attempts_used": 0,
            "max_regressions": None,  # a person looked at the regressions: climb again
            "final_status": None,
            "escalation_kind": None,
            "escalation_reason": None,
            "quarantine_path": None,
            "outcome": None,
            "guidance": guidance,
        }
        for name, value in reset.items():
            setattr(self, name, value)

    # -- the step journal ----------------------------------------------------------------

    def begin_step(self, action: Action, new_state: State, at: datetime | None = None) -> None:
        """Journal the intent before performing `action` (persist right after)."""
        self.pending = PendingStep(
            step=self.step,
            action=action,
            from_state=self.current_state,
            new_state=new_state,
            started_at=at,
        )

    def complete_step(self) -> None:
        """After the outcome was recorded: enter the new state (persist once, atomically)."""
        if self.pending is None:
            raise ValueError(f"no step pending in state {self.current_state}")
        self.current_state = self.pending.new_state
        self.step += 1
        self.pending = None
