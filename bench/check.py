"""Benchmark `incidents check` on a real tree (pluggy + injected errors of every category).

    .venv/bin/python bench/check.py [--reps 3]

Measures, in one run, wall time (median of --reps) of:
  - `incidents check` cold (empty cache, mypy's cache too) and warm (nothing changed:
    the report is replayed, see incidents.checks.replay), and warm through the full path
    (INCIDENTS_NO_REPLAY=1: typer, pydantic and the engine on a warm cache);
  - the same tools run directly, one after another (cold mypy cache), and their sum;
  - `pre-commit run --all-files` configured with the same tools as local hooks.
Writes bench/results/check.json and prints one line per measurement.
Targets: cold <= sum of the direct runs; warm <= 10% of cold.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.checks.realtree import BIN, count, direct_commands, make_tree  # noqa: E402

TOOLS = ["ruff", "ruff-format", "mypy", "pytest", "bandit"]
RESULTS = REPO / "bench" / "results"


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str, int]:
    start = time.perf_counter()
    res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - start, res.stdout + res.stderr, res.returncode


def precommit_config(files_mypy_cache: str) -> str:
    hooks = {
        "ruff": f"{BIN / 'ruff'} check --no-cache",
        "ruff-format": f"{BIN / 'ruff'} format --check --no-cache",
        "mypy": f"{BIN / 'mypy'} --cache-dir={files_mypy_cache}",
        "bandit": f"{BIN / 'bandit'} -q",
    }
    lines = ["repos:", "- repo: local", "  hooks:"]
    for name, entry in hooks.items():
        lines += [f"  - id: {name}", f"    name: {name}", f"    entry: {entry}",
                  "    language: system", "    types: [python]", "    require_serial: true"]  # fmt: skip
    lines += ["  - id: pytest", "    name: pytest",
              f"    entry: {sys.executable} -m pytest -q -p no:cacheprovider",
              "    language: system", "    files: ^tests/test_.*\\.py$", "    require_serial: true",
              "    pass_filenames: true"]  # fmt: skip
    return "\n".join(lines) + "\n"


def in_process_warm(tree: Path, files: list[str], cache: Path) -> float:
    """run_error_pipeline itself on the warm cache, without the process start-up."""
    from incidents.checks.engine import run_error_pipeline
    from incidents.checks.settings import ChecksSettings
    from incidents.models.pipeline import ErrorPipelineContext

    ctx = ErrorPipelineContext(run_id="bench", workstream_id="bench")
    settings = ChecksSettings(cache_dir=str(cache))
    start = time.perf_counter()
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tree, tools=TOOLS)
    seconds = time.perf_counter() - start
    assert all(r.cached for r in report.tool_runs), "the in-process warm run ran a tool"
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="incidents-bench-"))
    try:
        return run(work, args.reps)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(work: Path, reps: int) -> int:
    tree = work / "tree"
    files = make_tree(tree)
    env = {**os.environ, "PRE_COMMIT_HOME": str(work / "pre-commit-home")}
    samples: dict[str, list[float]] = {}
    exit_codes: dict[str, int] = {}
    findings: dict[str, int] = {}

    def add(name: str, seconds: float) -> None:
        samples.setdefault(name, []).append(seconds)

    for rep in range(reps):
        cache = work / f"cache-{rep}"
        config = work / f"incidents-{rep}.toml"
        config.write_text(f'[checks]\ncache_dir = "{cache}"\n')
        check = [sys.executable, "-m", "incidents", "check", "--json", "--config", str(config),
                 "--tools", ",".join(TOOLS), *files]  # fmt: skip
        for phase in ("cold", "warm"):
            seconds, out, rc = timed(check, tree)
            add(f"incidents check {phase}", seconds)
            exit_codes[f"incidents check {phase}"] = rc
            if phase == "cold":
                report = json.loads(out[: out.rindex("}") + 1])
                findings["incidents"] = report["summary"]["total_issues"]
                ours = {t: report["summary"]["issues_by_tool"].get(t, 0) for t in TOOLS}
        no_replay = {**os.environ, "INCIDENTS_NO_REPLAY": "1"}
        seconds, _, rc = timed(check, tree, no_replay)
        add("incidents check warm, full path", seconds)
        exit_codes["incidents check warm, full path"] = rc
        seconds, _, _ = timed([sys.executable, "-m", "incidents", "check", "--help"], tree)
        add("incidents startup floor (check --help)", seconds)
        add("engine warm, in-process", in_process_warm(tree, files, cache))
        total = 0.0
        direct = direct_commands(files, str(work / f"mypy-direct-{rep}"))
        theirs = {}
        for tool in TOOLS:
            seconds, out, _ = timed(direct[tool], tree)
            add(f"direct {tool}", seconds)
            theirs[tool] = count(tool, out)
            total += seconds
        add("direct sum (cold mypy)", total)
        pc_tree = work / f"pc-{rep}"
        shutil.copytree(tree, pc_tree)
        (pc_tree / ".pre-commit-config.yaml").write_text(
            precommit_config(str(work / f"pc-mypy-{rep}"))
        )
        for git in (["init", "-q"], ["add", "-A"]):
            subprocess.run(["git", *git], cwd=pc_tree, check=True, env=env)
        for phase in ("cold", "warm"):
            seconds, out, rc = timed([str(BIN / "pre-commit"), "run", "--all-files"], pc_tree, env)
            add(f"pre-commit run --all-files {phase}", seconds)
            exit_codes[f"pre-commit {phase}"] = rc
    med = {k: round(statistics.median(v), 4) for k, v in samples.items()}
    cold, warm, direct_sum = (med["incidents check cold"], med["incidents check warm"],
                              med["direct sum (cold mypy)"])  # fmt: skip
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},  # fmt: skip
        "tree": {"package": "pluggy (copied from the venv) + injected errors",
                 "python_files": len(files)},  # fmt: skip
        "tools": TOOLS,
        "reps": reps,
        "median_seconds": med,
        "samples": samples,
        "counts": {"incidents": ours, "direct": theirs, "equal": ours == theirs},
        "exit_codes": exit_codes,
        "targets": {
            "cold <= direct sum": cold <= direct_sum,
            "warm <= 10% of cold": warm <= 0.1 * cold,
            "cold / direct sum": round(cold / direct_sum, 3),
            "warm / cold": round(warm / cold, 3),
            "warm full path / cold": round(med["incidents check warm, full path"] / cold, 3),
        },
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "check.json").write_text(json.dumps(result, indent=2) + "\n")
    for name, value in med.items():
        print(f"{name:40s} {value * 1000:9.1f} ms  (median of {len(samples[name])})")
    for name, ok in result["targets"].items():
        print(f"target {name:34s} {ok}")
    print(f"per-tool counts equal to direct runs: {ours == theirs} {ours}")
    print(f"written: {RESULTS / 'check.json'}")
    return (
        0
        if result["targets"]["cold <= direct sum"] and result["targets"]["warm <= 10% of cold"]
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
