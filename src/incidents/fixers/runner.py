"""Run one AI fixer tier over an incident's targets and judge what it did.

The run: snapshot the workdir, run the tier's command (argv via `proc.run`: timeout,
minimal environment plus the tier's pass-through variables, cwd = workdir), snapshot
again. Changed target files are the fix; any other file created, changed or deleted is a
violation and is put back. A fixer that cannot be started, times out or exits non-zero
is an infrastructure failure (seed 001: "if Aider fails as a tool, go to S_ERROR_INFRA").
"""

from __future__ import annotations

import fnmatch
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from incidents import fsutil, proc
from incidents.bundle_rules import target_problem
from incidents.fixers import snapshot
from incidents.fixers.settings import PLACEHOLDER_RE, TierSettings
from incidents.models import AIAttempt
from incidents.redact import redact

NOTES_CHARS = 2000
PROMPT_MAX_BYTES = 1 << 20
# After the run only digests are needed, and whatever the fixer created must be seen.
_AFTER = snapshot.Limits(max_file_bytes=0, max_files=1 << 40, max_total_bytes=1 << 40)


@dataclass
class FixerOutcome:
    tier: str
    argv: list[str]
    prompt_file: str
    started_at: datetime
    finished_at: datetime
    exit_code: int | None = None
    changed_files: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    unreverted: list[str] = field(default_factory=list)
    infra_error: str | None = None
    notes: str = ""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.infra_error is None

    def ai_attempt(self, attempt_number: int, input_error_report_id: str) -> AIAttempt:
        """Seed 001's AI attempt log entry for this run."""
        notes = self.notes
        if self.infra_error:
            notes = f"infra failure: {self.infra_error}" + (f"\n{notes}" if notes else "")
        if self.unreverted:
            notes += f"\nnot reverted: {', '.join(self.unreverted)}"
        return AIAttempt(
            attempt_number=attempt_number, agent=self.tier,
            input_error_report_id=input_error_report_id, changed_files=self.changed_files,
            notes=notes.strip(), started_at=self.started_at, finished_at=self.finished_at,
            exit_code=self.exit_code, violations=self.violations, prompt_file=self.prompt_file,
        )  # fmt: skip


def _pass_env(names: list[str]) -> dict[str, str]:
    return {
        key: value
        for key, value in os.environ.items()
        if any(fnmatch.fnmatchcase(key, n) if n.endswith("*") else key == n for n in names)
    }


def _as_arg(target: str) -> str:
    """A target as a separate argv element that cannot read as an option."""
    return f"./{target}" if target.startswith("-") else target


def render_argv(
    template: list[str], prompt_file: Path, prompt: str, targets: list[str], workdir: Path
) -> list[str]:
    """Fill the template element by element; `{files}` becomes one element per target."""
    values = {"prompt_file": str(prompt_file), "prompt": prompt, "workdir": str(workdir)}
    argv: list[str] = []
    for element in template:
        if element == "{files}":
            argv.extend(_as_arg(t) for t in targets)
        else:
            argv.append(PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], element))
    return argv


def check_targets(targets: list[str], workdir: Path) -> list[str]:
    """Targets relative to the workdir, staying inside it, by the rule capture and pickup
    apply (`bundle_rules.target_problem`); ValueError names the first bad one."""
    base = os.path.realpath(workdir)
    for target in targets:
        problem = target_problem(target, base)
        if problem is not None:
            raise ValueError(f"target {target!r}: {problem}")
    return [os.path.normpath(t) for t in targets]


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    return redact(text[-NOTES_CHARS:])


def _infra(result: proc.ProcResult) -> str | None:
    if result.returncode == 0:
        return None
    reason = result.error or f"exited with {result.returncode}"
    tail = _tail(result.stderr)
    return f"{reason}: {tail[-500:]}" if tail else reason


def run_fixer(
    tier: str,
    settings: TierSettings,
    prompt_file: Path,
    targets: list[str],
    workdir: Path,
    limits: snapshot.Limits | None = None,
    pidfile: Path | None = None,
) -> FixerOutcome:
    """Run `tier`'s command once; see the module docstring. `pidfile`: see `proc.run`."""
    started, t0 = datetime.now(UTC), time.monotonic()
    outcome = FixerOutcome(tier, [settings.program], str(prompt_file), started, started)

    def finish(error: str | None = None) -> FixerOutcome:
        outcome.infra_error = outcome.infra_error or error
        outcome.finished_at = datetime.now(UTC)
        outcome.duration_s = round(time.monotonic() - t0, 3)
        return outcome

    try:
        if not workdir.is_dir():
            return finish(f"workdir {workdir} is missing or not a directory")
        rel_targets = check_targets(targets, workdir)
        prompt = fsutil.read_regular_file(prompt_file, PROMPT_MAX_BYTES).decode("utf-8")
        before = snapshot.take(workdir, settings.scratch, limits or snapshot.Limits())
    except (ValueError, OSError, snapshot.SnapshotTooLarge, UnicodeDecodeError) as exc:
        return finish(str(exc))
    argv = render_argv(settings.argv, prompt_file, prompt, rel_targets, workdir)
    outcome.argv = render_argv(settings.argv, prompt_file, "<prompt>", rel_targets, workdir)
    result = proc.run(
        argv, cwd=workdir, timeout=settings.timeout_s,
        env=proc.minimal_env(_pass_env(settings.env)),
        stdin=prompt.encode("utf-8") if settings.stdin == "prompt" else None,
        pidfile=pidfile,
    )  # fmt: skip
    outcome.exit_code = result.returncode
    outcome.notes = _tail(result.stdout)
    after = snapshot.take(workdir, settings.scratch, _AFTER)
    wanted = set(rel_targets)
    changed = snapshot.changed_paths(before, after)
    outcome.changed_files = [p for p in changed if p in wanted]
    outcome.violations = [p for p in changed if p not in wanted]
    _, outcome.unreverted = snapshot.restore(before, outcome.violations)
    snapshot.remove_new_dirs(before, after)
    return finish(_infra(result))
