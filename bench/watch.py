#!/usr/bin/env python3
"""bench/watch.py: the watcher's throughput and pickup latency against this machine's limit.

Bundles whose check passes at once (one verification command, `python ok.py`, that
succeeds) are renamed into the inbox of a running `incidents watch`:
- throughput: incidents per second from the first rename into the inbox to the last
  archive, for --workers 1..cores (a burst of --count bundles);
- pickup latency: from a bundle's rename to `planned` (its plan_generated event), p50/p99,
  on an idle watcher (bundles dropped one at a time);
- the limit: a minimal loop written here doing the same essential work per incident: write
  the bundle (fsynced, renamed), run the same command once, write one JSON report, one
  SQLite transaction, one rename into the archive. Its writes keep the promises the
  product keeps (RELIABILITY.md, I3): a file is fsynced before its rename, and the folder
  of a rename is fsynced after it, so a power cut cannot take a move back. It runs before
  and after the one-worker run (half the incidents each), and the mean is the limit.
Results: bench/results/watch.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


def template(base: Path) -> dict[str, bytes]:
    env = {**os.environ, "INCIDENTS_ROOT": str(base / "tpl")}
    out = subprocess.run(
        [PY, "-m", "incidents", "capture", "--step", "bench", "--message", "bench step failed",
         "--verify", f"{PY} ok.py", "--workdir", str(base / "work")],
        env=env, capture_output=True, text=True, check=True, cwd=base,
    ).stdout.strip()  # fmt: skip
    folder = base / "tpl" / "error_inbox" / out
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def write_bundle(staging: Path, inbox: Path, tpl: dict[str, bytes], incident_id: str) -> float:
    folder = staging / incident_id
    folder.mkdir(mode=0o700)
    for name, data in tpl.items():
        if name == "incident.json":
            doc = json.loads(data)
            doc["incident_id"] = incident_id
            data = json.dumps(doc).encode()
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    fsync_dir(folder)
    os.rename(folder, inbox / incident_id)
    fsync_dir(inbox)  # as a capture does: the bundle stays in the inbox after a power cut
    return time.time()


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def minimal_loop(base: Path, tpl: dict[str, bytes], n: int, tag: str = "") -> float:
    """The same essential work per incident, with nothing else: incidents per second."""
    root = base / f"minimal{tag}"
    staging, inbox, archive = root / "staging", root / "inbox", root / "archive"
    for d in (staging, inbox, archive):
        d.mkdir(parents=True)
    db = sqlite3.connect(root / "db.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, status TEXT, report TEXT)")
    started = time.perf_counter()
    for i in range(n):
        incident_id = f"incident_min{tag}_{i:06d}"
        write_bundle(staging, inbox, tpl, incident_id)
        res = subprocess.run([PY, "ok.py"], cwd=base / "work", capture_output=True)
        report = json.dumps({"id": incident_id, "exit": res.returncode, "issues": []})
        tmp = inbox / incident_id / ".report.tmp"
        tmp.write_text(report)
        fd = os.open(tmp, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        os.replace(tmp, inbox / incident_id / "report.json")
        fsync_dir(inbox / incident_id)
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t VALUES (?, 'resolved', ?)", (incident_id, report))
        db.execute("COMMIT")
        os.rename(inbox / incident_id, archive / incident_id)
        fsync_dir(inbox)
        fsync_dir(archive)
    return n / (time.perf_counter() - started)


def events(root: Path, kind: str) -> dict[str, float]:
    conn = sqlite3.connect(root / ".state" / "mirror.sqlite3")
    try:
        rows = conn.execute(
            "SELECT incident_id, min(ts) FROM events WHERE event_type = ? GROUP BY incident_id",
            (kind,),
        ).fetchall()
    finally:
        conn.close()
    return {i: datetime.fromisoformat(ts).timestamp() for i, ts in rows}


def start_watcher(base: Path, root: Path, workers: int) -> subprocess.Popen[str]:
    env = {**os.environ, "INCIDENTS_ROOT": str(root)}
    proc = subprocess.Popen(
        [PY, "-m", "incidents", "watch", "--workers", str(workers), "--log-json", "--poll", "5"],
        cwd=base, env=env, stdout=subprocess.DEVNULL, text=True,
        stderr=open(base / f"watch-{root.name}.log", "w"),  # noqa: SIM115
    )  # fmt: skip
    log = base / f"watch-{root.name}.log"
    while '"watch_started"' not in log.read_text():  # ready when it says so
        time.sleep(0.05)
    time.sleep(0.5 + 0.3 * workers)  # the worker processes import the package
    return proc


def drain(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(timeout=120)


def run_watch(base: Path, tpl: dict[str, bytes], n: int, workers: int, tag: str) -> float:
    root = base / f"root_{tag}"
    subprocess.run(
        [PY, "-m", "incidents", "status", "--root", str(root)], cwd=base, capture_output=True
    )  # fmt: skip  (creates the layout)
    proc = start_watcher(base, root, workers)
    renamed: dict[str, float] = {}
    for i in range(n):
        incident_id = f"incident_{tag}_{i:06d}"
        renamed[incident_id] = write_bundle(
            root / ".staging", root / "error_inbox", tpl, incident_id
        )
    resolved = root / "error_archive" / "resolved"
    deadline = time.time() + 60 + n
    while len(os.listdir(resolved)) + len(os.listdir(root / "error_archive" / "escalated")) < n:
        if time.time() > deadline:
            raise SystemExit(f"bench: {tag}: not all archived in time")
        time.sleep(0.2)
    drain(proc)
    archived = events(root, "archived")
    return n / (max(archived.values()) - min(renamed.values()))


def pickup_latency(base: Path, tpl: dict[str, bytes], n: int) -> dict[str, float]:
    root = base / "root_latency"
    subprocess.run([PY, "-m", "incidents", "status", "--root", str(root)], cwd=base,
                   capture_output=True)  # fmt: skip
    proc = start_watcher(base, root, 1)
    renamed: dict[str, float] = {}
    for i in range(n):
        incident_id = f"incident_lat_{i:06d}"
        renamed[incident_id] = write_bundle(
            root / ".staging", root / "error_inbox", tpl, incident_id
        )
        time.sleep(0.25)  # idle between drops: each finds the watcher waiting
    time.sleep(2)
    drain(proc)
    planned = events(root, "plan_generated")
    lat = sorted((planned[i] - t) * 1000 for i, t in renamed.items() if i in planned)
    return {
        "n": len(lat),
        "p50_ms": round(statistics.median(lat), 1),
        "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 1),
        "max_ms": round(lat[-1], 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--latency-count", type=int, default=100)
    ap.add_argument("--max-workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "watch.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        base = Path(tmp)
        (base / "work").mkdir()
        (base / "work" / "ok.py").write_text("pass\n")
        tpl = template(base)
        # the machine's speed drifts over minutes (±15% here): the limit is measured before
        # and after the one-worker run, and the two are averaged
        half = max(1, min(args.count, 2000) // 2)
        limits = [minimal_loop(base, tpl, half, "_before")]
        print(f"minimal loop (the limit), before: {limits[0]:.1f} incidents/s", flush=True)
        throughput: dict[str, float] = {}
        for w in range(1, args.max_workers + 1):
            rate = run_watch(base, tpl, args.count, w, f"w{w}")
            throughput[str(w)] = round(rate, 1)
            if w == 1:
                limits.append(minimal_loop(base, tpl, half, "_after"))
                print(f"minimal loop (the limit), after: {limits[1]:.1f} incidents/s")
            limit = statistics.mean(limits)
            print(f"watch --workers {w}: {rate:.1f} incidents/s "
                  f"({100 * rate / limit:.0f}% of the limit, {limit:.1f}/s)", flush=True)  # fmt: skip
        latency = pickup_latency(base, tpl, args.latency_count)
        print(f"pickup latency (idle): p50 {latency['p50_ms']} ms, p99 {latency['p99_ms']} ms")
    result = {
        "count": args.count,
        "cores": os.cpu_count(),
        "limit_per_s": round(limit, 1),
        "limit_runs_per_s": [round(x, 1) for x in limits],
        "throughput_per_s": throughput,
        "fraction_of_limit_1_worker": round(throughput["1"] / limit, 3),
        "pickup_latency_idle": latency,
        "targets": {"fraction_1_worker": 0.5, "pickup_p99_ms": 250},
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
