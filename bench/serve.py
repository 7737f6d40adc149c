"""Benchmark: `incidents serve` on 20,000 incidents, all on loopback, bounded in time.
Results: bench/results/serve.json.

Run: .venv/bin/python bench/serve.py [--count 20000] [--requests 1000] [--clients 100]

1. `GET /api/incidents` (the first page of the open incidents, and a page of all 20,000):
   requests per second and latency, from one client and from `--concurrency` clients on
   keep-alive connections; the baseline, measured in the same run, is the same mirror
   query called in-process (what the HTTP layer adds is the difference).
2. Event delivery: `--clients` connected `GET /api/events` streams; the bench commits
   events to the mirror the way `incidents pause` does (a line in `.state/events.jsonl`,
   ingested in one transaction) and times each from the commit's return to its arrival
   at every client.

Targets: list latency p99 under 50 ms (one client); event delivery p99 under 250 ms with
100 stream clients. The previous results file is read first and reported beside this run.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import platform
import re
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from incidents import eventlog, mirror  # noqa: E402
from incidents.layout import Root  # noqa: E402
from incidents.mirror import feed  # noqa: E402

LIST_P99_MS = 50.0
EVENT_P99_MS = 250.0
DEADLINE_S = 60.0  # no phase runs longer than this


def make_root(base: Path, count: int) -> Root:
    """bench/mirror.py's root: `count` bundles, 10% open."""
    spec = importlib.util.spec_from_file_location("bench_mirror", REPO / "bench" / "mirror.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root: Root = module.make_root(base, count)
    return root


def start_server(root: Root) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "incidents", "serve", "--root", str(root.path), "--port", "0",
         "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
    assert proc.stdout is not None
    deadline = time.monotonic() + DEADLINE_S
    for raw in proc.stdout:
        line = raw.decode()
        if line.startswith("serving "):
            return proc, int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise SystemExit("the server did not start")


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def summary(samples_s: list[float], wall_s: float) -> dict[str, float]:
    ms = [s * 1000 for s in samples_s]
    return {
        "requests": len(ms),
        "per_second": round(len(ms) / wall_s, 1),
        "p50_ms": round(percentile(ms, 50), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "max_ms": round(max(ms), 2),
    }


def hammer(port: int, path: str, requests: int, concurrency: int) -> dict[str, float]:
    """`requests` GETs of `path` spread over `concurrency` keep-alive connections."""
    samples: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + DEADLINE_S

    def client(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = []
        for _ in range(n):
            if time.monotonic() > stop_at:
                break
            started = time.perf_counter()
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            mine.append(time.perf_counter() - started)
            assert resp.status == 200, body[:200]
        conn.close()
        with lock:
            samples.extend(mine)

    share = [
        requests // concurrency + (1 if i < requests % concurrency else 0)
        for i in range(concurrency)
    ]
    threads = [threading.Thread(target=client, args=(n,)) for n in share]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summary(samples, time.perf_counter() - started)


def in_process(root: Root, buckets: tuple[str, ...], requests: int) -> dict[str, float]:
    """The baseline: the same page read from the mirror in-process, no HTTP."""
    conn = mirror.connect(root.db_path)
    samples = []
    started = time.perf_counter()
    try:
        for _ in range(requests):
            t0 = time.perf_counter()
            feed.page_incidents(conn, buckets=buckets, limit=50)
            samples.append(time.perf_counter() - t0)
    finally:
        conn.close()
    return summary(samples, time.perf_counter() - started)


class Streams:
    """`count` SSE connections read by one selector thread; records when each bench event
    (`bench N` in its payload) reached each connection."""

    MARK = re.compile(rb'"reason":"bench (\d+)"')

    def __init__(self, port: int, count: int) -> None:
        self.sel = selectors.DefaultSelector()
        self.arrived: dict[int, list[float]] = {}
        self.socks = []
        for i in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            sock.setblocking(False)
            self.sel.register(sock, selectors.EVENT_READ, {"buf": b"", "seen": set(), "i": i})
            self.socks.append(sock)
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while self.running:
            for key, _ in self.sel.select(timeout=0.1):
                now = time.perf_counter()
                data = key.data
                try:
                    chunk = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                data["buf"] += chunk
                for m in self.MARK.finditer(data["buf"]):
                    n = int(m.group(1))
                    if n not in data["seen"]:
                        data["seen"].add(n)
                        self.arrived.setdefault(n, []).append(now)
                data["buf"] = data["buf"][-64:]

    def close(self) -> None:
        self.running = False
        self.thread.join(timeout=5)
        for sock in self.socks:
            sock.close()


def commit_event(root: Root, n: int) -> float:
    """An event committed as `incidents pause` commits one; returns when the commit returned."""
    path = mirror.root_events_path(root)
    payload = {"reason": f"bench {n}", "by": "bench"}
    eventlog.append_events(path.parent, None, [("build_paused", payload)], eventlog.unique_key("b"))
    with mirror.transaction(root) as conn:
        mirror.ingest_root(conn, root)
    return time.perf_counter()


def delivery(root: Root, port: int, clients: int, events: int, gap_s: float) -> dict[str, Any]:
    streams = Streams(port, clients)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:  # every client subscribed (the health endpoint counts)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/api/health")
            if json.loads(conn.getresponse().read())["stream_clients"] >= clients:
                break
            time.sleep(0.05)
        committed = {}
        for n in range(events):
            committed[n] = commit_event(root, n)
            time.sleep(gap_s)
        wait_until = time.monotonic() + 10
        while (
            time.monotonic() < wait_until
            and sum(map(len, streams.arrived.values())) < clients * events
        ):
            time.sleep(0.05)
    finally:
        streams.close()
    latencies = [(t - committed[n]) * 1000 for n, ts in streams.arrived.items() for t in ts]
    expected = clients * events
    return {
        "clients": clients,
        "events": events,
        "deliveries": len(latencies),
        "missing": expected - len(latencies),
        "p50_ms": round(percentile(latencies, 50), 2) if latencies else None,
        "p99_ms": round(percentile(latencies, 99), 2) if latencies else None,
        "max_ms": round(max(latencies), 2) if latencies else None,
    }


def recorded(path: Path) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
        return {"when": doc.get("when"), "list_p99_ms": doc["list"]["open, 1 client"]["p99_ms"],
                "event_p99_ms": doc["events"]["p99_ms"]}  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--events", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.05, help="seconds between committed events")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "serve.json"))
    args = ap.parse_args()
    before = recorded(Path(args.out))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_root(Path(tmp), args.count)
        mirror.reindex(root)
        proc, port = start_server(root)
        try:
            hammer(port, "/api/incidents", 50, 1)  # warm up
            results = {
                "open, 1 client": hammer(port, "/api/incidents", args.requests, 1),
                f"open, {args.concurrency} clients": hammer(
                    port, "/api/incidents", args.requests, args.concurrency
                ),
                "all 20k (?all=true), 1 client": hammer(
                    port, "/api/incidents?all=true", args.requests // 2, 1
                ),
                "baseline: the open page in-process, no HTTP": in_process(
                    root, ("inbox",), args.requests
                ),
            }
            events = delivery(root, port, args.clients, args.events, args.gap)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    list_p99 = results["open, 1 client"]["p99_ms"]
    met = list_p99 < LIST_P99_MS and events["p99_ms"] is not None
    met = met and events["p99_ms"] < EVENT_P99_MS and events["missing"] == 0
    doc = {
        "benchmark": "serve",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "load_average_1_5_15": {"before": load_before, "after": os.getloadavg()},
        "incidents": args.count,
        "list": results,
        "events": events,
        "target": f"list p99 < {LIST_P99_MS} ms (1 client); event delivery p99 < "
        f"{EVENT_P99_MS} ms to {args.clients} clients, none missing",
        "recorded_before": before,
        "met": met,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    for name, r in results.items():
        print(
            f"{name:46} {r['per_second']:8.1f}/s  p50 {r['p50_ms']:7.2f} ms  p99 {r['p99_ms']:7.2f} ms"
        )
    print(f"events to {events['clients']} clients: {events['deliveries']} deliveries, "
          f"{events['missing']} missing, p50 {events['p50_ms']} ms, p99 {events['p99_ms']} ms")  # fmt: skip
    print(f"targets: list p99 < {LIST_P99_MS} ms, events p99 < {EVENT_P99_MS} ms -> "
          f"{'met' if met else 'NOT met'}; recorded before: {before} -> {args.out}")  # fmt: skip
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
