"""`incidents status ID`: one incident in full, from its folder (and the mirror's count of
its signature's flaky closes). Loaded only for this form: the list stays light."""

from __future__ import annotations

import os
from typing import Any

from incidents import artifacts, fsutil, groups, mirror, output, store
from incidents.commands.common import Session
from incidents.commands.status_read import (
    OUTCOME_SHOWN,
    closed_outcome,
    open_mirror,
    unwritable,
)
from incidents.layout import Root, validate_id
from incidents.termtext import one_line


def group_lines(record: dict[str, Any]) -> list[str]:
    """`status ID`'s lines about its group (incidents.groups.group_record)."""
    lines = []
    if record["group"] != record["signature"] or record["decisions"]:
        lines.append(f"{'group:':16} {one_line(record['group'])}")
    for d in record["decisions"]:
        kind, at, by, why = (one_line(d.get(k)) for k in ("kind", "at", "by", "reason"))
        lines.append(
            f"{'':16} {kind} at {at} by {by}: {one_line(d.get('from'))!r} "
            f"-> {one_line(d.get('to'))!r}: {why}"
        )
    if record["regression_of"]:
        lines.append(
            f"{'regression:':16} #{record['regression_count']} of its group, of "
            f"{record['regression_of']} (resolved)"
        )
    return lines


def one_json(root: Root, incident_id: str) -> dict[str, Any]:
    """`status ID --json`: one incident in full, from its folder (MCP's `get_incident` too)."""
    bucket, folder = root.locate(validate_id(incident_id))
    doc = store.read_incident(folder)
    state = outcome = spent = None
    if (folder / artifacts.STATE).is_file():
        ctx_doc = fsutil.read_json_object(folder / artifacts.STATE)
        state, outcome = ctx_doc.get("current_state"), ctx_doc.get("outcome")
        spent = _spend_of(ctx_doc)
    runs_dir = root.runs_dir(incident_id)
    runs = sorted(os.listdir(runs_dir)) if runs_dir.is_dir() else []
    plan = root.plan_dir(incident_id) / artifacts.PLAN_JSON
    detail: dict[str, Any] = {
        "incident": doc,
        "bucket": bucket,
        "location": str(folder.relative_to(root.path)),
        "state": state,
        "files": sorted(os.listdir(folder)),
        "plan": str(plan.relative_to(root.path)) if plan.is_file() else None,
        "runs": runs,
        "outcome": closed_outcome(bucket, outcome) if isinstance(outcome, str) else None,
        "flaky_count": _flaky_count(root, doc["error_signature"]),
        "group": groups.group_record(root, incident_id),
        "spend": spent,
    }
    return detail


def _spend_of(ctx_doc: dict[str, Any]) -> dict[str, Any]:
    """One incident's AI spend, from its state.json (refused calls included)."""
    from incidents.fixers import spend
    from incidents.models import AIAttempt

    tried = [*ctx_doc.get("ai_attempts", []), *ctx_doc.get("unbudgeted_attempts", [])]
    return spend.of_attempts(AIAttempt.model_validate(a) for a in tried).to_json()


def show_one(session: Session, incident_id: str, as_json: bool) -> int:
    root = session.root
    detail = one_json(root, incident_id)
    doc: dict[str, Any] = detail["incident"]
    state, runs = detail["state"], detail["runs"]
    if as_json:
        output.out_json(detail)
        return 0
    for key in ("incident_id", "status", "step", "failure_class", "error_code", "message"):
        output.out(f"{key + ':':16} {one_line(doc.get(key))}")
    output.out(f"{'signature:':16} {one_line(doc['error_signature'])}")
    for line in group_lines(groups.group_record(root, incident_id)):
        output.out(line)
    output.out(f"{'occurrences:':16} {doc.get('occurrences', 1)} (last {doc.get('last_seen')})")
    output.out(f"{'created:':16} {doc['created_at']}  updated: {doc.get('updated_at')}")
    output.out(f"{'state:':16} {state or '-'}")
    output.out(f"{'location:':16} {detail['location']}")
    for key in ("python_files", "powershell_files", "verify"):
        if doc.get(key):
            output.out(f"{key + ':':16} {', '.join(doc[key])}")
    if doc.get("resolution"):
        output.out(f"{'resolution:':16} {one_line(doc['resolution'])}")
    outcome = detail["outcome"]
    if isinstance(outcome, str):
        output.out(f"{'outcome:':16} {OUTCOME_SHOWN.get(outcome, outcome)}")
    if detail["flaky_count"]:
        output.out(f"{'flaky:':16} {detail['flaky_count']} incident(s) of this signature "
                   "closed as not reproduced")  # fmt: skip
    output.out(f"{'plan:':16} {detail['plan'] or '-'}")
    output.out(f"{'runs:':16} {', '.join(runs) or '-'}")
    return 0


def _flaky_count(root: Root, signature: str) -> int | None:
    """Incidents of `signature` closed as not reproduced (the mirror's count, the mirror
    rebuilt from the folders when it is missing); None, and a warning, when the mirror
    cannot be opened (a full or read-only disk): the incident is shown all the same."""
    why = unwritable(root)
    if why is None:
        try:
            conn = open_mirror(root)
        except mirror.MirrorError as exc:
            why = str(exc)
        else:
            try:
                return mirror.flaky_counts(conn, [signature]).get(signature, 0)
            finally:
                conn.close()
    output.err(f"incidents: {why}: the count of flaky incidents of this signature is left out")
    return None
