"""Plans: `error_plans/<id>/plan.json` + `plan.md` in seed 004's shape.

`make_plan` is pure: the validated incident (`models.Incident`), the history of its
error signature (filled by the caller from the mirror) and the time in, a `Plan` out.
Hypotheses come from a table keyed on the error code and the failure class; their
confidence rises when the signature has been seen before. The I/O part writes, loads and
validates plan files; a plan that does not validate is refused with its field paths and
the plan already on disk is left untouched.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from incidents import artifacts, fsutil
from incidents.errors import InvalidDocument, explain_validation
from incidents.layout import Root
from incidents.models import Hypothesis, Incident, Plan, PlanAction
from incidents.models.plan import Level, RegressionLink
from incidents.redact import redact, redact_json
from incidents.vocab import ErrorCode, FailureClass, IncidentStatus

if TYPE_CHECKING:
    from collections.abc import Sequence

    from incidents.bundle_rules import Problem
    from incidents.models import ErrorPipelineContext

SUMMARY_MAX = 240

# What each error code (seed 002) most likely means; the primary hypothesis.
_BY_CODE: dict[str, str] = {
    ErrorCode.TIMEOUT: "the provider or service was slow or unavailable: retry with backoff",
    ErrorCode.RATE_LIMIT: "an API rate limit was hit: wait for the window to reset, then retry",
    ErrorCode.SYNTAX: "the code no longer parses: a syntax error was introduced",
    ErrorCode.TEST_FAILURE: "a change broke behaviour that the tests cover",
    ErrorCode.LINT_FAILURE: "generated code violates lint rules",
    ErrorCode.TASK_FAILED: "the step's task reported failure (see the log tail for why)",
    ErrorCode.HOOK_FAILURE: "a hook around the step failed: the tooling, not the step, is broken",
}
# What each failure class (seed 003) most likely means.
_BY_CLASS: dict[str, str] = {
    FailureClass.TRANSIENT: "a transient outage (network, provider, contention): retry with backoff",
    FailureClass.CODE: "a defect in the step's code or in the files it generated",
    FailureClass.ENV: "a missing dependency or configuration (package, program, variable, path)",
    FailureClass.NEVER_RETRY: "credentials or permissions are wrong or revoked: needs a human",
    FailureClass.UNKNOWN: "an unclassified failure: the log tail is the best evidence",
}
_LEVELS: tuple[Level, ...] = ("low", "medium", "high")
_TRANSIENT_CODES = (ErrorCode.TIMEOUT, ErrorCode.RATE_LIMIT)


@dataclass(frozen=True)
class SignatureHistory:
    """What the mirror knows about earlier incidents with the same error signature.

    `occurrences` counts past incidents (not this one); `resolved` and `escalated` how
    many of them closed each way.
    """

    occurrences: int = 0
    resolved: int = 0
    escalated: int = 0

    @property
    def seen_before(self) -> bool:
        return self.occurrences > 0


def _raise(level: Level) -> Level:
    return _LEVELS[min(_LEVELS.index(level) + 1, len(_LEVELS) - 1)]


def _targets(incident: Incident) -> list[str]:
    return [t for t in (*incident.python_files, *incident.powershell_files) if t]


def _verify(incident: Incident) -> list[str]:
    return [v for v in incident.verify if v]


def hypotheses_for(
    failure_class: str, error_code: str | None, history: SignatureHistory | None
) -> list[Hypothesis]:
    """The table lookup: the error code's reading first, then the class's, then history."""
    reasons: list[tuple[str, Level]] = []
    if error_code in _BY_CODE:
        reasons.append((_BY_CODE[error_code], "medium"))
    by_class = _BY_CLASS.get(failure_class, _BY_CLASS[FailureClass.UNKNOWN])
    reasons.append((by_class, "low" if reasons else "medium"))
    if history is not None and history.seen_before:
        reasons[0] = (reasons[0][0], _raise(reasons[0][1]))
        closed = history.resolved + history.escalated
        if history.resolved > history.escalated:
            reasons.append(
                (
                    f"a known recurring failure: seen in {history.occurrences} earlier "
                    f"incident(s), {history.resolved} of {closed} resolved without a human",
                    "high",
                )
            )
        elif history.escalated:
            reasons.append(
                (
                    f"a recurring failure the ladder has not fixed before: seen in "
                    f"{history.occurrences} earlier incident(s), {history.escalated} of "
                    f"{closed} escalated to a human",
                    "medium",
                )
            )
        else:
            reasons.append(
                (f"seen in {history.occurrences} earlier incident(s), none closed yet", "low")
            )
    return [
        Hypothesis(id=f"H{i}", confidence=level, reason=reason)
        for i, (reason, level) in enumerate(reasons, 1)
    ]


def _actions(incident: Incident, failure_class: str, error_code: str | None) -> list[PlanAction]:
    targets, verify, step = _targets(incident), _verify(incident), incident.step
    never = failure_class == FailureClass.NEVER_RETRY
    transient = failure_class == FailureClass.TRANSIENT or error_code in _TRANSIENT_CODES
    out: list[PlanAction] = []

    def act(title: str, priority: str, risk: str, checks: list[str], paths: list[str]) -> None:
        out.append(
            PlanAction.model_validate(
                {"id": f"A{len(out) + 1}", "title": title, "priority": priority, "risk": risk,
                 "target_paths": paths, "verification": checks}
            )
        )  # fmt: skip

    if never:
        act("Escalate to a human: check the credentials and permissions", "P0", "high", [], [])
    if transient and not never:
        title = (
            "Re-run the step's verification with backoff"
            if verify
            else f"Re-run the step {step!r} with backoff (it has no verification command)"
        )
        act(title, "P0", "low", verify, [])
    if targets:
        act(
            "Fix the check findings in the target files",
            "P1" if out else "P0",
            "low",
            verify,
            targets,
        )
    if failure_class == FailureClass.ENV:
        act("Install or configure the missing dependency", "P1", "medium", verify, [])
    if failure_class == FailureClass.CODE and not targets:
        act(
            "Find the failing code from the log tail and name it as a target",
            "P1",
            "medium",
            verify,
            [],
        )
    if not out:
        act("Investigate the log tail and the step's context", "P1", "medium", verify, [])
    return out


def _done_criteria(incident: Incident, failure_class: str) -> list[str]:
    out: list[str] = []
    if failure_class == FailureClass.NEVER_RETRY:
        out.append("a human has fixed the credentials or permissions")
    if _targets(incident):
        out.append("canonical checks pass on every target")
    if _verify(incident):
        out.append("every verification command exits 0")
    else:
        out.append(f"the step {incident.step!r} succeeds when run again")
    out.append("the error signature does not reproduce")
    return out


def summarize(incident: Incident) -> str:
    failure_class = incident.failure_class.value
    code = incident.error_code
    kind = f"{failure_class}, {code.value}" if code else failure_class
    message = " ".join(incident.message.split())
    text = redact(f"{incident.step} failed ({kind}): {message}")
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1] + "…"


def make_plan(
    incident: Incident,
    history: SignatureHistory | None,
    now: datetime,
    regression: RegressionLink | None = None,
) -> Plan:
    """The planner's plan for an incident (pure); `regression`: the incident it regresses."""
    failure_class = incident.failure_class.value
    error_code = incident.error_code.value if incident.error_code else None
    actions = _actions(incident, failure_class, error_code)
    hypotheses = hypotheses_for(failure_class, error_code, history)
    if regression is not None:
        hypotheses.insert(0, _regression_hypothesis(regression))
        for n, h in enumerate(hypotheses, 1):
            h.id = f"H{n}"
    return Plan(
        incident_id=incident.incident_id,
        generated_at=now,
        summary=summarize(incident),
        regression=regression,
        root_cause_hypotheses=hypotheses,
        actions=actions,
        verification_commands=_verify(incident),
        done_criteria=_done_criteria(incident, failure_class),
        source="planner",
    )


