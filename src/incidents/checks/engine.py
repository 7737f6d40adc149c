"""`run_error_pipeline`: run the configured tool profiles on the targets, concurrently,
reusing cached findings for unchanged inputs, and return the normalized `ErrorReport`.

Every tool run goes through `incidents.proc.run`. A tool that is missing, crashes, times
out or prints what its parser cannot read is an `InfraFailure`, never "0 issues".
Every input the answer depends on is read through `Inputs` (see incidents.checks.inputs),
which the caller may pass in to learn what this run used.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from incidents import proc
from incidents.checks import cleanroom
from incidents.checks.cache import FindingsCache, VersionCache, default_cache_dir, make_key
from incidents.checks.findings import is_blocking as is_blocking
from incidents.checks.findings import summarize as summarize
from incidents.checks.findings import to_finding
from incidents.checks.inputs import TREE_MAX_FILES, Inputs, config_paths, matches
from incidents.checks.inputs import display_path as display_path
from incidents.checks.inputs import file_digest as file_digest
from incidents.checks.inputs import which as which
from incidents.checks.judged import judged_of
from incidents.checks.parsers import PARSERS, ParseError, RawFinding, ToolOutput, tail
from incidents.checks.profiles import GUARD, ToolProfile, resolve_profiles, script_path
from incidents.checks.selection import Target as Target
from incidents.checks.selection import TestSelection, select_tests
from incidents.checks.settings import ChecksSettings
from incidents.fsutil import ensure_dir
from incidents.models.report import ErrorReport, Finding, InfraFailure, ToolRun

if TYPE_CHECKING:
    from incidents.models.pipeline import ErrorPipelineContext

VERSION_TIMEOUT = 60.0
_VERSION_MEMO: dict[str, str | None] = {}  # one `tool --version` per program per process


NO_TESTS = TestSelection()


@dataclass
class JobResult:
    findings: list[Finding] = field(default_factory=list)
    runs: list[ToolRun] = field(default_factory=list)
    infra: list[InfraFailure] = field(default_factory=list)
    # what a re-run on unchanged inputs reports: every run served from the cache
    warm: list[ToolRun] = field(default_factory=list)


@dataclass
class Engine:
    cwd: Path
    settings: ChecksSettings
    cache: FindingsCache
    versions: VersionCache
    targets: dict[str, list[Target]]  # by language
    inputs: Inputs = field(default_factory=Inputs)
    named: tuple[str, ...] = ()  # test ids the failure's log names
    frozen: dict[str, str] = field(default_factory=dict)  # test files as captured: their text
    _config_memo: dict[tuple[tuple[str, ...], frozenset[str]], str] = field(default_factory=dict)
    _tree_memo: dict[tuple[object, ...], str | None] = field(default_factory=dict)

    # -- planning ------------------------------------------------------------------

    def select(self, profile: ToolProfile) -> tuple[list[Target], TestSelection]:
        """(files the tool is about, tests it runs) for this profile."""
        mine = [t for t in self.targets.get(profile.language, []) if matches(t.path, profile.globs)]
        if profile.selects != "tests":
            return mine, NO_TESTS
        return mine, select_tests(self.inputs, self.cwd, profile, mine, self.settings.test_paths,
                                  self.named if profile.language == "python" else (), self.skip)  # fmt: skip

    # -- running -------------------------------------------------------------------

    def run_profile(self, profile: ToolProfile) -> JobResult:
        files, tests = self.select(profile)
        result = JobResult()
        result.infra.extend(InfraFailure(tool=profile.name, argv=[], exit_code=None, reason=why)
                            for why in tests.refused)  # fmt: skip
        runnable = tests.files if profile.selects == "tests" else files
        if not runnable:
            return result
        argv0 = self.expand_one(profile.argv[0])
        program = self.inputs.which(argv0)
        if program is None:
            argv = self.expand(profile.argv, files, tests.files, "<report>")
            reason = f"program not found: {argv0}"
            if profile.language == "powershell":
                reason = f"pwsh is not on PATH: {len(runnable)} PowerShell file(s) not checked"
            result.infra.append(
                InfraFailure(tool=profile.name, argv=argv, exit_code=None, reason=reason)
            )
            return result
        version = self.tool_version(profile, program)
        env = self.env_fingerprint(profile)
        if profile.scope == "file":
            self._run_per_file(profile, version, env, files, result)
        else:
            site = self.site_fingerprint(program)
            self._run_batch(profile, version, make_key(env, site), files, tests, result)
        return result

    def _run_per_file(
        self, profile: ToolProfile, version: str | None, env: str, files: list[Target],
        result: JobResult,
    ) -> None:  # fmt: skip
        # a file's config: the nearest files of each name above it (ruff, black) and above cwd
        keys = {t.path: make_key(profile.fingerprint(), version or "", env, t.path, t.digest,
                                 self.config_fingerprint(profile, [t]))
                for t in files}  # fmt: skip
        misses: list[Target] = []
        hits = 0
        cached_all = True
        for t in files:
            cached = self.cache.get(keys[t.path])
            if cached is None:
                misses.append(t)
            else:
                hits += 1
                result.findings.extend(self.finish(profile, cached, files))
        if hits:
            cached_argv = self.expand(profile.argv, [t for t in files if t not in misses], [], "")
            result.runs.append(ToolRun(tool=profile.name, argv=cached_argv, exit_code=None,
                                       duration_s=0.0, version=version, files=hits, cached=True))  # fmt: skip
        for chunk in _chunks(misses, self.settings.max_batch_chars):
            raw = self.execute(profile, version, chunk, NO_TESTS, result)
            if raw is None:
                continue
            by_path: dict[str, list[RawFinding]] = {t.path: [] for t in chunk}
            stray = False
            for f in raw:
                if f.path in by_path:
                    by_path[f.path].append(f)
                else:
                    stray = True
            if not stray:
                for t in chunk:
                    self.cache.put(keys[t.path], by_path[t.path])
            else:
                self.inputs.refuse(f"{profile.name} reported on a file outside its batch")
            cached_all = cached_all and not stray
            result.findings.extend(self.finish(profile, raw, files))
        if cached_all and not result.infra:
            argv = self.expand(profile.argv, files, [], "")
            result.warm.append(ToolRun(tool=profile.name, argv=argv, exit_code=None, duration_s=0.0,
                                       version=version, files=len(files), cached=True))  # fmt: skip

    def _run_batch(
        self, profile: ToolProfile, version: str | None, context: str, files: list[Target],
        tests: TestSelection, result: JobResult,
    ) -> None:  # fmt: skip
        # mypy's answer for a file depends on the modules it imports, a test's on the code,
        # data and conftest.py files around it: every source file under cwd and the targets'
        # own folders is an input (for a test runner, every other file too).
        everything = [*self.targets.get(profile.language, []), *tests.files]
        inputs = sorted({(t.path, t.digest) for t in everything})
        config = self.config_fingerprint(profile, everything)
        tree = self.tree_fingerprint(profile, everything)
        frozen = [f"{p}\0{text}" for p, text in sorted(self.frozen.items())]  # tests as captured
        key = make_key(profile.fingerprint(), version or "", context, config, tree or "",
                       *(f"{p}\0{d}" for p, d in inputs), "tests", *tests.names,
                       "expect", *tests.expect, "frozen", *frozen)  # fmt: skip
        runnable = tests.files if profile.selects == "tests" else files
        cached = self.cache.get(key) if tree is not None else None
        argv = self.expand(profile.argv, files, tests.files, "<report>")
        warm = ToolRun(tool=profile.name, argv=argv, exit_code=None, duration_s=0.0,
                       version=version, files=len(runnable), cached=True, tests=tests.names, own_tests=tests.own_tests)  # fmt: skip
        if cached is not None:
            result.runs.append(warm)
            result.warm.append(warm)
            result.findings.extend(self.finish(profile, cached, files))
            return
        raw = self.execute(profile, version, files, tests, result)
        if raw is not None:
            self.cache.put(key, raw)
            result.warm.append(warm)
            result.findings.extend(self.finish(profile, raw, files))

    def execute(
        self, profile: ToolProfile, version: str | None, files: list[Target],
        tests: TestSelection, result: JobResult,
    ) -> list[RawFinding] | None:  # fmt: skip
        """One invocation; findings with paths normalized, or None after an infra failure."""
        runs_code = profile.selects == "tests" and profile.language == "python"
        where = cleanroom.memory_folder() if runs_code else None  # the copy: files made fast
        with tempfile.TemporaryDirectory(prefix="incidents-check-", dir=where) as tmp:
            report_path = os.path.join(tmp, "report")
            timeout = profile.timeout or self.settings.default_timeout
            # bytecode goes to (and comes from) a folder of this run only: a `__pycache__`
            # in the workdir is anybody's, and a planted .pyc would be the code that runs
            env = {**os.environ, "PYTHONPYCACHEPREFIX": os.path.join(tmp, "pycache")}
            cwd = str(self.cwd)
            if runs_code:
                paths = [t.path for t in (*files, *tests.files)]
                cwd, env = cleanroom.prepare(
                    cwd, tmp, self.inputs, paths, self.frozen, profile.config_files, self.skip
                )
            argv = self.expand(profile.argv, files, tests.files, report_path, cwd)
            res = proc.run(argv, cwd=cwd, timeout=timeout, env=env)
            report = _read_text(report_path)
        n = len(tests.files) if profile.selects == "tests" else len(files)
        result.runs.append(ToolRun(tool=profile.name, argv=argv, exit_code=res.returncode,
                                   duration_s=round(res.duration_s, 4), version=version, files=n,
                                   tests=tests.names, own_tests=tests.own_tests))  # fmt: skip

        def infra(reason: str) -> None:
            result.infra.append(InfraFailure(tool=profile.name, argv=argv, exit_code=res.returncode,
                                             reason=reason, stderr_tail=tail(res.stderr_text, 2000)))  # fmt: skip

        if res.returncode is None:
            infra(res.error or "did not finish")
            return None
        if res.returncode not in profile.ok_exit_codes:
            infra(f"exited {res.returncode} (expected one of {list(profile.ok_exit_codes)})")
            return None
        out = ToolOutput(res.stdout_text, res.stderr_text, res.returncode, report, tests.expect,
                         guarded=GUARD in argv)  # fmt: skip
        try:
            raw = PARSERS[profile.parser](out)
        except ParseError as exc:
            infra(f"unreadable output: {exc}")
            return None
        return [_with_path(f, display_path(f.path, self.cwd)) for f in raw]

    def finish(
        self, profile: ToolProfile, raw: list[RawFinding], files: list[Target]
    ) -> list[Finding]:
        if profile.only_targets:
            wanted = {t.path for t in files}
            raw = [f for f in raw if f.path in wanted]
        return [to_finding(profile, f) for f in raw]

    # -- inputs of cache keys ------------------------------------------------------

    def tool_version(self, profile: ToolProfile, program: str) -> str | None:
        argv = tuple(self.expand_one(a) for a in profile.version_argv) or (program, "--version")
        identity = self.inputs.identity(self.inputs.which(argv[0]) or argv[0]) or program
        found, version = self.versions.get(identity, argv)
        if found:
            return version
        if profile.dist and os.path.dirname(argv[0]) == os.path.dirname(sys.executable):
            version = _dist_version(profile.dist)
            if version is not None:
                self.versions.put(identity, argv, version)
                return version
        res = proc.run(argv, cwd=self.cwd, timeout=VERSION_TIMEOUT)
        text = (res.stdout_text.strip() or res.stderr_text.strip()).splitlines()
        version = text[0].strip() if res.ok and text else None
        if version is not None:
            self.versions.put(identity, argv, version)
        else:  # asked again next time, maybe with another answer
            self.inputs.refuse(f"{profile.name}: no version from {' '.join(argv)}")
        return version

    def config_fingerprint(self, profile: ToolProfile, targets: Sequence[Target]) -> str:
        """Every file of each config name in every folder from the targets' and from cwd up
        to the filesystem root, present or not (a tool may skip the nearest one)."""
        names = list(profile.config_files)
        if profile.selects == "tests" and profile.language == "python":
            names.append("conftest.py")  # pytest loads them up to its inifile's folder
        folders = frozenset(os.path.dirname(t.path) for t in targets)
        memo_key = (tuple(names), folders)
        if memo_key not in self._config_memo:
            paths = config_paths(str(self.cwd), sorted(folders), names)
            found = [(p, self.inputs.config(p)) for p in paths]
            self._config_memo[memo_key] = make_key(*(f"{p}\0{d}" for p, d in found if d))
        return self._config_memo[memo_key]

    def tree_fingerprint(self, profile: ToolProfile, targets: Sequence[Target]) -> str | None:
        """Digest of every file matching the profile's globs under cwd and under the
        targets' folders outside it or hidden in it; for a test runner every other file
        there too, by size and mtime (None: too many to be worth it, so the tool runs
        uncached). Skips hidden folders, caches and virtualenvs below those roots."""
        others = profile.selects == "tests"
        folders = frozenset(os.path.dirname(t.path) for t in targets)
        memo_key = (profile.globs, others, folders)
        if memo_key not in self._tree_memo:
            digest = self.inputs.tree(
                str(self.cwd), profile.globs, folders, others=others, skip=self.skip
            )
            if digest is None:
                self.inputs.refuse(f"more than {TREE_MAX_FILES} files around {profile.name}")
            self._tree_memo[memo_key] = digest
        return self._tree_memo[memo_key]

    def env_fingerprint(self, profile: ToolProfile) -> str:
        """The values of the environment variables the tool reads (it inherits them all)."""
        values = {k: self.inputs.env(k) for k in profile.env_keys}
        return make_key(*(k if v is None else f"{k}={v}" for k, v in values.items()))

    def site_fingerprint(self, program: str) -> str:
        """The mtimes of the site-packages folders of the interpreter running the tool, so
        installing or removing a package re-runs it: known for tools in our own venv."""
        if os.path.dirname(program) != os.path.dirname(sys.executable):
            return ""
        return make_key(*(f"{p}\0{self.inputs.stamp(p)}" for p in site_packages()))

    # -- argv templates ------------------------------------------------------------

    def tools_cache_dir(self) -> str:
        """The tools' own caches (mypy's, ruff's), one per working directory: made here,
        0700, so whatever modes the tools give what they write in it, nobody else reads it."""
        path = self.cache.root.parent / "tools" / make_key(str(self.cwd))[:16]
        with contextlib.suppress(OSError):  # else the tool makes it, or runs without one
            ensure_dir(path)
        return str(path)

    @property
    def skip(self) -> str:
        return str(self.cache.root.parent)

    def expand_one(self, arg: str, cwd: str | None = None) -> str:
        if arg.startswith("{script:") and arg.endswith("}"):
            return script_path(arg[len("{script:") : -1])
        return (
            arg.replace("{python}", sys.executable)
            .replace("{cwd}", cwd or str(self.cwd))
            .replace("{cache_dir}", self.tools_cache_dir())
        )

    def expand(
        self,
        template: Sequence[str],
        files: Sequence[Target],
        tests: Sequence[Target],
        report: str,
        cwd: str | None = None,
    ) -> list[str]:
        argv: list[str] = []
        for arg in template:
            if arg == "{files}":
                argv.extend(t.path for t in files)
            elif arg == "{tests}":
                argv.extend(t.path for t in tests)
            else:
                argv.append(self.expand_one(arg, cwd).replace("{report}", report))
        if argv:
            argv[0] = self.inputs.which(argv[0]) or argv[0]
        return argv


# -- the public function -----------------------------------------------------------


def run_error_pipeline(
    python_files: Sequence[str],
    powershell_files: Sequence[str],
    ctx: ErrorPipelineContext,
    *,
    settings: ChecksSettings | None = None,
    cwd: str | os.PathLike[str] | None = None,
    tools: Sequence[str] | None = None,
    inputs: Inputs | None = None,
    named_tests: Sequence[str] = (),
    frozen: dict[str, str] | None = None,
) -> ErrorReport:
    """Run the enabled tool profiles on the targets (paths relative to `cwd` or absolute)
    and return the normalized report. Does not write it and does not change `ctx`.
    `inputs`, when given, receives every input the answer depended on. `named_tests` are
    the test ids a failure's log names (testscan.named_tests): they must run and pass.
    `frozen`: test files (relative to cwd) to run as this text, the specification as
    captured, whatever the workdir holds now (`checks.cleanroom`)."""
    inputs = inputs if inputs is not None else Inputs()
    settings = settings or ChecksSettings()
    base = Path(cwd or os.getcwd()).resolve()
    cache_root = (
        Path(settings.cache_dir).expanduser() if settings.cache_dir else default_cache_dir()
    )
    cache = FindingsCache(cache_root, enabled=settings.cache)
    versions = VersionCache(cache)
    versions.memo = _VERSION_MEMO
    infra: list[InfraFailure] = []
    targets: dict[str, list[Target]] = {}
    for language, paths in (("python", python_files), ("powershell", powershell_files)):
        targets[language] = []
        for p in dict.fromkeys(paths):
            rel = display_path(p, base)
            try:
                targets[language].append(Target(rel, inputs.digest(str(base / p))))
            except OSError as exc:
                reason = f"target {rel}: {exc.strerror or exc}"
                infra.append(InfraFailure(tool="incidents", argv=[], exit_code=None, reason=reason))
    profiles = resolve_profiles(
        dict(settings.profiles), hard_ruff_prefixes=settings.hard_ruff_prefixes,
        only=tools if tools is not None else settings.tools,
    )  # fmt: skip
    if (targets["powershell"] and settings.skip_powershell_without_pwsh
            and inputs.which("pwsh") is None):  # fmt: skip
        profiles = [p for p in profiles if p.language != "powershell"]
    if named_tests and not any(p.selects == "tests" and p.language == "python" for p in profiles):
        reason = (f"the failure names {len(named_tests)} test(s) ({', '.join(named_tests[:3])}) "
                  "but no test runner profile is enabled to run them")  # fmt: skip
        infra.append(InfraFailure(tool="incidents", argv=[], exit_code=None, reason=reason))
    named = tuple(named_tests)
    engine = Engine(base, settings, cache, versions, targets, inputs, named, dict(frozen or {}))
    # The slow, whole-batch tools first, so they start at once.
    profiles.sort(key=lambda p: p.scope != "batch")
    workers = max(1, min(len(profiles) or 1, settings.max_workers or os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="check") as pool:
        results = list(pool.map(engine.run_profile, profiles))
    inputs.runs = [run.model_dump(mode="json") for r in results for run in r.warm]
    findings = sorted(
        (f for r in results for f in r.findings),
        key=lambda f: (f.path, f.line or 0, f.column or 0, f.tool, f.code or ""),
    )
    runs = [run for r in results for run in r.runs]
    label = str(ctx.attempt_number)
    if ctx.attempt_number == 0 and ctx.mechanical_fix_applied:
        label = "0b"
    return ErrorReport(
        attempt_number=ctx.attempt_number,
        ai_agent=ctx.current_agent,
        run_id=ctx.run_id,
        workstream_id=ctx.workstream_id,
        label=label,
        generated_at=datetime.now(UTC),
        mechanical_fix_applied=ctx.mechanical_fix_applied,
        issues=findings,
        summary=summarize(findings),
        tool_runs=runs,
        infra_failures=infra + [i for r in results for i in r.infra],
        judged=judged_of(inputs, base, runs).model_copy(  # cached runs too: digests are keys'
            update={"frozen": {p: _sha256(t) for p, t in sorted((frozen or {}).items())}}
        ),
    )


# -- small helpers -----------------------------------------------------------------


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _dist_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return f"{dist} {metadata.version(dist)}"
    except metadata.PackageNotFoundError:
        return None


def site_packages() -> list[str]:
    """Where packages get installed for the interpreter running incidents."""
    paths = sysconfig.get_paths()
    return sorted({paths["purelib"], paths["platlib"]})


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _with_path(f: RawFinding, path: str) -> RawFinding:
    return f if f.path == path else RawFinding(path, f.line, f.column, f.code, f.message,
                                               f.severity, f.category)  # fmt: skip


def _chunks(items: list[Target], max_chars: int) -> list[list[Target]]:
    chunks: list[list[Target]] = []
    current: list[Target] = []
    size = 0
    for t in items:
        if current and size + len(t.path) + 1 > max_chars:
            chunks.append(current)
            current, size = [], 0
        current.append(t)
        size += len(t.path) + 1
    if current:
        chunks.append(current)
    return chunks
