"""Benchmark: what containing a fixer costs per call (issue 14), on a workdir of 1,000 files.

    .venv/bin/python bench/containment.py [--runs 30]

A trivial fixer program (`true`) is run, interleaved, in the same run:
  - process only: bare (`proc.run`) vs under bubblewrap (`sandbox.wrap`);
  - the whole fixer call (`fixers.runner.run_fixer`: snapshot before and after, the run,
    the judgement) with `[tiers] sandbox = "bwrap"` and `"none"` (detection: the check
    configs up the tree and the incidents config held and compared, the incident's folders
    in the reports root and the seal key compared, the listings of the workdir's
    ancestors and /tmp, a private TMPDIR, the subreaper and its sweep), against
    the same call's work without any containment (snapshot, bare run, snapshot, compare).
Writes bench/results/containment.json. Target: each containment's overhead (median of the
whole call minus the uncontained call's median) under 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from incidents import proc  # noqa: E402
from incidents.fixers import TierSettings, sandbox, snapshot  # noqa: E402
from incidents.fixers.runner import run_fixer  # noqa: E402

TARGET_MS = 100.0
FILES = 1000


def make_workdir(base: Path) -> Path:
    """A project four folders down (so config lookups walk a real chain), 1,000 files."""
    wd = base / "home" / "dev" / "src" / "project"
    for i in range(FILES):
        sub = wd / f"pkg{i // 100}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"mod{i}.py").write_text(f"VALUE_{i} = {i}\n" * 20)
    (wd / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    (base / "home" / "dev" / "ruff.toml").write_text("line-length = 99\n")
    return wd


def make_root(base: Path) -> tuple[str, ...]:
    """An incident's folders in a reports root as detection compares them after a few
    attempts (reports, prompts, a tamper baseline, the bundle, the plan, the seal key)."""
    root = base / "reports"
    runs = root / "error_runs" / "incident_x"
    bundle = root / "error_inbox" / "incident_x"
    plan = root / "error_plans" / "incident_x"
    for folder in (runs, bundle, plan, root / ".state"):
        folder.mkdir(parents=True, exist_ok=True)
    for n in range(6):
        (runs / f"error_report_attempt_{n}.json").write_text('{"issues": []}' + " " * 20_000)
        (runs / f"prompt_attempt_{n}.md").write_text("fix it\n" * 1000)
    (runs / "tamper_baseline_step_1.json").write_text("{}" + " " * 50_000)
    for name in ("incident.json", "state.json", "ai_attempts.json", "log_tail.txt"):
        (bundle / name).write_text("{}" + " " * 4_000)
    (plan / "plan.json").write_text("{}")
    (root / ".state" / "seal.key").write_bytes(os.urandom(32))
    return (str(runs), str(bundle), str(plan), str(root / ".state" / "seal.key"))


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p90_ms": round(ordered[max(0, int(len(ordered) * 0.9) - 1)] * 1000, 2),
        "min_ms": round(ordered[0] * 1000, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "containment.json"))
    args = ap.parse_args()
    found = sandbox.probe()
    if not found.ok:
        print(f"bubblewrap cannot run here: {found.reason}; measuring detection only")
    true = proc.run(["sh", "-c", "command -v true"]).stdout_text.strip() or "/bin/true"
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        wd = make_workdir(base)
        watch_root = make_root(base)
        target = "pkg0/mod0.py"
        prompt = base / "runs" / "prompt_attempt_1.md"
        prompt.parent.mkdir()
        prompt.write_text("fix it\n")
        config = base / "incidents.toml"
        config.write_text("[tiers]\n")
        settings = TierSettings(argv=[true, "{files}"], timeout_s=30)
        env = proc.minimal_env()

        def bare_run() -> None:
            assert proc.run([true, target], cwd=wd, env=env).ok

        def bwrap_run() -> None:
            argv = sandbox.wrap(found, [true, target], str(wd), read_only=[str(config)])
            assert proc.run(argv, cwd=wd, env=env).ok

        def uncontained_call() -> None:  # run_fixer's own work, without containment
            before = snapshot.take(wd)
            bare_run()
            after = snapshot.take(wd, (), snapshot.Limits(0, 1 << 40, 1 << 40))
            assert snapshot.changed_paths(before, after) == []

        def call(mode: str) -> Callable[[], None]:
            containment = sandbox.Containment(
                mode, protect=(str(base / "reports"),), watch=(str(config),),
                watch_root=watch_root, aside=str(base / "reports" / ".state" / "stray"),
            )  # fmt: skip

            def run() -> None:
                out = run_fixer("aider", settings, prompt, [target], wd, containment=containment)
                assert out.ok and out.violations == [], (out.infra_error, out.violations)

            return run

        cases: dict[str, Callable[[], None]] = {
            "process: bare": bare_run,
            "fixer call: no containment (snapshots + bare run)": uncontained_call,
            'fixer call: sandbox = "none" (detection)': call("none"),
        }
        if found.ok:
            cases["process: under bubblewrap"] = bwrap_run
            cases['fixer call: sandbox = "bwrap"'] = call("bwrap")
        for fn in cases.values():  # warm the page cache and the probe
            fn()
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):  # interleaved, so drift hits every case alike
            for name, fn in cases.items():
                t0 = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - t0)
    report = {name: summary(s) for name, s in samples.items()}
    base_ms = report["fixer call: no containment (snapshots + bare run)"]["median_ms"]
    overhead = {
        "detection": round(report['fixer call: sandbox = "none" (detection)']["median_ms"]
                           - base_ms, 2),
    }  # fmt: skip
    if found.ok:
        overhead["bwrap"] = round(report['fixer call: sandbox = "bwrap"']["median_ms"] - base_ms, 2)
        overhead["bwrap process start alone"] = round(
            report["process: under bubblewrap"]["median_ms"]
            - report["process: bare"]["median_ms"], 2
        )  # fmt: skip
    doc = {
        "benchmark": "containment",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "bwrap": found.label if found.ok else f"unavailable: {found.reason}",
        "workdir_files": FILES,
        "runs": args.runs,
        "results": report,
        "overhead_median_ms": overhead,
        "target": f"containment overhead per fixer call < {TARGET_MS:g} ms median",
        "met": all(v < TARGET_MS for v in overhead.values()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    for name, s in report.items():
        print(f"{name:52} median {s['median_ms']:7.2f} ms  p90 {s['p90_ms']:7.2f} ms")
    print(f"overhead (median): {overhead}; target < {TARGET_MS:g} ms -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
