"""The name of every file an incident leaves behind, in one place.

Stdlib only (capture imports it). The bundle's own files live in the incident's folder,
which moves between the inbox and the archive buckets; the run artifacts live in
`error_runs/<id>/` (`layout.Root.runs_dir`) and the plan in `error_plans/<id>/`.
"""

from __future__ import annotations

# the bundle (the incident's folder)
INCIDENT = "incident.json"
STATUS = "status.txt"
LOG_TAIL = "log_tail.txt"
AUDIT_TAIL = "audit_tail.jsonl"
CONTEXT = "context.json"
BUNDLE_FILES = (INCIDENT, STATUS, LOG_TAIL, AUDIT_TAIL, CONTEXT)
STATE = "state.json"  # the escalation machine's context; written by `incidents.step` only
DECISIONS = "decisions.json"  # human decisions on escalations
METADATA = "metadata.json"  # the quarantine bundle's summary
REASON = "reason.txt"  # why a bundle was rejected

# the run folder (error_runs/<id>/)
AI_ATTEMPTS = "ai_attempts.json"
RUN_RESULT = "run_result.json"
REPORT_PREFIX = "error_report_attempt_"
PROMPT_PREFIX = "prompt_attempt_"
ATTEMPT_PREFIX = "attempt_"

# the plan folder (error_plans/<id>/)
PLAN_JSON = "plan.json"
PLAN_MD = "plan.md"


def report_id(label: str) -> str:
    """A canonical report's id, as AI attempts cite it: `error_report_attempt_<label>`."""
    return f"{REPORT_PREFIX}{label}"


def report_name(label: str) -> str:
    return f"{report_id(label)}.json"


def prompt_name(attempt_number: int) -> str:
    return f"{PROMPT_PREFIX}{attempt_number}.md"


def attempt_name(iteration: int) -> str:
    """Seed 004's `attempt_NN.json`, one per fix-and-recheck iteration."""
    return f"{ATTEMPT_PREFIX}{iteration:02d}.json"


def autofix_step_name(step: int) -> str:
    return f"autofix_step_{step}.json"


def fixer_step_name(step: int) -> str:
    return f"fixer_step_{step}.json"


def handoff_step_name(step: int) -> str:
    return f"handoff_step_{step}.json"


def tamper_baseline_name(step: int) -> str:
    """The targets and check configs as the baseline check at `step` found them."""
    return f"tamper_baseline_step_{step}.json"


def verdict_step_name(step: int) -> str:
    """The close's reading of the last canonical report at the FINALIZE_SUCCESS `step`."""
    return f"verdict_step_{step}.json"


# what the step service writes into the run folder (never a skill or a person): a new
# incident's runs folder holding one of these holds an earlier incident's, or a planted one
_MACHINE_PREFIXES = (
    REPORT_PREFIX, PROMPT_PREFIX, "autofix_step_", "fixer_step_", "handoff_step_",
    "tamper_baseline_step_", "verdict_step_", "mcp_config_attempt_",
)  # fmt: skip


def machine_written(name: str) -> bool:
    """Whether `name` in error_runs/<id>/ is a step artifact the step service writes (or
    its run_result.json / ai_attempts.json), as opposed to a skill's attempt_NN.json."""
    return name in (RUN_RESULT, AI_ATTEMPTS) or name.startswith(_MACHINE_PREFIXES)


_STEP_KEYED = ("autofix_step_", "fixer_step_", "handoff_step_", "tamper_baseline_step_",
               "verdict_step_")  # fmt: skip


def ahead_of(name: str, step: int, labels: list[str]) -> bool:
    """Whether `name` in error_runs/<id>/ is a step artifact no step up to `step` wrote: a
    report whose label is not among the recorded `labels`, a file keyed by a step at or
    after `step`, a run_result.json before the close. Such a file, found once a fixer
    ran, was planted by it (a later step would reuse it as its own)."""
    if name == RUN_RESULT:
        return True
    if name.startswith(REPORT_PREFIX) and name.endswith(".json"):
        return name[len(REPORT_PREFIX) : -len(".json")] not in labels
    for prefix in _STEP_KEYED:
        if name.startswith(prefix) and name.endswith(".json"):
            number = name[len(prefix) : -len(".json")]
            return not number.isdigit() or int(number) >= step
    return False
