"""Issue 16: a capture whose group has an incident resolved by a verified fix within
`[capture] regression_window_days` opens a regression of it; past `[policy]
max_regressions` the regression escalates instead of going to the fixers. A return after
a close that verified no fix (archived by hand) is a recurrence: linked, not counted.
Through the CLI, real checks (ruff mends the target: a verified fix), and `reindex`."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import MESSY, Cli, ctx_of, use_config

MSG = "nightly export failed"
TIERS_OFF = (
    '[tiers.aider]\nmode = "off"\n[tiers.codex]\nmode = "off"\n[tiers.claude]\nmode = "off"\n'
)
RUFF = '[checks]\ntools = ["ruff"]\n' + TIERS_OFF  # ruff --fix mends MESSY: a verified fix


@pytest.fixture(autouse=True)
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The failing project every capture here names: m.py, which ruff finds messy."""
    use_config(tmp_path, monkeypatch, RUFF)
    path = tmp_path / "ws"
    path.mkdir()
    (path / "m.py").write_text(MESSY)
    monkeypatch.chdir(path)
    return path


def cap(cli: Cli, *extra: str, message: str = MSG) -> str:
    target = ("--workdir", os.getcwd(), "--python-file", "m.py")
    r = cli("capture", "--step", "export", "--message", message, *target, *extra)
    assert r.code == 0, r.err
    return r.out.strip()


def doc(root: Root, incident_id: str) -> dict[str, Any]:
    _, folder = root.locate(incident_id)
    return dict(json.loads((folder / "incident.json").read_text()))


def resolve(cli: Cli, incident_id: str) -> None:
    """Resolved by a verified fix (ruff mends m.py at the check), then m.py is broken
    again: the failure can come back."""
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    root = Root(Path(os.environ["INCIDENTS_ROOT"]))
    assert (
        json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())["outcome"]
        == "fixed"
    )
    Path("m.py").write_text(MESSY)


def test_a_repeat_after_a_fix_is_a_regression_whose_plan_links_the_fix(
    cli: Cli, root: Root, ws: Path
) -> None:
    target = ("--workdir", str(ws), "--python-file", "m.py")
    first = cap(cli)
    assert cli("drive", first).code == 0  # ruff --fix mends it: resolved, fixed
    assert root.locate(first)[0] == "resolved"
    assert "regression_of" not in doc(root, first)
    fixed = (ws / "m.py").read_text()
    (ws / "m.py").write_text("import sys\n" + fixed)  # the same kind of failure comes back
    second = cap(cli, *target)
    assert second != first
    assert doc(root, second)["regression_of"] == first
    assert doc(root, second)["regression_count"] == 1
    assert "recurrence_of" not in doc(root, second)
    listing = cli("status").out
    assert f"regression #1 of {first}" in listing
    assert f"#1 of its group, of {first}" in cli("status", second).out
    assert cli("step", second).code == 0  # the plan
    plan = json.loads((root.plan_dir(second) / "plan.json").read_text())
    link = plan["regression"]
    assert link["of"] == first and link["outcome"] == "fixed"
    assert link["verdict"] == f"error_runs/{first}/run_result.json"
    assert json.loads((root.path / link["verdict"]).read_text())["verdict"]["files"]
    diff = (root.path / link["diff"]).read_text()
    assert "m.py: changed since the earlier verdict" in diff
    assert "-import os" in diff and "+import sys" in diff  # the fix, and what undid it
    assert first in plan["root_cause_hypotheses"][0]["reason"]
    assert "## Regression" in (root.plan_dir(second) / "plan.md").read_text()


def test_a_repeat_outside_the_window_is_a_new_incident_not_a_regression(
    cli: Cli, root: Root
) -> None:
    first = cap(cli)
    resolve(cli, first)
    folder = root.bucket("resolved") / first
    old = json.loads((folder / "incident.json").read_text())
    long_ago = (datetime.now(UTC) - timedelta(days=31)).isoformat()
    (folder / "incident.json").write_text(json.dumps({**old, "updated_at": long_ago}))
    assert cli("reindex").code == 0  # capture's hint follows the bundle
    later = cap(cli)
    assert "regression_of" not in doc(root, later)
    assert "regression" not in cli("status").out


