"""Benchmark: wall time of scripts/error_capture.py against a bare interpreter start and
against importing typer+pydantic, measured in the same run. Results: bench/results/capture.json.

Run: .venv/bin/python bench/capture.py [--runs 40] [--rounds 5]
Target (issue 16): the capture median at most 1.3x the floor's, both measured in the same
run (interleaved), so the ratio holds on a loaded machine where milliseconds do not. Each
round is one such measurement; the result is the median of the rounds' ratios, compared
with the ratio recorded before (the results file this run replaces), with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = 1.3  # capture median / floor median
NEW = "error_capture.py (new bundle)"
BASELINE = "baseline: --baseline DIR's error_capture.py (new bundle)"
FLOOR_CASE = "floor: stdlib script writing the same 5 files fsynced + rename"

# The least any durable capture can do: json + re imported, five small files written and
# fsynced in a staging folder, one rename into the inbox, the directories fsynced.
FLOOR = """
import json, os, re, sys, time
base = sys.argv[1]
stage = os.path.join(base, "stage-%d" % os.getpid())
os.makedirs(stage)
doc = json.dumps({"incident_id": "x", "message": re.sub(r"\\d+", "<n>", "m 1")})
for name in ("incident.json", "status.txt", "log_tail.txt", "audit_tail.jsonl", "context.json"):
    fd = os.open(os.path.join(stage, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, doc.encode()); os.fsync(fd); os.close(fd)
fd = os.open(stage, os.O_RDONLY); os.fsync(fd); os.close(fd)
os.makedirs(os.path.join(base, "inbox"), exist_ok=True)
os.rename(stage, os.path.join(base, "inbox", "b-%d-%d" % (os.getpid(), time.time_ns())))
fd = os.open(os.path.join(base, "inbox"), os.O_RDONLY); os.fsync(fd); os.close(fd)
"""


def timed(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )
        samples.append(time.perf_counter() - t0)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p90_ms": round(ordered[int(len(ordered) * 0.9) - 1] * 1000, 2),
        "min_ms": round(ordered[0] * 1000, 2),
    }


def measure(cases: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, list[float]]:
    results = {name: [] for name in cases}  # type: dict[str, list[float]]
    for _ in range(runs):  # interleaved, so drift hits every case alike
        for name, argv in cases.items():
            results[name] += timed(argv, env, 1)
    return results


def recorded_ratio(path: Path) -> float | None:
    """capture / floor as the results file records it (None: no such file or field)."""
    try:
        return float(json.loads(path.read_text())["capture_over_floor"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=40, help="samples of each case in a round")
    ap.add_argument("--rounds", type=int, default=1, help="measurements; the ratio is their median")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "capture.json"))
    ap.add_argument("--baseline", metavar="DIR",
                    help="another checkout (e.g. `git archive main`) whose capture is measured "
                         "in the same run, as the ratio to beat")  # fmt: skip
    args = ap.parse_args()
    py = sys.executable
    # .pyc files as an installed package has them (this environment may set
    # PYTHONDONTWRITEBYTECODE, which would make every run recompile our modules)
    subprocess.run([py, "-m", "compileall", "-q", str(REPO / "src")], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    load_before = os.getloadavg()
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "INCIDENTS_ROOT": os.path.join(tmp, "reports")}
        env.pop("INCIDENTS_CONFIG", None)
        capture = [py, str(REPO / "scripts" / "error_capture.py"), "--step", "bench",
                   "--message", "benchmark failure", "--no-dedupe"]  # fmt: skip
        dedupe = [py, str(REPO / "scripts" / "error_capture.py"), "--step", "bench",
                  "--message", "benchmark repeat 1"]  # fmt: skip
        log = os.path.join(tmp, "secrets.log")
        with open(log, "w") as fh:  # 64 KiB, a token or password on every other line
            line = "export GITHUB_TOKEN=ghp_R4nd0mF4k3T0k3nV4lu3F0rT3st1ng00001 password=hunter2\n"
            fh.write((line + "INFO step ok pid=4242\n") * (65536 // (len(line) + 22)))
        with_log = capture + ["--log-file", log]
        floor = os.path.join(tmp, "floor.py")
        with open(floor, "w") as fh:
            fh.write(FLOOR)
        cases = {
            "python -c pass": [py, "-c", "pass"],
            FLOOR_CASE: [py, floor, tmp],
            "python -c 'import typer, pydantic'": [py, "-c", "import typer, pydantic"],
            NEW: capture,
            "error_capture.py (dedupe: add occurrence)": dedupe,
            "error_capture.py (64 KiB log of secrets, redacted)": with_log,
        }
        if args.baseline:
            base = os.path.abspath(args.baseline)
            subprocess.run([py, "-m", "compileall", "-q", os.path.join(base, "src")], check=True,
                           stdout=subprocess.DEVNULL)  # fmt: skip
            cases[BASELINE] = [py, os.path.join(base, "scripts", "error_capture.py"), *capture[2:]]
        for argv in cases.values():  # warm the page cache and .pyc files
            timed(argv, env, 3)
        for _ in range(max(1, args.rounds)):
            rounds.append(measure(cases, env, args.runs))
    load_after = os.getloadavg()
    every = {name: [t for r in rounds for t in r[name]] for name in cases}
    report = {name: summary(s) for name, s in every.items()}
    ratios = [statistics.median(r[NEW]) / statistics.median(r[FLOOR_CASE]) for r in rounds]
    ratio = statistics.median(ratios)
    bare = report["python -c pass"]["median_ms"]
    floor_ms = report[FLOOR_CASE]["median_ms"]
    before = recorded_ratio(Path(args.out))
    baseline = None
    if args.baseline:
        by_round = [
            statistics.median(r[BASELINE]) / statistics.median(r[FLOOR_CASE]) for r in rounds
        ]
        baseline = {
            "dir": args.baseline,
            "capture_over_floor": round(statistics.median(by_round), 2),
        }
    doc = {
        "benchmark": "capture",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "load_average_1_5_15": {"before": load_before, "after": load_after},
        "runs": args.runs,
        "rounds": len(rounds),
        "results": report,
        "capture_over_bare_interpreter": round(report[NEW]["median_ms"] / bare, 2),
        "floor_over_bare_interpreter": round(floor_ms / bare, 2),
        "capture_over_floor_by_round": [round(r, 2) for r in ratios],
        "capture_over_floor": round(ratio, 2),
        "recorded_before": before,
        "baseline_in_this_run": baseline,
        "target": f"capture median <= {TARGET}x the floor's, in the same run",
        "met": ratio <= TARGET,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    for name, s in report.items():
        print(f"{name:45} median {s['median_ms']:7.2f} ms  p90 {s['p90_ms']:7.2f} ms")
    was = f"{before:.2f}x" if before is not None else "none recorded"
    if baseline is not None:
        was += f"; baseline in this run: {baseline['capture_over_floor']:.2f}x"
    print(
        f"capture / floor: {ratio:.2f}x (rounds {', '.join(f'{r:.2f}' for r in ratios)}; "
        f"target <= {TARGET}x; recorded before: {was}); load average "
        f"{load_before[0]:.2f} -> {load_after[0]:.2f} -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
