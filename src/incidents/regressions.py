"""What a regression's plan links to: the earlier incident's verdict and the diff of its fix.

A capture marks a new incident `regression_of` the resolved incident of its group that
closed within `[capture] regression_window_days` (`incidents.grouping`). When the new
incident is planned, `link` reads the earlier one's `run_result.json` (its outcome and
verdict) and writes `error_plans/<id>/regression.diff`: each target of the earlier
incident from its `original_scripts/` (the file before that fix) to the file in the
workdir now, saying whether the file is still the one the earlier verdict judged (then
the diff is exactly the earlier fix) or changed since (then it is the fix and what came
after: often the regression itself).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from incidents import artifacts, fsutil
from incidents.digests import file_digest
from incidents.errors import IncidentsError, NotFound
from incidents.layout import Root
from incidents.models import Incident
from incidents.models.plan import RegressionLink
from incidents.redact import redact

__all__ = ["DIFF", "link"]

DIFF = "regression.diff"
MAX_DIFF_BYTES = 1 << 20


def link(root: Root, incident: Incident) -> RegressionLink | None:
    """The plan's link to the incident it regresses (None when it is not a regression or
    that incident is gone); writes the diff beside the plan."""
    earlier_id = incident.regression_of
    if not earlier_id:
        return None
    try:
        bucket, folder = root.locate(earlier_id)
        earlier = fsutil.read_json_object(folder / artifacts.INCIDENT)
    except (NotFound, IncidentsError, OSError):
        return None
    result_path = root.runs_dir(earlier_id) / artifacts.RUN_RESULT
    try:
        result = fsutil.read_json_object(result_path)
    except (IncidentsError, OSError):
        result = {}
    verdict = result.get("verdict") if isinstance(result.get("verdict"), dict) else None
    files = verdict.get("files") if verdict else None
    where = str(folder.relative_to(root.path))
    diff = _diff(folder, where, earlier, files if isinstance(files, dict) else {})
    diff_path = None
    if diff:
        plan_dir = root.plan_dir(incident.incident_id)
        fsutil.ensure_dir(plan_dir)
        fsutil.atomic_write_bytes(plan_dir / DIFF, redact(diff).encode()[:MAX_DIFF_BYTES])
        diff_path = str((plan_dir / DIFF).relative_to(root.path))
    return RegressionLink(
        of=earlier_id,
        count=incident.regression_count,
        bucket=bucket,
        closed_at=result.get("finished_at") or earlier.get("updated_at"),
        outcome=result.get("outcome") if isinstance(result.get("outcome"), str) else None,
        resolution=(
            earlier.get("resolution") if isinstance(earlier.get("resolution"), str) else None
        ),
        verdict=str(result_path.relative_to(root.path)) if verdict else None,
        diff=diff_path,
        record=str(result_path.relative_to(root.path)) if result else None,
        closed_by_hand=_by_hand(bucket, result, earlier) if not verdict else None,
    )


def _by_hand(bucket: str, result: dict[str, Any], earlier: dict[str, Any]) -> str | None:
    """ "closed by hand by X on DATE: no verdict (reason: ...)" for an earlier incident a
    person archived (`incidents archive`: a run_result.json without a verdict, or none)."""
    if bucket != "resolved" or result.get("outcome"):
        return None  # escalated by the machine, or closed by a check run
    by = result.get("closed_by")
    when = result.get("finished_at") or earlier.get("updated_at")
    why = result.get("reason") or earlier.get("resolution")
    return (
        "closed by hand"
        + (f" by {by}" if isinstance(by, str) and by else " (by whom is not recorded)")
        + (f" on {when[:10]}" if isinstance(when, str) and when else "")
        + ": no verdict"
        + (f" (reason: {why})" if isinstance(why, str) and why else "")
    )


def _diff(folder: Path, where: str, earlier: dict[str, Any], judged: dict[str, Any]) -> str:
    workdir = earlier.get("workdir")
    targets = [
        t
        for key in ("python_files", "powershell_files")
        for t in (earlier.get(key) or [])
        if isinstance(t, str)
    ]
    parts: list[str] = []
    for target in targets:
        before = _text(folder / "original_scripts" / target)
        now_path = os.path.join(workdir, target) if isinstance(workdir, str) else None
        after = _text(Path(now_path)) if now_path else None
        if before is None or after is None:
            why = _why_not(folder, where, earlier, target, before is None, now_path)
            parts.append(f"# {target}: not compared: {why}\n")
            continue
        held = judged.get(target) == file_digest(now_path) if now_path else False
        parts.append(
            f"# {target}: "
            + ("unchanged since the earlier verdict: this is the earlier fix\n" if held
               else "changed since the earlier verdict: the earlier fix and what came after\n")
        )  # fmt: skip
        if before == after:
            parts.append(f"# {target}: as it was before the earlier fix (the fix is undone)\n")
            continue
        parts.extend(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                f"a/{target} (before the earlier fix)",
                f"b/{target} (now)",
            )
        )
    return "".join(parts)


def _why_not(
    folder: Path, where: str, earlier: dict[str, Any], target: str, no_before: bool,
    now_path: str | None,
) -> str:  # fmt: skip
    """Why one target of the earlier incident has no diff, precisely."""
    kept = f"{where}/original_scripts/{target}"
    if no_before:
        if not (folder / "state.json").exists():
            return (
                f"{earlier.get('incident_id')} never stepped (closed by hand before its first "
                f"check), so no copy of {target} from before a fix was kept ({kept} does not "
                "exist)"
            )
        if (folder / "original_scripts" / target).exists():
            return f"{kept} is not a regular file of at most {MAX_DIFF_BYTES} bytes"
        return f"its steps kept no copy of {target} from before a fix ({kept} does not exist)"
    if now_path is None:
        return f"{earlier.get('incident_id')} records no workdir, so {target} now is unknown"
    if not os.path.lexists(now_path):
        return f"{now_path} does not exist now"
    return f"{now_path} is not a regular file of at most {MAX_DIFF_BYTES} bytes"


def _text(path: Path) -> str | None:
    try:
        return fsutil.read_regular_file(path, MAX_DIFF_BYTES).decode("utf-8", "replace")
    except (IncidentsError, OSError):
        return None
