"""What `checks.tamper` compares: the targets and every check config the tools could read,
as they were before the incident's first fix, kept on disk, and as they are now.

`capture` reads the target files (their text) and every file a check tool may read its
config from (`config_paths`: present or not, since a config created later is a change). The baseline
check of an incident stores this as `tamper_baseline_step_<N>.json` in its runs folder
before anything may change the files; every later check compares the files against the
latest such baseline. A suppression a fixer added therefore stays a finding in every
recheck until it is gone, whichever tier or call added it, and a tick killed after the
fixer ran still finds it when it resumes.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import tokenize
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, TypeGuard

from incidents import artifacts, fsutil
from incidents.checks import tamper
from incidents.models.report import Finding

MAX_TEXT_BYTES = 4 << 20  # a larger file is compared by its digest
OPAQUE = "\0opaque: "  # no Python source holds a NUL: this is never a file's text
MAX_BASELINE_BYTES = 256 << 20
_BASELINE = re.compile(r"tamper_baseline_step_(\d+)\.json")
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# read by the tools but not named by their profiles
EXTRA_CONFIGS = frozenset(
    {"conftest.py", "~/.config/mypy/config", "~/.mypy.ini", "~/.config/black"}
)

State = dict[str, dict[str, str | None]]  # {"targets": {rel: contents}, "configs": {path: ...}}


def contents(path: Path) -> str | None:
    """The file's text (None: absent; bytes that do not decode are replaced), or an
    `OPAQUE` note for one too large, not a regular file or unreadable. Symlinks are
    followed, as the tools follow them; a FIFO never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"{OPAQUE}unreadable: {exc.strerror}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"{OPAQUE}not a regular file (mode {st.st_mode:o})"
        digest, kept = hashlib.sha256(), bytearray()
        while chunk := os.read(fd, 1 << 16):
            digest.update(chunk)
            if len(kept) <= MAX_TEXT_BYTES:
                kept += chunk
    finally:
        os.close(fd)
    if len(kept) > MAX_TEXT_BYTES:
        return f"{OPAQUE}{st.st_size} bytes, sha256 {digest.hexdigest()}"
    return _decode(bytes(kept))


def _decode(data: bytes) -> str:
    """As Python reads a source file (a coding cookie is honoured), else UTF-8 with
    replacements: a comment stays a comment whatever bytes surround it."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", errors="replace")


def config_paths(workdir: Path, targets: Sequence[str]) -> list[Path]:
    """Every place a check tool may read its config from for these targets, present or
    not: the names of every built-in profile's `config_files` (and pytest's `conftest.py`)
    in the targets' folders and every folder above them (the workdir as given and as
    resolved), and the user's own tool configs. The targets themselves are not configs."""
    from incidents.checks.inputs import config_paths as places
    from incidents.checks.profiles import BUILTIN_PROFILES

    names = sorted({n for p in BUILTIN_PROFILES.values() for n in p.config_files} | EXTRA_CONFIGS)
    found: set[str] = set()
    for cwd in {str(workdir), os.path.realpath(workdir)}:
        starts = [os.path.dirname(os.path.realpath(os.path.join(cwd, t))) for t in targets]
        found.update(places(cwd, starts, names))
    seen = {os.path.realpath(workdir / t) for t in targets}
    paths = []
    for path in sorted(found):  # each file once, whatever the path it is reached by
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            paths.append(Path(path))
    return paths


def capture(workdir: Path, targets: Sequence[str]) -> State:
    return {
        "targets": {t: contents(workdir / t) for t in targets},
        "configs": {str(p): contents(p) for p in config_paths(workdir, targets)},
    }


def save_baseline(runs: Path, step: int, workdir: Path, targets: Sequence[str]) -> bool:
    """The baseline of the check at `step`, once (a redo of the step keeps the first).
    The file is fsynced, its folder is not: True when the caller owes that fsync (before
    anything may change the files, as for the check's report)."""
    path = runs / artifacts.tamper_baseline_name(step)
    if path.exists():
        return False
    doc = {"step": step, **capture(workdir, targets)}
    fsutil.atomic_write_bytes(path, fsutil.dump_json(doc), sync_dir=False)
    return True


def first_baseline(runs: Path, before_step: int) -> State | None:
    """The baseline of the first baseline check before `before_step` (None: there is none,
    as for an incident begun before baselines were kept). The first: a requeued incident's
    new baseline check must not adopt a suppression its escalation rejected."""
    steps = [
        int(m.group(1))
        for name in (os.listdir(runs) if runs.is_dir() else [])
        if (m := _BASELINE.fullmatch(name)) and int(m.group(1)) < before_step
    ]
    if not steps:
        return None
    doc = fsutil.read_json(runs / artifacts.tamper_baseline_name(min(steps)), MAX_BASELINE_BYTES)
    return {key: _strings(doc, key) for key in ("targets", "configs")}


def _strings(doc: Any, key: str) -> dict[str, str | None]:
    part = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(part, dict):
        return {}
    return {str(k): (v if isinstance(v, str) else None) for k, v in part.items()}


def findings(
    baseline: State,
    workdir: Path,
    targets: Sequence[str],
    python_files: Collection[str],
    allowed: Collection[str] = (),
) -> list[Finding]:
    """The suppressions added since `baseline`, as hard `tamper` findings."""
    now = capture(workdir, targets)
    added: list[tamper.Added] = []
    for target in targets:
        if target in baseline["targets"]:
            before, after = baseline["targets"][target], now["targets"][target]
            if _opaque(after) and not _opaque(before):  # too large to compare now
                added.append(
                    tamper.Added("unreadable", target, None, f"target {after[len(OPAQUE):]}")
                )
            elif not _opaque(before) and not _opaque(after):
                compare = tamper.python_added if target in python_files else tamper.powershell_added
                added += compare(target, before, after)
    configs = baseline["configs"]
    for path in sorted(set(configs) | set(now["configs"])):
        if path in configs:  # a path it did not look at (targets changed): no baseline
            change = tamper.config_changed(
                _shown(path, workdir), configs[path], now["configs"].get(path)
            )
            added += [change] if change else []
    return tamper.to_findings(added, allowed)


def _opaque(text: str | None) -> TypeGuard[str]:
    return text is not None and text.startswith(OPAQUE)


def _shown(path: str, workdir: Path) -> str:
    """A config path relative to the workdir when it is inside it."""
    base = os.path.realpath(workdir)
    return os.path.relpath(path, base) if path.startswith(base + os.sep) else path
