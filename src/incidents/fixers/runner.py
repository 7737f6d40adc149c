"""Run one AI fixer tier over an incident's targets and judge what it did.

The run: snapshot the workdir, run the tier's command (argv via `proc.run`: timeout,
minimal environment plus the tier's pass-through variables, cwd = workdir) contained
(`fixers.sandbox`: under bubblewrap, else with `fixers.guard`'s detection), snapshot
again. Changed target files are the fix; any other file created, changed or deleted is a
violation and is put back, and so is a target replaced by a symlink, a hard link or
anything but a regular file (it is restored, not accepted as changed). The fixer gets a
copy of the prompt in a private folder (never a path into the reports root). The check
configs outside the workdir it could write and the incidents config are held before and
put back after (`guard.FileGuard`); with detection, the incident's folders in the reports
root are compared too (`rootwatch`), and a change there is an infrastructure failure
named `tamper:`. A fixer that cannot be started, times out or exits non-zero is an
infrastructure failure (seed 001: "if Aider fails as a tool, go to S_ERROR_INFRA").
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from incidents import fsutil, proc
from incidents.bundle_rules import target_problem
from incidents.fixers import guard, readout, sandbox, snapshot
from incidents.fixers.rootwatch import RootWatch
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
    program_s: float = 0.0  # of which the program itself ran (the rest is ours)
    contained: bool | None = None
    sandbox: str | None = None
    readout: readout.Readout = field(default_factory=readout.Readout)

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
            contained=self.contained, sandbox=self.sandbox, error_code=self.readout.code,
            model=self.readout.model, input_tokens=self.readout.input_tokens,
            output_tokens=self.readout.output_tokens, cost_usd=self.readout.cost_usd,
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


OWN_SANDBOX = {True: "danger-full-access", False: "workspace-write"}


def render_argv(
    template: list[str],
    prompt_file: Path,
    prompt: str,
    targets: list[str],
    workdir: Path,
    contained: bool = False,
) -> list[str]:
    """Fill the template element by element; `{files}` becomes one element per target,
    `{{` and `}}` a literal brace."""
    values = {
        "prompt_file": str(prompt_file),
        "prompt": prompt,
        "workdir": str(workdir),
        "own_sandbox": OWN_SANDBOX[contained],
    }

    def fill(m: re.Match[str]) -> str:
        return values[m.group(1)] if m.group(1) is not None else m.group(0)[0]

    argv: list[str] = []
    for element in template:
        if element == "{files}":
            argv.extend(_as_arg(t) for t in targets)
        else:
            argv.append(PLACEHOLDER_RE.sub(fill, element))
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


def _without_prompt(text: str, prompt: str) -> str:
    """`text` less every line it shares with the prompt: a CLI that echoes its input in an
    error (codex on a hang) must not put the prompt, findings and all, into a reason."""
    said = {line.strip() for line in prompt.splitlines() if len(line.strip()) >= 8}
    return "\n".join(line for line in text.splitlines() if line.strip() not in said).strip()


def _infra(result: proc.ProcResult, said: readout.Readout, prompt: str) -> str | None:
    """Why the run failed as a tool, or None: the fixer's own API error first (read in its
    format), then bubblewrap's, then the exit; the output's tail (stderr, else stdout)
    never with the prompt's lines in it."""
    if said.code is not None:
        return f"{said.code}: {said.message}" if said.message else said.code
    if result.timed_out:
        reason = result.error or "timed out"
    elif result.returncode == 0:
        return None
    else:
        reason = result.error or f"exited with {result.returncode}"
    shown = sandbox.cannot_show(result.stderr_text)
    if shown is not None:
        return shown
    tail = _without_prompt(_tail(result.stderr) or _tail(result.stdout), prompt)
    return f"{reason}: {tail[-500:]}" if tail else reason


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _replaced(before: os.stat_result | None, after: os.stat_result | None) -> str | None:
    """Why a target is no longer an acceptable edit of itself, or None. A deleted target is
    judged by the recheck; a link that was there before and was left alone is no change."""
    if after is None:
        return None
    if before is not None and (after.st_ino, after.st_dev, stat.S_IFMT(after.st_mode)) == (
        before.st_ino, before.st_dev, stat.S_IFMT(before.st_mode)
    ):  # fmt: skip
        return None  # the same file as before (edited in place, or untouched)
    if stat.S_ISLNK(after.st_mode):
        return "replaced by a symlink"
    if not stat.S_ISREG(after.st_mode):
        kind = "a directory" if stat.S_ISDIR(after.st_mode) else "a special file"
        return f"replaced by {kind} (mode {after.st_mode:o})"
    if after.st_nlink > 1:
        return "replaced by a hard link to another file"
    return None


