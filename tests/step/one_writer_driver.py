"""Drives incidents through every path that writes the machine's files, with an audit hook
that records which module made each write (run by test_one_writer.py as a subprocess).

Guarded: writes of `state.json`, `ai_attempts.json` and `run_result.json`, and moves of an
incident folder between the inbox and the archive buckets. Each must be made with a
module of `incidents.step` on the stack. Prints a JSON summary on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from types import FrameType
from typing import cast

GUARDED = {"state.json", "ai_attempts.json", "run_result.json"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
BUCKETS: set[str] = set()
# what os.rename takes; the audit hook receives its arguments untyped
PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]
seen: dict[str, int] = {}
violations: list[dict[str, str]] = []
_busy = False


def _stack_modules() -> list[str]:
    frame: FrameType | None = sys._getframe(3)
    names = []
    while frame is not None:
        names.append(str(frame.f_globals.get("__name__", "")))
        frame = frame.f_back
    return names


def _check(kind: str, path: str) -> None:
    seen[kind] = seen.get(kind, 0) + 1
    modules = _stack_modules()
    if not any(m.startswith("incidents.step.") for m in modules):
        writer = next((m for m in modules if m != "incidents.fsutil"), "?")
        violations.append({"kind": kind, "path": path, "writer": writer})


def _hook(event: str, args: tuple[object, ...]) -> None:
    global _busy
    if _busy or event not in ("open", "os.rename"):
        return
    _busy = True
    try:
        if event == "open":
            path, _mode, flags = args
            name = os.path.basename(path) if isinstance(path, str | Path) else ""
            if name in GUARDED and isinstance(flags, int) and flags & WRITE_FLAGS:
                _check(name, str(path))
        else:
            src, dst = os.fspath(cast(PathArg, args[0])), os.fspath(cast(PathArg, args[1]))
            if isinstance(dst, bytes) or isinstance(src, bytes):
                return
            if os.path.basename(dst) in GUARDED:
                _check(os.path.basename(dst), dst)
            src_bucket, dst_bucket = os.path.dirname(src), os.path.dirname(dst)
            if src_bucket in BUCKETS and dst_bucket in BUCKETS and src_bucket != dst_bucket:
                _check("move", f"{src} -> {dst}")
    finally:
        _busy = False


def main(work: Path) -> None:
    from incidents import fsutil, leases
    from incidents.cli import main as cli
    from incidents.config import load_config
    from incidents.layout import Root
    from incidents.watch import worker

    root = Root(work / "reports")
    BUCKETS.update(str(root.bucket(b)) for b in ("inbox", "resolved", "escalated"))
    ws = work / "ws"

    def run(*args: str) -> str:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli(list(args))
        if code != 0:
            raise SystemExit(f"incidents {' '.join(args)} exited {code}")
        return out.getvalue()

    def capture(name: str) -> str:
        (ws / f"{name}.py").write_text("def f(:\n    pass\n")
        return run(
            "capture", "--step", name, "--message", f"{name}.py broken",
            "--python-file", f"{name}.py", "--workdir", str(ws),
        ).strip()  # fmt: skip

    def hand_back(incident_id: str, fix: bool) -> None:
        run("claim", incident_id, "--agent", "skill", "--lease", "10m")
        if fix:
            (ws / f"{incident_id.split('_')[3]}.py").write_text("def f() -> None:\n    pass\n")
        run("submit", incident_id, "--notes", "tried")

    sys.addaudithook(_hook)
    # a hand-off that fails, is escalated, requeued by a human, then fixed by the agent
    first = capture("first")
    run("drive", first)
    hand_back(first, fix=False)
    run("drive", first)
    run("resolve-escalation", first, "--guidance", "try again", "--requeue")
    run("drive", first)
    hand_back(first, fix=True)
    run("drive", first)
    # escalated, then resolved by a human
    second = capture("second")
    run("drive", second)
    hand_back(second, fix=False)
    run("drive", second)
    run("resolve-escalation", second, "--guidance", "fixed by hand")
    # closed by command
    third = capture("third")
    run("archive", third, "--escalated", "--reason", "not ours")
    # the watcher's poison rule: a holder that died twice before, once more now
    fourth = capture("fourth")
    (root.state / "recoveries").mkdir(mode=0o700, exist_ok=True)
    (root.state / "recoveries" / fourth).write_text("2")
    leases.acquire(root, fourth, "crashed", 1.0, clock=lambda: time.time() - 60)
    cfg = load_config()  # INCIDENTS_CONFIG
    picked = worker.pickup(str(root.path), cfg, fourth)
    # controls: the same writes from outside the step service are caught
    scratch = root.inbox / "scratch"
    scratch.mkdir()
    fsutil.atomic_write_json(scratch / "state.json", {})
    os.rename(scratch, root.bucket("resolved") / "scratch")
    places = [root.locate(i)[0] for i in (first, second, third, fourth)]
    print(json.dumps({"seen": seen, "violations": violations, "places": places,
                      "poison": str(picked.result)}))  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]))
