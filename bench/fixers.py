"""Benchmark: the product's overhead per real fixer call (snapshots before and after, the
sandbox or detection, the prompt copy, reading the CLI's output) against the same CLI run
bare on the same task, measured interleaved in the same run.

Each tier's real CLI (installed as the tests install it, tests/real_clis.py) fixes one file
against the tests' scripted model server on loopback: `run_fixer` with the default argv
under bubblewrap (when it works here) and with detection, and the same argv started
directly with subprocess in the same workdir and environment. Results:
bench/results/fixers.json (medians per tier and way, overhead = product - bare).

Run: .venv/bin/python bench/fixers.py [--runs 3] [--tiers aider,codex,claude]
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
sys.path.insert(0, str(REPO))

from incidents.fixers import TiersSettings, render_argv, run_fixer, sandbox  # noqa: E402
from incidents.fixers.runner import _pass_env  # noqa: E402
from incidents.proc import minimal_env  # noqa: E402
from tests.fixers.model_server import ModelServer  # noqa: E402
from tests.fixers.real import codex_argv  # noqa: E402
from tests.real_clis import install  # noqa: E402

BROKEN = "def add(a: int, b: int) -> int:\n    return a - b\n"
FIXED = "def add(a: int, b: int) -> int:\n    return a + b\n"


def environment(tier: str, server: ModelServer, base: Path) -> None:
    """Point the CLI at the server, as the tests do (this process's environment)."""
    home = base / "home"
    home.mkdir(exist_ok=True)
    os.environ.update(
        {
            "HOME": str(home),
            "OPENAI_API_KEY": "sk-bench",
            "ANTHROPIC_API_KEY": "sk-ant-bench",
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_MODEL": "claude-test",
            "OPENAI_API_BASE": f"{server.url}/v1",
            "AIDER_MODEL": "openai/test-model",
        }
    )
    meta = base / "meta.json"
    meta.write_text(
        json.dumps(
            {
                "openai/test-model": {
                    "max_input_tokens": 128000,
                    "max_output_tokens": 4096,
                    "mode": "chat",
                    "litellm_provider": "openai",
                    "input_cost_per_token": 3e-06,
                    "output_cost_per_token": 1.5e-05,
                }
            }
        )
    )
    os.environ["AIDER_MODEL_METADATA_FILE"] = str(meta)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tiers", default="codex,claude,aider")
    args = parser.parse_args()
    modes = ["none"] + (["bwrap"] if sandbox.probe().ok else [])
    results: dict[str, object] = {}
    with ModelServer() as server, tempfile.TemporaryDirectory(prefix="bench-fixers-") as tmp:
        base = Path(tmp)
        for tier in args.tiers.split(","):
            program, why = install(tier)
            if program is None:
                results[tier] = {"skipped": why}
                continue
            bin_dir = base / "bin"
            bin_dir.mkdir(exist_ok=True)
            if not (bin_dir / tier).exists():
                (bin_dir / tier).symlink_to(program)
            os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
            environment(tier, server, base)
            settings = TiersSettings().tier(tier)
            if tier == "codex":
                settings = settings.model_copy(update={"argv": codex_argv(server.url)})
            work = base / f"work-{tier}"
            work.mkdir()
            target = work / "app.py"
            prompt = base / "prompt_attempt_1.md"
            prompt.write_text("Fix add in app.py: it must return a + b.\n")
            server.fix_path, server.fix_content, server.workdir = "app.py", FIXED, str(work)
            samples: dict[str, list[float]] = {"bare": [], **{f"product ({m})": [] for m in modes}}
            ours: dict[str, list[float]] = {way: [] for way in samples if way != "bare"}
            ways = list(samples)
            for n in range(args.runs):
                for way in ways[n % len(ways) :] + ways[: n % len(ways)]:  # each goes first once
                    target.write_text(BROKEN)
                    t0 = time.monotonic()
                    if way == "bare":
                        env = minimal_env(_pass_env(settings.env))
                        for key, value in settings.env_defaults.items():
                            env.setdefault(key, value)
                        # a TMPDIR of its own, as the product gives it (codex's own sandbox
                        # helper is refused below a HOME under /tmp without one)
                        env["TMPDIR"] = tempfile.mkdtemp(dir=base)
                        argv = render_argv(
                            settings.argv,
                            prompt,
                            prompt.read_text(),
                            ["app.py"],
                            work,
                            contained=False,
                        )
                        stdin = prompt.read_bytes() if settings.stdin == "prompt" else None
                        subprocess.run(
                            argv,
                            cwd=work,
                            env=env,
                            input=stdin,
                            capture_output=True,
                            timeout=300,
                            stdin=None if stdin else subprocess.DEVNULL,
                        )
                        ok = target.read_text() == FIXED
                    else:
                        mode = way.split("(")[1].rstrip(")")
                        out = run_fixer(
                            tier,
                            settings,
                            prompt,
                            ["app.py"],
                            work,
                            containment=sandbox.Containment(mode),
                        )
                        ok = out.ok and out.changed_files == ["app.py"]
                        # measured inside the same call: the product's own share of it
                        ours[way].append(out.duration_s - out.program_s)
                    elapsed = time.monotonic() - t0
                    if not ok:
                        raise SystemExit(f"{tier} {way}: the fix did not happen")
                    samples[way].append(elapsed)
            bare = statistics.median(samples["bare"])
            results[tier] = {
                way: {
                    "median_s": round(statistics.median(s), 3),
                    "vs_bare_s": round(statistics.median(s) - bare, 3),
                    **({"own_s": round(statistics.median(ours[way]), 3)} if way in ours else {}),
                    "samples_s": [round(x, 3) for x in s],
                }
                for way, s in samples.items()
            }
    doc = {
        "what": "real fixer CLI call: run_fixer (snapshots, sandbox or detection, output read) "
        "vs the same argv started bare; medians of interleaved runs. vs_bare_s: the call's "
        "median minus the bare run's (noisy: the CLI's own time varies more than our share "
        "on a loaded machine); own_s: the call's time outside the program's run, measured "
        "within the same call (snapshots, guards, parsing; under bubblewrap the sandbox's "
        "own start is inside the program's time and shows in vs_bare_s only)",
        "runs": args.runs,
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "bwrap": sandbox.probe().label if sandbox.probe().ok else None,
        "results": results,
    }
    out_path = REPO / "bench" / "results" / "fixers.json"
    out_path.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