def _regression_hypothesis(link: RegressionLink) -> Hypothesis:
    closed = f"closed {link.closed_at}" if link.closed_at else "closed"
    how = f" ({link.outcome})" if link.outcome else ""
    where = "; ".join(
        f"{what}: {path}" for what, path in (("its verdict", link.verdict),
                                              ("its close record", link.closed_by_hand
                                               and link.record),
                                              ("its fix", link.diff)) if path
    )  # fmt: skip
    if link.closed_by_hand:
        how = f" ({link.closed_by_hand})"
    return Hypothesis(
        id="H0",
        confidence="high",
        reason=redact(
            f"a regression (#{link.count} of its group) of {link.of}, {closed}{how}: the "
            f"earlier fix no longer holds, or what it fixed came back"
            + (f" ({where})" if where else "")
        ),
    )


def commands_to_run(incident: Incident, plan: Plan) -> list[str]:
    """What a check runs under `plan`: the incident's own `verify` commands, then the
    plan's, then each action's (in order, no duplicates). A replaced plan's commands
    replace the old plan's; the incident's stay."""
    commands = [*_verify(incident), *plan.verification_commands]
    for action in plan.actions:
        commands.extend(action.verification)
    return list(dict.fromkeys(commands))


def _code(text: str) -> str:
    """Inline code that stays inline whatever backticks `text` holds."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render_plan_md(plan: Plan) -> str:
    """`plan.md`: the same plan, for a person."""
    lines = [f"# Plan for {plan.incident_id}", ""]
    lines.append(f"Generated {plan.generated_at.isoformat()} by {plan.source or 'unknown'}.")
    lines += ["", "## Summary", "", plan.summary]
    if plan.regression is not None:
        r = plan.regression
        lines += ["", "## Regression", "", f"A regression (#{r.count}) of {_code(r.of)}, "
                  f"{r.bucket}" + (f", closed {r.closed_at}" if r.closed_at else "")
                  + (f" ({r.outcome})" if r.outcome else "") + "."]  # fmt: skip
        if r.closed_by_hand:
            lines += [f"The earlier incident was {r.closed_by_hand}."]
        lines += [f"- {what}: {_code(path)}" for what, path in
                  (("Earlier verdict", r.verdict),
                   ("Earlier close record", None if r.verdict else r.record),
                   ("Earlier fix (diff)", r.diff)) if path]  # fmt: skip
    lines += ["", "## Root-cause hypotheses", ""]
    lines += [f"- **{h.id}** ({h.confidence}): {h.reason}" for h in plan.root_cause_hypotheses]
    lines += ["", "## Actions"]
    for a in plan.actions:
        lines += ["", f"### {a.id}: {a.title}", "", f"Priority {a.priority}, risk {a.risk}."]
        if a.target_paths:
            lines += ["", "Targets:", *(f"- {_code(p)}" for p in a.target_paths)]
        if a.verification:
            lines += ["", "Verification:", *(f"- {_code(c)}" for c in a.verification)]
    lines += ["", "## Verification commands", ""]
    lines += [f"- {_code(c)}" for c in plan.verification_commands] or ["(none)"]
    lines += ["", "## Done criteria", ""]
    lines += [f"- [ ] {c}" for c in plan.done_criteria]
    return "\n".join(lines) + "\n"


# --- files -------------------------------------------------------------------------------


def write_plan(root: Root, incident_id: str, plan: Plan) -> Path:
    """Write plan.json then plan.md, each old-or-new; returns the plan.json path."""
    if plan.incident_id != incident_id:
        raise ValueError(f"plan is for {plan.incident_id!r}, not {incident_id!r}")
    folder = root.plan_dir(incident_id)
    fsutil.ensure_dir(folder)
    fsutil.atomic_replace_files(
        folder,
        [
            (artifacts.PLAN_JSON, fsutil.dump_model(plan)),
            (artifacts.PLAN_MD, render_plan_md(plan).encode("utf-8")),
        ],
    )
    return folder / artifacts.PLAN_JSON


def plan_from_doc(doc: dict[str, Any], where: str, incident_id: str) -> Plan:
    """Validate a parsed plan document; InvalidDocument names the first bad field and
    lists every other one in its reason."""
    try:
        plan = Plan.model_validate(doc)
    except ValidationError as exc:
        field, reason = explain_validation(exc, others=5)
        raise InvalidDocument(where, reason, field) from exc
    if plan.incident_id != incident_id:
        raise InvalidDocument(
            where, f"is for incident {plan.incident_id!r}, not {incident_id!r}", "incident_id"
        )
    return plan


def validate_plan_file(path: str | os.PathLike[str], incident_id: str) -> Plan:
    """Read (size cap, no symlinks, strict JSON) and validate a plan for `incident_id`."""
    return plan_from_doc(redact_json(fsutil.read_json_object(path)), os.fspath(path), incident_id)


def load_plan(root: Root, incident_id: str) -> Plan | None:
    """The plan on disk, None when there is none; InvalidDocument when it does not validate."""
    path = root.plan_dir(incident_id) / artifacts.PLAN_JSON
    try:
        return validate_plan_file(path, incident_id)
    except FileNotFoundError:
        return None


def apply_plan(root: Root, folder: Path, plan: Plan, *, sync_dir: bool = True) -> tuple[Path, str]:
    """Write `plan` and move a `new` incident (in `folder`) to `planned`. The caller holds
    the incident's lock (`store.incident_lock`). Returns the plan.json path and the
    incident's status. `sync_dir=False`: the caller fsyncs the incident's folder next."""
    from incidents import store

    path = write_plan(root, plan.incident_id, plan)
    doc = store.read_incident(folder)
    if doc["status"] != IncidentStatus.NEW:
        return path, str(doc["status"])
    store.set_status(folder, doc, IncidentStatus.PLANNED.value, sync_dir=sync_dir)
    return path, IncidentStatus.PLANNED.value


# --- capture's rules, held to a plan --------------------------------------------------------

PYTHON_SUFFIXES = (".py", ".pyi")
POWERSHELL_SUFFIXES = (".ps1", ".psm1", ".psd1")


def plan_problems(plan: Plan, workdir: str, allow: Sequence[str]) -> list[Problem]:
    """Every rule of capture's (`incidents.bundle_rules`) the plan breaks, each naming its
    field: a verification command the allowlist refuses, a target path that is not a
    canonical path inside the incident's `workdir` (symlinks followed)."""
    from incidents.bundle_rules import Problem, command_problems, target_problem

    base = os.path.realpath(workdir)
    commands = [(f"verification_commands.{i}", c) for i, c in enumerate(plan.verification_commands)]
    out: list[Problem] = []
    for n, action in enumerate(plan.actions):
        commands += [
            (f"actions.{n}.verification.{i}", c) for i, c in enumerate(action.verification)
        ]
        out += [
            Problem(f"actions.{n}.target_paths.{i}", name, problem)
            for i, name in enumerate(action.target_paths)
            if (problem := target_problem(name, base)) is not None
        ]
    refused = [
        Problem(field, p.value, p.rule)
        for field, command in commands
        for p in command_problems([command], allow, workdir)
    ]
    return refused + out


def add_targets(ctx: ErrorPipelineContext, plan: Plan, workdir: str) -> None:
    """The plan's target paths join the incident's targets (a fixer may edit them, the
    checks check them), by language; only those capture's target rule allows in `workdir`
    (a plan written by hand, not through `plan --from`, is not trusted more). A path of
    another kind is no check's target. The capture's digest covered fewer files: compared
    with a check of more it would say they changed, so it is dropped."""
    from incidents.bundle_rules import target_problem

    base = os.path.realpath(workdir)
    named = [p for a in plan.actions for p in a.target_paths if target_problem(p, base) is None]
    python = [p for p in named if p.endswith(PYTHON_SUFFIXES)]
    powershell = [p for p in named if p.lower().endswith(POWERSHELL_SUFFIXES)]
    python = list(dict.fromkeys([*ctx.python_files, *python]))
    powershell = list(dict.fromkeys([*ctx.powershell_files, *powershell]))
    if (python, powershell) != (ctx.python_files, ctx.powershell_files):
        ctx.python_files, ctx.powershell_files = python, powershell
        ctx.capture_digest = None
