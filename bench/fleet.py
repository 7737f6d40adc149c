#!/usr/bin/env python3
"""bench/fleet.py: a fleet sharing one PostgreSQL mirror, against the same hosts each on its
own SQLite mirror, measured in the same run on a real server (tests/pg.py starts one).

- throughput: two hosts (two roots), each with one `incidents watch --until-idle` process,
  each draining --count bundles whose check passes at once (a verification command that
  succeeds): incidents per second from the start of both watchers to the end of both, with
  `[mirror] url` on the shared PostgreSQL, then with each host on its own SQLite file;
- `status --all-hosts` on 100,000 incidents across three hosts (10% open: 10,000 rows
  listed), in-process as a user runs it (catch-up, query, table; not the interpreter's
  start), median of --runs after one warm-up run (a process's first connect opens its
  pool); the baseline is the same command on one SQLite file holding the same rows.
Results: bench/results/fleet.json.

Run: .venv/bin/python bench/fleet.py [--count 40] [--rows 100000] [--runs 5]
Target: `status --all-hosts` on 100,000 incidents under 200 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import io
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
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from incidents import mirror  # noqa: E402
from incidents.cli import main as cli_main  # noqa: E402
from incidents.layout import Root  # noqa: E402
from incidents.mirror import target  # noqa: E402
from tests import pg  # noqa: E402

PY = sys.executable
CONFIG = """\
[checks]
tools = []
[watch]
poll_s = 0.5
stable_s = 0.2
"""


def capture_many(base: Path, env: dict[str, str], count: int) -> None:
    """`count` bundles whose only check is `python ok.py`, which passes."""
    work = base / "work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "ok.py").write_text("print('ok')\n")
    for i in range(count):
        args = ["capture", "--step", f"bench_{i}", "--message", f"bench step {i} failed",
                "--workdir", str(work), "--verify", f"{PY} ok.py", "--no-dedupe"]  # fmt: skip
        subprocess.run([PY, "-m", "incidents", *args], env=env, cwd=base, check=True,
                       capture_output=True)  # fmt: skip


def throughput(tmp: Path, url: str | None, count: int) -> float:
    """Incidents per second through two hosts' watchers (url None: SQLite per host)."""
    envs = []
    for name in ("a", "b"):
        base = tmp / name
        base.mkdir(parents=True)
        (base / "incidents.toml").write_text(CONFIG)
        env = {**os.environ, "INCIDENTS_ROOT": str(base / "reports"),
               "INCIDENTS_CONFIG": str(base / "incidents.toml"), target.ENV_HOST: name}  # fmt: skip
        env.pop(target.ENV_URL, None)
        if url:
            env[target.ENV_URL] = url
        capture_many(base, env, count)
        envs.append((base, env))
    started = time.perf_counter()
    procs = [
        subprocess.Popen([PY, "-m", "incidents", "watch", "--until-idle", "--workers", "1"],
                         env=env, cwd=base, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for base, env in envs
    ]  # fmt: skip
    for proc in procs:
        _out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise SystemExit(f"watch failed: {err.decode()[-400:]}")
    elapsed = time.perf_counter() - started
    for base, _env in envs:
        resolved = os.listdir(base / "reports" / "error_archive" / "resolved")
        assert len(resolved) == count, (base, len(resolved))
    return 2 * count / elapsed


def _row(i: int, bucket: str) -> mirror.IncidentRow:
    created = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:{i % 60:02d}+00:00"
    incident_id = f"incident_20260217_030000_step_{i:06d}"
    return mirror.IncidentRow(
        incident_id=incident_id, status="new" if bucket == "inbox" else bucket, state=None,
        step=f"step_{i % 50}", failure_class="transient", error_code=None,
        signature=f"transient | step_{i % 50} | timeout number <n>", run_id=f"run_{i % 500}",
        message=f"timeout number {i}", occurrences=1, created_at=created, updated_at=created,
        last_seen=created, bucket=bucket, location=f"x/{incident_id}",
    )  # fmt: skip


def fill(roots: list[Root], rows: int) -> None:
    """`rows` incidents over the roots (10% open); the open ones of the first root (where
    status runs and catches up from its folders) are real bundles, the rest rows only."""
    for n, root in enumerate(roots):
        mine = [i for i in range(rows) if i % len(roots) == n]
        batch = []
        for i in mine:
            bucket = "inbox" if i % 10 == 0 else ("resolved" if i % 3 else "escalated")
            row = _row(i, bucket)
            if n == 0 and bucket == "inbox":
                folder = root.inbox / row.incident_id
                folder.mkdir()
                doc = {"incident_id": row.incident_id, "status": "new",
                       "created_at": row.created_at, "updated_at": row.created_at,
                       "run_id": row.run_id, "step": row.step, "failure_class": "transient",
                       "message": row.message, "error_signature": row.signature}  # fmt: skip
                (folder / "incident.json").write_text(json.dumps(doc))
                (folder / "status.txt").write_text("new\n")
                row = mirror.IncidentRow(
                    **{**row.__dict__, "location": f"error_inbox/{row.incident_id}"}
                )
            batch.append(row)
        mirror.reindex(root)  # the folders' rows, and the mark of a derived mirror
        conn = mirror.connect(root.db_path)
        try:
            with mirror.write(conn):
                mirror.queries.insert_rows(conn, [r for r in batch if r.bucket != "inbox" or n])
        finally:
            conn.close()


def status_ms(root: Root, runs: int, *args: str) -> tuple[float, int]:
    """`incidents status ARGS` in-process on `root`, as bound (`status` binds the root from
    the config and the environment: the binding is put there)."""
    bound = target.target_of(root.db_path)
    os.environ.pop(target.ENV_URL, None)
    if bound.url:
        os.environ[target.ENV_URL] = bound.url
    os.environ[target.ENV_HOST] = bound.host
    samples, lines = [], 0
    for _ in range(runs + 1):  # the first: this process's first connect (pool, schema check)
        out = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = cli_main(["status", *args, "--root", str(root.path)])
        samples.append((time.perf_counter() - started) * 1000)
        assert code == 0
        lines = len(out.getvalue().splitlines())
    return statistics.median(samples[1:]), lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=40, help="bundles per host (throughput)")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "fleet.json"))
    args = ap.parse_args()
    server, why = pg.start_server(durable=True)  # fsync on: a fair match for SQLite's
    if server is None:
        raise SystemExit(f"no PostgreSQL server: {why}")
    results: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            results["throughput, PostgreSQL shared (incidents/s)"] = throughput(
                base / "pg", server.create_database(), args.count
            )
            results["throughput, SQLite per host (incidents/s)"] = throughput(
                base / "sqlite", None, args.count
            )
            url = server.create_database()
            roots = [Root(base / "status" / f"h{n}" / "reports").ensure() for n in range(3)]
            for n, root in enumerate(roots):
                target.bind(root.path, url, f"h{n}")
            fill(roots, args.rows)
            ms, lines = status_ms(roots[0], args.runs, "--all-hosts")
            results["status --all-hosts, PostgreSQL, 3 hosts (ms)"] = ms
            results["status, PostgreSQL, this host only (ms)"] = status_ms(roots[0], args.runs)[0]
            one = Root(base / "one" / "reports").ensure()
            fill([one], args.rows)  # the baseline: the same rows in one SQLite file
            results["status --all-hosts, SQLite, one file (ms)"] = status_ms(
                one, args.runs, "--all-hosts"
            )[0]
    finally:
        pg.stop_server(server)
    listed = lines - 1
    doc = {
        "benchmark": "fleet",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "bundles_per_host": args.count,
        "rows": args.rows,
        "listed": listed,
        "runs": args.runs,
        "results": {k: round(v, 2) for k, v in results.items()},
        "target": "status --all-hosts on 100,000 incidents across three hosts < 200 ms",
        "met": results["status --all-hosts, PostgreSQL, 3 hosts (ms)"] < 200,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    for name, value in doc["results"].items():  # type: ignore[attr-defined]
        print(f"{name:52} {value:9.2f}")
    print(f"status --all-hosts listed {listed} open incidents of {args.rows} -> {args.out}")
    return 0 if doc["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