def _restore_targets(workdir: Path, bad: dict[str, str], before: snapshot.Snapshot) -> list[str]:
    """Put the targets in `bad` back as they were (removed if they were not there);
    returns those that could not be."""
    failed = []
    for rel in bad:
        if not snapshot.put_back(str(workdir / rel), before.files.get(rel, snapshot.ABSENT)):
            failed.append(rel)
    return failed


def _containment(
    containment: sandbox.Containment, settings: TierSettings, argv: list[str], workdir: Path,
    prompt_file: Path, env: dict[str, str],
) -> tuple[list[str], str | None, str | None]:  # fmt: skip
    """(the argv to run, bwrap's label or None for detection, an infra error or None)."""
    probe, error = sandbox.choose(containment.mode)
    if probe is None:
        return argv, None, error
    # found here, as proc.run would, so a missing program reads the same in both modes
    named = os.path.join(workdir, argv[0]) if os.sep in argv[0] else argv[0]
    program = shutil.which(named, path=env.get("PATH"))
    if program is None:
        return argv, None, f"program not found: {argv[0]}"
    visible = [*env.get("PATH", "").split(os.pathsep), str(prompt_file.parent),
               env.get("VIRTUAL_ENV", ""), program, *sandbox.program_paths(program),
               *_interpreter_prefixes(program, env), *_own_install()]  # fmt: skip
    # a file or folder the tier's environment names (aider's AIDER_MODEL_METADATA_FILE, a
    # CA bundle): read-only, as it would be anywhere but under the private /tmp
    visible += [v for k, v in env.items() if k not in _NOT_SHOWN and _a_path(v)]
    env["TMPDIR"] = sandbox.PRIVATE_TMP
    wrapped = sandbox.wrap(
        probe, [program, *argv[1:]], str(workdir), writable=sandbox.expand(settings.writable),
        read_only=[*containment.protect, *containment.watch, str(workdir / ".git")],
        visible=[v for v in visible if v],
        hidden=containment.hide,
    )  # fmt: skip
    return wrapped, probe.label, None


_NOT_SHOWN = frozenset({"PATH", "HOME", "TMPDIR"})  # PATH: above; TMPDIR: private


def _a_path(value: str) -> bool:
    return os.path.isabs(value) and os.pathsep not in value and os.path.exists(value)


def _own_install() -> list[str]:
    """This interpreter's prefix and the folder incidents is imported from: a fixer may
    start `python -m incidents` (the claude tier's MCP server does), and a checkout under
    /tmp (`git clone . /tmp/x`, an editable install) would be hidden by the private /tmp."""
    import incidents

    return [sys.prefix, os.path.dirname(os.path.dirname(os.path.abspath(incidents.__file__)))]