def test_the_window_is_configurable_and_checked(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(tmp_path, monkeypatch, RUFF + "[capture]\nregression_window_days = 0\n")
    first = cap(cli)
    resolve(cli, first)
    assert "regression_of" not in doc(root, cap(cli))  # 0: off
    use_config(tmp_path, monkeypatch, "[capture]\nregression_window_days = -1\n")
    r = cli("capture", "--step", "export", "--message", MSG)  # captured all the same
    assert r.code == 0 and "warning" in r.err and "capture.regression_window_days" in r.err
    use_config(tmp_path, monkeypatch, "[policy]\nmax_regressions = -1\n")
    r = cli("step", r.out.strip())  # a command that acts on incidents refuses it
    assert r.code == 2 and "policy.max_regressions" in r.err


def test_reindex_rebuilds_what_capture_needs_to_see_a_regression(cli: Cli, root: Root) -> None:
    first = cap(cli)
    resolve(cli, first)
    for name in ("resolved", "signatures"):
        for hint in (root.state / name).iterdir():
            hint.unlink()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    assert cli("reindex").code == 0
    second = cap(cli)
    assert doc(root, second)["regression_of"] == first
    assert cli("status").code == 0  # the mirror catches up with the capture
    with sqlite3.connect(root.db_path) as conn:
        live = conn.execute(
            "SELECT incident_id, regression_of, regression_count FROM incidents"
        ).fetchall()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
    assert cli("reindex").code == 0
    with sqlite3.connect(root.db_path) as conn:
        rebuilt = conn.execute(
            "SELECT incident_id, regression_of, regression_count FROM incidents"
        ).fetchall()
    assert sorted(rebuilt) == sorted(live) and (second, first, 1) in live


def test_more_regressions_than_max_regressions_escalate_instead_of_going_to_fixers(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(
        tmp_path, monkeypatch, RUFF + "[policy]\nmax_regressions = 1\nescalation_threshold = 0\n"
    )
    first = cap(cli)
    resolve(cli, first)
    second = cap(cli)
    assert doc(root, second)["regression_count"] == 1
    resolve(cli, second)
    third = cap(cli)
    assert doc(root, third)["regression_of"] == second
    assert doc(root, third)["regression_count"] == 2
    r = cli("drive", third)
    assert r.code == 0, r.err
    assert root.locate(third)[0] == "escalated"
    ctx = ctx_of(root, third)
    assert ctx.escalation_kind == "regressions" and ctx.ai_attempts == []
    assert "regressed 2 times, more than [policy] max_regressions = 1" in (
        ctx.escalation_reason or ""
    )
    page = cli("review", "--stdout").out
    assert f"regression #2 of {second}" in page
    # a person requeues it: the next climb is not stopped by the count again
    r = cli("resolve-escalation", third, "--guidance", "look at the export", "--requeue")
    assert r.code == 0, r.err
    cli("drive", third)
    assert ctx_of(root, third).escalation_kind != "regressions"


def test_a_regression_of_a_merged_group_counts_the_group(cli: Cli, root: Root) -> None:
    first = cap(cli)
    other = cap(cli, message="export crashed")
    assert cli("group", "merge", first, other, "--reason", "one failure").code == 0
    resolve(cli, other)  # resolved in the merged group
    again = cap(cli)  # first is still open: a repeat folds into it, no regression
    assert again == first and "regression_of" not in doc(root, first)
    resolve(cli, first)
    back = cap(cli, message="export crashed")
    assert doc(root, back)["regression_of"] == first  # the group's latest resolved
    assert doc(root, back)["group"]["key"] == doc(root, first)["error_signature"]


def test_no_dedupe_opens_an_incident_on_its_own_never_a_regression(cli: Cli, root: Root) -> None:
    first = cap(cli)
    resolve(cli, first)
    assert "regression_of" not in doc(root, cap(cli, "--no-dedupe"))
    assert doc(root, cap(cli))["regression_of"] == first


def test_a_return_after_a_hand_close_is_a_recurrence_not_a_regression(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Archived by hand, nothing verified a fix: its failure again is linked to it as a
    recurrence and counts no regression, so `max_regressions` never escalates it as "the
    fixes do not hold". A positive control beside it: after a verified fix it is one."""
    use_config(tmp_path, monkeypatch, RUFF + "[policy]\nmax_regressions = 0\n")
    first = cap(cli)
    assert cli("archive", first, "--resolved", "--reason", "fixed by hand").code == 0
    second = cap(cli)
    assert doc(root, second)["recurrence_of"] == first
    assert doc(root, second)["recurrence_after"] == "closed by hand"
    assert "regression_of" not in doc(root, second) and "regression_count" not in doc(root, second)
    assert cli("drive", second).code == 0  # ruff mends it: not escalated as a regression
    assert ctx_of(root, second).escalation_kind is None
    assert root.locate(second)[0] == "resolved"
    (Path("m.py")).write_text(MESSY)
    third = cap(cli)  # after a verified fix: a regression, past max_regressions = 0
    assert (doc(root, third)["regression_of"], doc(root, third)["regression_count"]) == (second, 1)
    assert "recurrence_of" not in doc(root, third)
    assert cli("drive", third).code == 0
    assert ctx_of(root, third).escalation_kind == "regressions"


@pytest.mark.parametrize("rebuilt", [False, True])
def test_the_count_is_the_groups_regressions_so_far_and_an_escalated_one_takes_repeats(
    cli: Cli, root: Root, rebuilt: bool
) -> None:
    """A resolved, R1 (#1) resolved, R2 (#2) escalated: the failure again is one more
    occurrence of R2, waiting for a person, not a new incident, live and after `reindex`
    rebuilt the hints."""
    first = cap(cli)
    resolve(cli, first)
    r1 = cap(cli)
    resolve(cli, r1)
    r2 = cap(cli)
    assert (doc(root, r2)["regression_of"], doc(root, r2)["regression_count"]) == (r1, 2)
    assert cli("archive", r2, "--escalated", "--reason", "gave up").code == 0
    if rebuilt:
        for name in ("resolved", "signatures", "regressions"):
            for hint in (root.state / name).glob("*"):
                hint.unlink()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
        assert cli("reindex").code == 0
    assert cap(cli) == r2
    assert root.locate(r2)[0] == "escalated"
    assert doc(root, r2)["occurrences"] == 2 and doc(root, r2)["status"] == "escalated"
