"""The planner: hypotheses from the failure class, error code and signature history;
actions and criteria from the incident's targets and verification commands; plan files."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from incidents.errors import InvalidDocument, UnsafeFile
from incidents.layout import Root
from incidents.models import Incident, Plan
from incidents.planner import (
    SignatureHistory,
    commands_to_run,
    load_plan,
    make_plan,
    render_plan_md,
    validate_plan_file,
    write_plan,
)
from tests.helpers import FIXTURES

NOW = datetime(2026, 2, 17, 3, 15, tzinfo=UTC)
PLANS = FIXTURES / "plans"


def incident(**fields: Any) -> Incident:
    doc: dict[str, Any] = {
        "incident_id": "incident_20260217_120000_lint_abc123",
        "status": "new",
        "created_at": "2026-02-17T12:00:00+00:00",
        "updated_at": "2026-02-17T12:00:00+00:00",
        "run_id": "run_20260217_120000_000001",
        "year": 2026,
        "month": 2,
        "ym": "2026-02",
        "step": "generate_report",
        "failure_class": "code",
        "error_code": "LINT_FAILURE",
        "message": "ruff found 3 errors",
        "error_signature": "code | generate_report | ruff found N errors",
    }
    return Incident.model_validate({**doc, **fields})


def reasons(plan: Plan) -> list[tuple[str, str]]:
    return [(h.confidence, h.reason) for h in plan.root_cause_hypotheses]


def test_lint_failure_with_targets_plans_a_targeted_fix() -> None:
    inc = incident(python_files=["gen/report.py", "gen/util.py"], verify=["python -m pytest -q"])
    plan = make_plan(inc, None, NOW)
    assert plan.incident_id == inc.incident_id and plan.generated_at == NOW
    assert plan.source == "planner"
    assert plan.summary == "generate_report failed (code, LINT_FAILURE): ruff found 3 errors"
    assert reasons(plan) == [
        ("medium", "generated code violates lint rules"),
        ("low", "a defect in the step's code or in the files it generated"),
    ]
    [action] = plan.actions
    assert (action.id, action.priority, action.risk) == ("A1", "P0", "low")
    assert action.title == "Fix the check findings in the target files"
    assert action.target_paths == ["gen/report.py", "gen/util.py"]
    assert action.verification == ["python -m pytest -q"]
    assert plan.verification_commands == ["python -m pytest -q"]
    assert plan.done_criteria == [
        "canonical checks pass on every target",
        "every verification command exits 0",
        "the error signature does not reproduce",
    ]


def test_commands_to_run_are_the_incidents_then_the_plans_then_its_actions() -> None:
    plan = make_plan(incident(python_files=["a.py"], verify=["python -V"]), None, NOW)
    replaced = plan.model_copy(
        update={
            "verification_commands": ["python check.py", "python -V"],
            "actions": [plan.actions[0].model_copy(update={"verification": ["pytest -q"]})],
        }
    )
    inc = incident(verify=["python -V"])
    assert commands_to_run(inc, replaced) == ["python -V", "python check.py", "pytest -q"]
    assert commands_to_run(incident(), replaced.model_copy(update={"actions": []})) == [
        "python check.py",
        "python -V",
    ]


def test_transient_timeout_retries_with_backoff_and_has_no_targets() -> None:
    inc = incident(failure_class="transient", error_code="TIMEOUT", step="amazon_download",
                   message="Network timeout", verify=["python scripts/download.py --dry-run"])  # fmt: skip
    plan = make_plan(inc, None, NOW)
    assert reasons(plan)[0] == (
        "medium",
        "the provider or service was slow or unavailable: retry with backoff",
    )
    [action] = plan.actions
    assert action.title == "Re-run the step's verification with backoff"
    assert action.target_paths == [] and action.verification == inc.verify
    assert "canonical checks pass on every target" not in plan.done_criteria


def test_transient_with_nothing_to_verify_says_so() -> None:
    plan = make_plan(incident(failure_class="transient", error_code=None), None, NOW)
    [action] = plan.actions
    assert "no verification command" in action.title
    assert plan.verification_commands == []
    assert plan.done_criteria[0] == "the step 'generate_report' succeeds when run again"


@pytest.mark.parametrize(
    ("failure_class", "first_reason", "first_action"),
    [
        ("env", "a missing dependency or configuration", "Install or configure"),
        ("never_retry", "credentials or permissions are wrong", "Escalate to a human"),
        ("unknown", "an unclassified failure", "Investigate the log tail"),
        ("code", "a defect in the step's code", "Find the failing code"),
    ],
)
def test_each_failure_class_has_its_hypothesis_and_action(
    failure_class: str, first_reason: str, first_action: str
) -> None:
    plan = make_plan(incident(failure_class=failure_class, error_code=None), None, NOW)
    assert plan.root_cause_hypotheses[0].reason.startswith(first_reason)
    assert plan.root_cause_hypotheses[0].confidence == "medium"
    assert plan.actions[0].title.startswith(first_action)


def test_never_retry_does_not_plan_a_retry_even_for_a_timeout_code() -> None:
    plan = make_plan(incident(failure_class="never_retry", error_code="TIMEOUT"), None, NOW)
    assert [a.title for a in plan.actions] == [
        "Escalate to a human: check the credentials and permissions"
    ]
    assert plan.done_criteria[0] == "a human has fixed the credentials or permissions"


def test_history_raises_confidence_and_adds_a_recurrence_hypothesis() -> None:
    inc = incident(python_files=["a.py"])
    fresh = make_plan(inc, SignatureHistory(), NOW)
    assert reasons(fresh) == reasons(make_plan(inc, None, NOW))
    mostly_fixed = make_plan(inc, SignatureHistory(occurrences=4, resolved=3, escalated=1), NOW)
    assert reasons(mostly_fixed) == [
        ("high", "generated code violates lint rules"),
        ("low", "a defect in the step's code or in the files it generated"),
        ("high", "a known recurring failure: seen in 4 earlier incident(s), "
                 "3 of 4 resolved without a human"),
    ]  # fmt: skip
    escalated = make_plan(inc, SignatureHistory(occurrences=2, resolved=0, escalated=2), NOW)
    assert reasons(escalated)[-1] == (
        "medium",
        "a recurring failure the ladder has not fixed before: seen in 2 earlier incident(s), "
        "2 of 2 escalated to a human",
    )
    open_only = make_plan(inc, SignatureHistory(occurrences=1), NOW)
    assert reasons(open_only)[-1] == ("low", "seen in 1 earlier incident(s), none closed yet")


def test_summary_is_redacted_one_line_and_bounded() -> None:
    inc = incident(message="login failed\n  password=hunter2hunter2 " + "x" * 400)
    plan = make_plan(inc, None, NOW)
    assert "hunter2" not in plan.summary and "[REDACTED]" in plan.summary
    assert "\n" not in plan.summary and len(plan.summary) <= 240


def test_malformed_fields_never_reach_the_planner_and_empty_ones_are_skipped() -> None:
    with pytest.raises(ValidationError) as refused:  # validated at the edge, where it is read
        incident(python_files="a.py", verify=[1, "python -V"], failure_class=7)
    fields = {str(e["loc"][0]) for e in refused.value.errors()}
    assert fields == {"python_files", "verify", "failure_class"}
    plan = make_plan(incident(python_files=[""], verify=["", "python -V"]), None, NOW)
    assert plan.verification_commands == ["python -V"]
    assert all(a.target_paths == [] for a in plan.actions)


def test_markdown_lists_everything() -> None:
    inc = incident(python_files=["gen/re`port.py"], verify=["python -m pytest -q"])
    md = render_plan_md(make_plan(inc, SignatureHistory(1, 1, 0), NOW))
    assert md.startswith("# Plan for incident_20260217_120000_lint_abc123\n")
    for text in ("## Summary", "- **H1** (high): generated code violates lint rules",
                 "### A1: Fix the check findings in the target files", "Priority P0, risk low.",
                 "- ``gen/re`port.py``", "- `python -m pytest -q`",
                 "- [ ] every verification command exits 0"):  # fmt: skip
        assert text in md, text


# --- files -------------------------------------------------------------------------------


def fixture_for(name: str, incident_id: str, tmp_path: Path) -> Path:
    text = (PLANS / name).read_text().replace("INCIDENT_ID", incident_id)
    path = tmp_path / name
    path.write_text(text)
    return path


def test_write_and_load_round_trip(root: Root) -> None:
    root.ensure()
    plan = make_plan(incident(python_files=["a.py"]), None, NOW)
    path = write_plan(root, plan.incident_id, plan)
    folder = root.plan_dir(plan.incident_id)
    assert path == folder / "plan.json"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert json.loads(path.read_text())["generated_at"] == "2026-02-17T03:15:00+00:00"
    assert (folder / "plan.md").read_text() == render_plan_md(plan)
    assert load_plan(root, plan.incident_id) == plan
    assert load_plan(root, "incident_none") is None
    assert sorted(os.listdir(folder)) == ["plan.json", "plan.md"]  # no temp files left


def test_write_plan_refuses_a_plan_for_another_incident(root: Root) -> None:
    plan = make_plan(incident(), None, NOW)
    with pytest.raises(ValueError, match="not 'other'"):
        write_plan(root, "other", plan)


def test_validate_accepts_seed_004_shape(tmp_path: Path) -> None:
    plan = validate_plan_file(fixture_for("valid.json", "inc_1", tmp_path), "inc_1")
    assert plan.actions[0].target_paths == ["scripts/provider_download.py"]
    assert plan.source == "error-plan"


def test_validate_names_the_field(tmp_path: Path) -> None:
    path = fixture_for("bad_priority.json", "inc_1", tmp_path)
    with pytest.raises(InvalidDocument) as info:
        validate_plan_file(path, "inc_1")
    assert info.value.field == "actions.0.priority"
    assert str(info.value).startswith(f"{path}: actions.0.priority: Input should be 'P0'")


def test_validate_reports_every_bad_field(tmp_path: Path) -> None:
    with pytest.raises(InvalidDocument) as info:
        validate_plan_file(fixture_for("missing_fields.json", "inc_1", tmp_path), "inc_1")
    assert info.value.field == "summary"
    assert "root_cause_hypotheses.0.confidence" in info.value.reason
    assert "done_criteria: Field required" in info.value.reason


def test_validate_refuses_another_incidents_plan(tmp_path: Path) -> None:
    with pytest.raises(InvalidDocument) as info:
        validate_plan_file(fixture_for("valid.json", "inc_other", tmp_path), "inc_1")
    assert info.value.field == "incident_id"
    assert "is for incident 'inc_other', not 'inc_1'" in str(info.value)


def test_validate_is_strict_about_the_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidDocument, match="duplicate key"):
        validate_plan_file(fixture_for("duplicate_keys.json", "inc_1", tmp_path), "inc_1")
    (tmp_path / "nan.json").write_text('{"summary": NaN}')
    with pytest.raises(InvalidDocument, match="NaN"):
        validate_plan_file(tmp_path / "nan.json", "inc_1")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(InvalidDocument, match="expected a JSON object"):
        validate_plan_file(tmp_path / "list.json", "inc_1")
    os.symlink(fixture_for("valid.json", "inc_1", tmp_path), tmp_path / "link.json")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        validate_plan_file(tmp_path / "link.json", "inc_1")
    (tmp_path / "big.json").write_text(" " * (1 << 20) + "{}")
    with pytest.raises(UnsafeFile, match="over the cap"):
        validate_plan_file(tmp_path / "big.json", "inc_1")


def test_load_plan_refuses_a_corrupt_plan_on_disk(root: Root) -> None:
    folder = root.plan_dir("inc_1")
    folder.mkdir(parents=True)
    (folder / "plan.json").write_text('{"incident_id": "inc_1"}')
    with pytest.raises(InvalidDocument, match="plan.json: generated_at: Field required"):
        load_plan(root, "inc_1")