def _interpreter_prefixes(program: str, env: dict[str, str]) -> list[str]:
    """The prefix (a virtualenv, /usr, ...) of the interpreter a script's `#!` line names,
    followed through `/usr/bin/env NAME`: under a private /tmp, a script whose interpreter
    lives below /tmp (a checkout's .venv there) would not start."""
    try:
        with open(program, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    words = first[2:].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = shutil.which(words[0], path=env.get("PATH")) if words else None
        words = [found] if found else []
    if not words:
        return []
    interpreter = os.path.abspath(words[0])
    return [os.path.dirname(os.path.dirname(interpreter)), interpreter]


def run_fixer(
    tier: str,
    settings: TierSettings,
    prompt_file: Path,
    targets: list[str],
    workdir: Path,
    limits: snapshot.Limits | None = None,
    pidfile: Path | None = None,
    containment: sandbox.Containment | None = None,
) -> FixerOutcome:
    """Run `tier`'s command once; see the module docstring. `pidfile`: see `proc.run`.
    `containment`: the sandbox setting and the paths to protect (default: auto, none)."""
    containment = containment or sandbox.Containment()
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
    env = proc.minimal_env(_pass_env(settings.env))
    for key, value in settings.env_defaults.items():
        env.setdefault(key, value)
    # created before the sandbox binds them (a missing one would be skipped, and the CLI
    # fail read-only), in detection mode too: one layout whatever contains the run
    missing = sandbox.create_missing(sandbox.expand(settings.writable, env))
    if missing:
        return finish(f"the tier's writable paths cannot be created: {'; '.join(missing)}")
    probe_, _ = sandbox.choose(containment.mode)
    had_git = os.path.lexists(workdir / ".git")
    with contextlib.ExitStack() as stack:
        private = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="fixer-", ignore_cleanup_errors=True)
        )
        # the fixer's own copy of the prompt: the path it is handed leads nowhere near the
        # reports root (the original lives in the incident's runs folder)
        given = Path(private) / prompt_file.name
        given.write_bytes(prompt.encode("utf-8"))
        contained = probe_ is not None
        argv = render_argv(settings.argv, given, prompt, rel_targets, workdir, contained)
        # the record names the incident's prompt file (the copy is gone after the run)
        outcome.argv = render_argv(
            settings.argv, prompt_file, "<prompt>", rel_targets, workdir, contained
        )
        argv, bwrap, error = _containment(containment, settings, argv, workdir, given, env)
        if error:
            return finish(error)
        outcome.contained, outcome.sandbox = bwrap is not None, bwrap or "detection"
        configs = guard.config_files(workdir, rel_targets, [*containment.watch])
        if bwrap is not None:  # it can write only there: a change elsewhere is someone else's
            writable = sandbox.expand(settings.writable)
            read_only = [*containment.protect, *containment.watch]  # bound read-only last
            configs = [
                c for c in configs
                if any(_under(c, w) for w in writable) and not any(_under(c, r) for r in read_only)
            ]  # fmt: skip
        held = guard.FileGuard(configs, containment.aside)
        kinds = {t: _lstat(workdir / t) for t in rel_targets}
        listings, reaper, root = None, None, None
        if bwrap is not None and pidfile is not None:  # a detection run's, from before
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{pidfile}.root.json")
        if bwrap is None:
            env["TMPDIR"] = private
            record = f"{pidfile}.root.json" if pidfile is not None else None
            root = RootWatch(containment.watch_root, containment.aside, record)
            listings = guard.Listings(
                guard.listed_folders(workdir), skip=configs, aside=containment.aside
            )
            reaper = stack.enter_context(guard.Reaper(record=pidfile))
        result = proc.run(
            argv, cwd=workdir, timeout=settings.timeout_s, env=env,
            stdin=prompt.encode("utf-8") if settings.stdin == "prompt" else None,
            pidfile=pidfile, stop_when=readout.stop_rule(tier),
        )  # fmt: skip
        killed = reaper.sweep() if reaper is not None else 0
    outcome.exit_code = result.returncode
    outcome.program_s = round(result.duration_s, 3)
    outcome.readout = readout.read(tier, result.stdout, result.stderr)
    if result.timed_out and outcome.readout.code is None:
        outcome.readout.code, outcome.readout.message = readout.TIMEOUT, result.error or ""
    said = outcome.readout.result
    outcome.notes = redact(said[-NOTES_CHARS:]) if said else _tail(result.stdout)
    if killed:
        outcome.notes += f"\nkilled {killed} process(es) the fixer left running"
    replaced = {t: why for t in rel_targets if (why := _replaced(kinds[t], _lstat(workdir / t)))}
    bad_targets = _restore_targets(workdir, replaced, before)
    after = snapshot.take(workdir, settings.scratch, _AFTER)
    wanted = set(rel_targets) - set(replaced)
    changed = snapshot.changed_paths(before, after)
    outcome.changed_files = [p for p in changed if p in wanted]
    outcome.violations = [p for p in changed if p not in wanted]
    _, outcome.unreverted = snapshot.restore(before, outcome.violations, containment.aside)
    snapshot.remove_new_dirs(before, after)
    if not had_git and os.path.lexists(workdir / ".git"):
        outcome.violations.append(".git (a repository the fixer created)")
        if not _remove_created(workdir / ".git", containment.aside):
            outcome.unreverted.append(".git")
    outcome.violations += [f"{t} ({why})" for t, why in replaced.items()]
    outcome.unreverted += bad_targets
    # a change in the workdir that stays is part of what the recheck judges: no verdict
    # may rest on it (a large file the snapshot could not keep, a symlinked folder)
    stuck = list(outcome.unreverted)
    for check in (held.check, listings.check if listings else None):
        if check is not None:
            outside, left = check()
            outcome.violations += outside
            outcome.unreverted += left
    kept = f"changes outside the targets could not be put back: {', '.join(stuck[:5])}"
    return finish(
        _planted(root, containment.aside, outcome)
        or _infra(result, outcome.readout, prompt)
        or (kept if stuck else None)
    )


def _remove_created(path: Path, aside: str | None) -> bool:
    """A folder the fixer created in the workdir (a `.git` of its own: the snapshot keeps
    only a repository's config and hooks, so the rest would stay): moved aside, else
    removed. False when it is still there."""
    if aside is not None and snapshot.move_aside(str(path), aside, path.name) is not None:
        return True
    with contextlib.suppress(OSError):
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    return not os.path.lexists(path)


def _planted(root: RootWatch | None, aside: str | None, outcome: FixerOutcome) -> str | None:
    """The tamper failure when a detection-mode fixer changed the incident's folders in the
    reports root (a planted report, a forged state): the attempt cannot stand."""
    if root is None:
        return None
    changed, left = root.check()
    root.forget()
    if not changed:
        return None
    outcome.violations += changed
    outcome.unreverted += left
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    kept = f"; what it wrote is moved aside to {aside}" if aside else ""
    return f"tamper: the fixer changed the reports root (detection only, no sandbox): {shown}{kept}"


def _under(path: str, folder: str) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip("/") + "/")
