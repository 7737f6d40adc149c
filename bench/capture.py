"""Benchmark: wall time of scripts/error_capture.py against a bare interpreter start and
against importing typer+pydantic, measured in the same run. Results: bench/results/capture.json.

Run: .venv/bin/python bench/capture.py [--runs 40]
Target: capture median within 2x of `python -c pass`.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "capture.json"))
    args = ap.parse_args()
    py = sys.executable
    # .pyc files as an installed package has them (this environment may set
    # PYTHONDONTWRITEBYTECODE, which would make every run recompile our modules)
    subprocess.run([py, "-m", "compileall", "-q", str(REPO / "src")], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
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
            "floor: stdlib script writing the same 5 files fsynced + rename": [py, floor, tmp],
            "python -c 'import typer, pydantic'": [py, "-c", "import typer, pydantic"],
            "error_capture.py (new bundle)": capture,
            "error_capture.py (dedupe: add occurrence)": dedupe,
            "error_capture.py (64 KiB log of secrets, redacted)": with_log,
        }
        for argv in cases.values():  # warm the page cache and .pyc files
            timed(argv, env, 3)
        results = {name: [] for name in cases}  # type: dict[str, list[float]]
        for _ in range(args.runs):  # interleaved, so drift hits every case alike
            for name, argv in cases.items():
                results[name] += timed(argv, env, 1)
    report = {name: summary(s) for name, s in results.items()}
    bare = report["python -c pass"]["median_ms"]
    ratio = report["error_capture.py (new bundle)"]["median_ms"] / bare
    floor_ms = report["floor: stdlib script writing the same 5 files fsynced + rename"]["median_ms"]
    doc = {
        "benchmark": "capture",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "runs": args.runs,
        "results": report,
        "capture_over_bare_interpreter": round(ratio, 2),
        "floor_over_bare_interpreter": round(floor_ms / bare, 2),
        "capture_over_floor": round(
            report["error_capture.py (new bundle)"]["median_ms"] / floor_ms, 2
        ),
        "target": "capture median <= 2.0x python -c pass",
        "met": ratio <= 2.0,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    for name, s in report.items():
        print(f"{name:45} median {s['median_ms']:7.2f} ms  p90 {s['p90_ms']:7.2f} ms")
    print(
        f"capture / bare interpreter: {ratio:.2f}x (target <= 2.0x); "
        f"floor / bare: {floor_ms / bare:.2f}x -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
