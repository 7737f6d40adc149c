"""Mechanical autofix (seed 001 §3.3): the profiles' fix commands on the targets only.

Safe and deterministic: `ruff check --fix` without unsafe fixes, then the formatters
(`ruff format`, and `black` when enabled). Fixers run one after another (they edit the
same files). Changed files are found by content hash, never by the tools' own claims;
files next to the targets are watched too, and any change there is reported.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from incidents import fsutil, proc
from incidents.checks.cache import FindingsCache, VersionCache, default_cache_dir
from incidents.checks.engine import Engine, Target, display_path, file_digest, which
from incidents.checks.parsers import tail
from incidents.checks.profiles import resolve_profiles
from incidents.checks.settings import ChecksSettings


@dataclass(frozen=True)
class ChangedFile:
    path: str
    before: str  # sha256 of the content before the fixers ran
    after: str


@dataclass(frozen=True)
class FixStep:
    tool: str
    argv: list[str]
    exit_code: int | None
    duration_s: float
    error: str | None = None
    stderr_tail: str = ""


@dataclass
class AutofixResult:
    changed: list[ChangedFile] = field(default_factory=list)
    log: list[FixStep] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # targets refused (symlink, not a file)
    # Other files in the targets' folders that changed meanwhile: reported, not an error.
    # The fixers are given the target files only; a neighbour that changed was changed by
    # someone else (another incident's worker sharing the workdir), not by them.
    outside_changes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.error is None for s in self.log)

    def to_json(self) -> dict[str, object]:
        return {
            "changed": [vars(c) for c in self.changed],
            "log": [vars(s) for s in self.log],
            "skipped": self.skipped,
            "outside_changes": self.outside_changes,
        }


def apply_mechanical_fixes(
    files: Sequence[str],
    *,
    settings: ChecksSettings | None = None,
    cwd: str | os.PathLike[str] | None = None,
    tools: Sequence[str] | None = None,
) -> AutofixResult:
    """Run every enabled profile's fix command on the Python targets among `files`."""
    settings = settings or ChecksSettings()
    base = Path(cwd or os.getcwd()).resolve()
    result = AutofixResult()
    targets: list[Target] = []
    for p in dict.fromkeys(files):
        rel = display_path(p, base)
        full = base / rel
        if full.is_symlink() or not full.is_file():
            result.skipped.append(rel)
            continue
        targets.append(Target(rel, file_digest(full)))
    only = tools if tools is not None else settings.tools
    profiles = [
        p
        for p in resolve_profiles(dict(settings.profiles), only=only)
        if p.fix_argv and p.language == "python"
    ]
    cache_root = (
        Path(settings.cache_dir).expanduser() if settings.cache_dir else default_cache_dir()
    )
    cache = FindingsCache(cache_root, enabled=settings.cache)
    engine = Engine(base, settings, cache, VersionCache(cache), {"python": targets})
    neighbours = _snapshot_neighbours(base, targets)
    for profile in profiles:
        files_for_tool, _ = engine.select(profile)
        if not files_for_tool:
            continue
        argv = engine.expand(profile.fix_argv, files_for_tool, [], "")
        if which(argv[0]) is None and not os.path.isabs(argv[0]):
            result.log.append(
                FixStep(profile.name, argv, None, 0.0, f"program not found: {argv[0]}")
            )
            continue
        timeout = profile.timeout or settings.default_timeout
        res = proc.run(argv, cwd=base, timeout=timeout)
        error = res.error
        # ruff --fix exits 1 when findings remain; black exits 123 on a file it cannot parse
        if error is None and res.returncode not in profile.ok_exit_codes:
            error = f"exited {res.returncode}"
        result.log.append(FixStep(profile.name, argv, res.returncode, round(res.duration_s, 4),
                                  error, tail(res.stderr_text, 2000)))  # fmt: skip
    for t in targets:
        after = file_digest(base / t.path)
        if after != t.digest:
            result.changed.append(ChangedFile(t.path, t.digest, after))
    result.outside_changes = _changed_neighbours(neighbours)
    return result


def _snapshot_neighbours(base: Path, targets: list[Target]) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every other file in the targets' folders."""
    wanted = {str(base / t.path) for t in targets}
    snap: dict[str, tuple[int, int]] = {}
    for folder in {os.path.dirname(p) for p in wanted}:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.path not in wanted and entry.is_file(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
                snap[entry.path] = (st.st_mtime_ns, st.st_size)
    return snap


def _changed_neighbours(snap: dict[str, tuple[int, int]]) -> list[str]:
    changed = []
    for path, before in snap.items():
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            changed.append(path)
            continue
        if (st.st_mtime_ns, st.st_size) != before:
            changed.append(path)
    return sorted(changed)


def keep_targets(workdir: Path, targets: list[str]) -> dict[str, list[object] | None]:
    """Each target as `put_targets_back` takes it: [its bytes in base64, its mode], None: absent."""
    import base64

    found: dict[str, list[object] | None] = {}
    for rel in targets:
        try:
            data = fsutil.read_regular_file(workdir / rel)
        except FileNotFoundError:
            found[rel] = None
            continue
        found[rel] = [base64.b64encode(data).decode(), os.stat(workdir / rel).st_mode & 0o7777]
    return found


def put_targets_back(workdir: Path, contents: dict[str, object]) -> None:
    """The targets as `keep_targets` kept them, through the fixers' one way of putting a path
    back (`fixers.snapshot.put_back`)."""
    import base64

    from incidents.fixers.snapshot import ABSENT, Entry, put_back

    for rel, kept in contents.items():
        if isinstance(kept, list) and len(kept) == 2 and isinstance(kept[0], str):
            mode = kept[1] if isinstance(kept[1], int) else 0o644
            put_back(str(workdir / rel), Entry("file", data=base64.b64decode(kept[0]), mode=mode))
        elif kept is None:
            put_back(str(workdir / rel), ABSENT)
