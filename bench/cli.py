"""Benchmark: the start of the `incidents` command line against `python -c "import typer"`,
measured in the same run, interleaved. Results: bench/results/cli.json.

Run: .venv/bin/python bench/cli.py [--count 20000] [--runs 15] [--label after]
Measures `incidents status` (the list of open incidents) on a reports root of `--count`
real bundles (10% open; its mirror built before the first timed run) and `incidents --help`.
Targets: `status` at most 1.5x the import of typer, `--help` at most 1.3x, both in CPU
time (user + system of the child: what the command itself costs, which a loaded machine
does not change much; the wall-clock medians are recorded beside it). `--label` names the
entry the run writes (e.g. `before` on main, then `after`); the other entries are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "cli.json"
TARGETS = {"incidents status": 1.5, "incidents --help": 1.3}
BASELINE = "python -c 'import typer'"


def make_root(base: Path, count: int) -> Path:
    """`count` bundles, 10% open, the rest archived, over 50 steps. Written without fsync:
    the benchmark's set-up, not the product's ingest path."""
    path = base / "reports"
    for bucket in ("error_inbox", "error_archive/resolved", "error_archive/escalated"):
        (path / bucket).mkdir(parents=True)
    for i in range(count):
        bucket = "error_inbox" if i % 10 == 0 else "error_archive/resolved"
        status = "new" if i % 10 == 0 else "resolved"
        incident_id = f"incident_20260217_030000_step_{i:06d}"
        folder = path / bucket / incident_id
        folder.mkdir()
        created = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00+00:00"
        doc = {
            "incident_id": incident_id,
            "status": status,
            "created_at": created,
            "updated_at": created,
            "run_id": f"run_{i}",
            "step": f"step_{i % 50}",
            "failure_class": "transient",
            "message": f"timeout number {i}",
            "error_signature": f"transient | step_{i % 50} | timeout number <n>",
        }
        (folder / "incident.json").write_text(json.dumps(doc))
        (folder / "status.txt").write_text(status + "\n")
    return path


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run; a failed run stops the bench."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"bench: {argv} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(s[0] for s in samples) * 1000, 2),
        "cpu_median_ms": round(statistics.median(s[1] for s in samples) * 1000, 2),
        "min_ms": round(min(s[0] for s in samples) * 1000, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--label", default="after", help="the entry of cli.json this run writes")
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("incidents"))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = make_root(base, args.count)
        env = {**os.environ, "INCIDENTS_ROOT": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("INCIDENTS_CONFIG", None)
        commands = {
            BASELINE: [sys.executable, "-c", "import typer"],
            "incidents status": [exe, "status"],
            "incidents --help": [exe, "--help"],
        }
        for argv in commands.values():  # builds the mirror, warms the page cache
            run_once(argv, env, base)
        load_before = os.getloadavg()
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.runs):  # interleaved: a change of load hits every command alike
            for name, argv in commands.items():
                samples[name].append(run_once(argv, env, base))
        load_after = os.getloadavg()
    results = {name: summary(s) for name, s in samples.items()}
    base_cpu = results[BASELINE]["cpu_median_ms"]
    base_wall = results[BASELINE]["median_ms"]
    ratios = {
        name: {
            "cpu_ratio": round(results[name]["cpu_median_ms"] / base_cpu, 2),
            "wall_ratio": round(results[name]["median_ms"] / base_wall, 2),
            "target": target,
            "met": results[name]["cpu_median_ms"] / base_cpu <= target,
        }
        for name, target in TARGETS.items()
    }
    entry = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "load_average_1_5_15": {"before": load_before, "after": load_after},
        "count": args.count,
        "runs": args.runs,
        "results": results,
        "ratios_to_import_typer": ratios,
    }
    doc = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {"benchmark": "cli"}
    doc[args.label] = entry
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    for name, r in results.items():
        print(f"{name:36} wall {r['median_ms']:8.1f} ms   cpu {r['cpu_median_ms']:8.1f} ms")
    for name, r in ratios.items():
        verdict = "met" if r["met"] else "NOT met"
        ratio = f"{r['cpu_ratio']}x CPU (wall {r['wall_ratio']}x)"
        print(f"{name:36} {ratio}, target <= {r['target']}x: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
