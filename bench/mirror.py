"""Benchmark: the status query from the SQLite mirror against the tree walk it replaces,
on the same real reports root, measured in the same run. Results: bench/results/mirror.json.

Run: .venv/bin/python bench/mirror.py [--count 20000] [--runs 7]
Target: the open-incidents query from the mirror at most half of a walk that reads each
open bundle's incident.json (what `status` would cost without the mirror) with the page
cache warm, the walk's best case (a cold cache makes the walk several times slower, the
query not); one upsert in its own transaction under 1 ms (PERFORMANCE.md: ~0.1 ms).
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

from incidents import mirror  # noqa: E402
from incidents.layout import Root  # noqa: E402


def make_root(base: Path, count: int) -> Root:
    """`count` bundles, 10% open, the rest archived, spread over steps and days.

    Written without fsync: this is the benchmark's set-up, not the product's ingest path.
    """
    root = Root(base / "reports").ensure()
    for i in range(count):
        bucket = "inbox" if i % 10 == 0 else ("resolved" if i % 3 else "escalated")
        incident_id = f"incident_20260217_030000_step_{i:06d}"
        folder = root.bucket(bucket) / incident_id
        folder.mkdir()
        created = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00+00:00"
        doc = {
            "incident_id": incident_id,
            "status": "new" if bucket == "inbox" else bucket,
            "created_at": created,
            "updated_at": created,
            "run_id": f"run_{i}",
            "step": f"step_{i % 50}",
            "failure_class": "transient",
            "message": f"timeout number {i}",
            "error_signature": f"transient | step_{i % 50} | timeout number <n>",
        }
        (folder / "incident.json").write_text(json.dumps(doc))
        (folder / "status.txt").write_text(doc["status"] + "\n")
    return root


def walk(root: Root, buckets: tuple[str, ...]) -> list[dict[str, object]]:
    """What `status` would do without the mirror: list the folders, read every incident."""
    found = []
    for bucket in buckets:
        folder = root.bucket(bucket)
        for name in os.listdir(folder):
            with open(folder / name / "incident.json", "rb") as fh:
                found.append(json.loads(fh.read()))
    found.sort(key=lambda d: (d["created_at"], d["incident_id"]), reverse=True)
    return found


def timed(fn: Callable[[], object], runs: int) -> tuple[float, object]:
    samples, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000, result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "mirror.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_root(Path(tmp), args.count)
        started = time.perf_counter()
        result = mirror.reindex(root)
        reindex_s = time.perf_counter() - started
        assert sum(result.counts.get(b, 0) for b in mirror.MIRROR_BUCKETS) == args.count
        conn = mirror.connect(root.db_path)
        try:
            all_buckets = tuple(mirror.MIRROR_BUCKETS)
            open_ms, open_rows = timed(lambda: mirror.list_incidents(conn), args.runs)
            all_ms, all_rows = timed(
                lambda: mirror.list_incidents(conn, buckets=all_buckets), args.runs
            )
            walk_open_ms, walked_open = timed(lambda: walk(root, ("inbox",)), args.runs)
            walk_all_ms, walked_all = timed(lambda: walk(root, all_buckets), args.runs)
            assert len(open_rows) == len(walked_open) == len(range(0, args.count, 10))  # type: ignore[arg-type]
            assert len(all_rows) == len(walked_all) == args.count  # type: ignore[arg-type]
            row = mirror.list_incidents(conn, limit=1)[0]
            upserts = 1000
            started = time.perf_counter()
            for _ in range(upserts):
                with mirror.write(conn):
                    mirror.upsert_incident(conn, row)
            upsert_ms = (time.perf_counter() - started) * 1000 / upserts
        finally:
            conn.close()
    ratio = open_ms / walk_open_ms
    doc = {
        "benchmark": "mirror",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "bundles": args.count,
        "runs": args.runs,
        "results_ms": {
            "mirror: open incidents": round(open_ms, 2),
            "walk: open incidents (read each incident.json)": round(walk_open_ms, 2),
            "mirror: all incidents": round(all_ms, 2),
            "walk: all incidents": round(walk_all_ms, 2),
            "upsert, one per transaction": round(upsert_ms, 3),
        },
        "reindex_s": round(reindex_s, 2),
        "open_mirror_over_walk": round(ratio, 3),
        "target": "open query <= 50% of a warm-cache walk; upsert < 1 ms",
        "met": ratio <= 0.50 and upsert_ms < 1.0,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    for name, ms in doc["results_ms"].items():  # type: ignore[attr-defined]
        print(f"{name:48} {ms:9.3f} ms")
    print(f"reindex of {args.count} bundles: {reindex_s:.2f} s")
    print(f"mirror / walk (open): {ratio:.3f} (target <= 0.50) -> {args.out}")
    return 0 if doc["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
