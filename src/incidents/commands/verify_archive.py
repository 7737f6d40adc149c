"""`incidents verify-archive [ID ...]`: do the resolved incidents' verdicts still hold?

Each incident resolved by the escalation machine has a `verdict` in its run_result.json:
the sha256 of every file its last canonical report judged. This re-hashes those files as
they are today and says, per incident, which changed since (or are missing). Incidents
closed without one (resolved before verdicts were recorded, or by a person) are reported
as "no verdict recorded", never as matching. Reads only the resolved bucket's folder
names, each incident's run_result.json and the files its verdict names.

The verification commands a verdict rested on (the incident's reproduction: the command
it failed with, and its plan's) are run again, in its workdir, under `[verification]`'s
rules: a verdict holds only while they still pass (`--no-reproduce`: hashes only). A
verdict that binds no file and ran no command is reported as "nothing bound": there is
nothing to re-check, so it is not said to hold.

Exit codes: 0 every verdict holds (or none was recorded); 1 some file changed, some
reproduction fails again, or some verdict binds nothing; 2 bad input (an unknown or unresolved id, a run_result.json that
cannot be read: the file and field are named).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from incidents import artifacts, fsutil, output
from incidents.commands.common import ConfigOpt, JsonOpt, RootOpt, open_root
from incidents.errors import IncidentsError, UsageError, explain_validation
from incidents.layout import BUCKETS, Root, validate_id
from incidents.models import RunResult

if TYPE_CHECKING:
    from incidents.verify import VerifySettings

MATCH, CHANGED, NO_VERDICT, UNREADABLE = "match", "changed", "no_verdict", "unreadable"
NOTHING_BOUND = "nothing_bound"
FAILS = "fails"  # a verification command the verdict rested on fails again now


@dataclass
class Audit:
    incident_id: str
    status: str
    report: str | None = None
    files: int = 0
    changed: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    failing: list[str] = field(default_factory=list)
    rerun: int = 0  # verification commands run again (and passed, unless FAILS)

    def line(self) -> str:
        from incidents.checks.judged import describe

        if self.status == MATCH:
            again = f"; its {self.rerun} verification command(s) pass again" if self.rerun else ""
            return (
                f"{self.incident_id}: ok: {self.files} file(s) as report {self.report} judged "
                f"them{again}"
            )
        if self.status == CHANGED:
            return (
                f"{self.incident_id}: CHANGED since the verdict of report {self.report}: "
                f"{describe(self.changed, limit=50)}"
            )
        if self.status == FAILS:
            return (
                f"{self.incident_id}: FAILS AGAIN: the reproduction report {self.report}'s "
                f"verdict rested on no longer passes: {'; '.join(self.failing)[:2000]}"
            )
        if self.status == NOTHING_BOUND:
            return (
                f"{self.incident_id}: NOTHING BOUND: report {self.report}'s verdict names no "
                "file, so nothing can be re-checked (it does not hold or fail)"
            )
        if self.status == NO_VERDICT:
            return f"{self.incident_id}: no verdict recorded ({self.error})"
        return f"{self.incident_id}: unreadable: {self.error}"

    def to_json(self) -> dict[str, Any]:
        return {
            "incident_id": self.incident_id, "status": self.status, "report": self.report,
            "files": self.files, "changed": self.changed, "error": self.error,
            "failing": self.failing,
        }  # fmt: skip


def audit(root: Root, incident_id: str, verification: VerifySettings | None = None) -> Audit:
    """One resolved incident's verdict against the files today; with `verification`, its
    verification commands (the reproduction) are run again under those settings."""
    from incidents.checks.judged import changed_files

    path = root.runs_dir(incident_id) / artifacts.RUN_RESULT
    try:
        result = RunResult.model_validate(fsutil.read_json_object(path))
    except FileNotFoundError:
        return Audit(incident_id, NO_VERDICT, error=f"{path} does not exist")
    except ValidationError as exc:
        where, why = explain_validation(exc)
        return Audit(incident_id, UNREADABLE, error=f"{path}: {where}: {why}")
    except (IncidentsError, OSError) as exc:
        return Audit(incident_id, UNREADABLE, error=f"{path}: {exc}")
    verdict = result.verdict
    if verdict is None:
        why = "closed before verdicts were recorded, or by a person"
        if result.outcome == "recovered":
            why = "recovered with nothing re-run: its step succeeded again, or it stayed quiet"
        return Audit(incident_id, NO_VERDICT, error=f"{path}: verdict: none ({why})")
    rerun = verification is not None and bool(verdict.commands)
    if not verdict.files and not verdict.absent and not rerun:
        return Audit(incident_id, NOTHING_BOUND, verdict.report)
    workdir = Path(verdict.workdir) if verdict.workdir else root.path.parent
    changed = changed_files(verdict.files, workdir, verdict.absent)
    found = Audit(
        incident_id, CHANGED if changed else MATCH, verdict.report, len(verdict.files), changed
    )
    if rerun and not changed:
        assert verification is not None
        found.failing = _rerun(verdict.commands, workdir, verification)
        found.rerun = len(verdict.commands)
        if found.failing:
            found.status = FAILS
    return found


def _rerun(commands: list[str], workdir: Path, verification: VerifySettings) -> list[str]:
    """What fails when `commands` run again now (each: the command and why)."""
    from incidents.verify import run_verification

    result = run_verification(commands, workdir, verification)
    return [
        *(f"{f.path}: {f.message}" for f in result.findings),
        *(f"{' '.join(i.argv)}: {i.reason}" for i in result.infra_failures),
        *(f"refused: {r}" for r in result.refusals),
    ]


def resolved_ids(root: Root, given: list[str]) -> list[str]:
    bucket = root.bucket("resolved")
    if not given:
        try:
            names = os.listdir(bucket)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if not n.startswith(".") and (bucket / n).is_dir())
    for incident_id in given:
        validate_id(incident_id)
        if not (bucket / incident_id).is_dir():
            where = next(
                (b for b in BUCKETS.values() if (root.path / b / incident_id).is_dir()), None
            )
            raise UsageError(
                f"verify-archive: incident {incident_id!r} is not resolved"
                + (f" (it is in {where})" if where else f": no such incident under {root.path}")
            )
    return list(dict.fromkeys(given))


def register(app: typer.Typer) -> None:
    @app.command("verify-archive")
    def verify_archive(
        incident_ids: Annotated[
            list[str] | None,
            typer.Argument(metavar="[ID ...]", help="Resolved incidents (default: all of them)."),
        ] = None,
        root: RootOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
        no_reproduce: Annotated[
            bool,
            typer.Option(
                "--no-reproduce", help="Only re-hash the files; do not run the reproduction."
            ),
        ] = False,
    ) -> int:
        """Re-hash the files each resolved incident's verdict names and run its
        reproduction again: does it still hold?"""
        session = open_root(root, config, create=False)
        rules = None if no_reproduce else session.config.verification
        ids = resolved_ids(session.root, incident_ids or [])
        audits = [audit(session.root, i, rules) for i in ids]
        code = 2 if any(a.status == UNREADABLE for a in audits) else 0
        bad = (CHANGED, NOTHING_BOUND, FAILS)
        code = code or (1 if any(a.status in bad for a in audits) else 0)
        if as_json:
            output.out_json({"ok": code == 0, "incidents": [a.to_json() for a in audits]})
        else:
            for a in audits:
                (output.err if a.status == UNREADABLE else output.out)(a.line())
            counts = {
                s: sum(a.status == s for a in audits)
                for s in (MATCH, CHANGED, FAILS, NOTHING_BOUND, NO_VERDICT, UNREADABLE)
            }
            output.out(
                f"{len(audits)} resolved: {counts[MATCH]} hold, {counts[CHANGED]} changed, "
                f"{counts[NO_VERDICT]} without a verdict, {counts[NOTHING_BOUND]} bound to "
                f"nothing, {counts[UNREADABLE]} unreadable"
                + (f", {counts[FAILS]} fail again" if counts[FAILS] else "")
            )
        return code
