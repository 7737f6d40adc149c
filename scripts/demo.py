#!/usr/bin/env python3
"""`make demo`: drop example incidents into a fresh reports root and show them.

Everything lands under the folder given by --dir (default demo-reports/<time>): the
reports root in `reports/` and the example scripts the incidents point at in `workspace/`.
Nothing outside that folder is touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO_CONFIG = """\
# The demo's config: the four cases of `make demo` close in seconds.
[policy]
retry_base_s = 0.5
retry_max_s = 2.0

[watch]
stable_s = 0.5
"""
EXAMPLES = REPO / "examples" / "workspace"


def sh(*argv: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    print(f"$ {' '.join(argv)}", flush=True)
    p = subprocess.run(argv, env=env, text=True, capture_output=True)
    if p.stdout:
        print(p.stdout, end="", flush=True)
    if p.stderr:
        print(p.stderr, end="", file=sys.stderr, flush=True)
    if check and p.returncode != 0:
        raise SystemExit(f"demo: {argv[0]} exited with {p.returncode}")
    return p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", default=f"demo-reports/{time.strftime('%Y%m%d-%H%M%S')}")
    args = ap.parse_args()
    base = Path(args.dir).resolve()
    if base.exists() and any(base.iterdir()):
        raise SystemExit(f"demo: {base} is not empty; give a fresh --dir")
    root, workspace = base / "reports", base / "workspace"
    shutil.copytree(EXAMPLES, workspace)
    config = base / "incidents.toml"  # short retry delays so the transient case is quick
    config.write_text(DEMO_CONFIG)
    env = {**os.environ, "INCIDENTS_ROOT": str(root), "INCIDENTS_CONFIG": str(config)}
    py = sys.executable
    capture = [py, str(REPO / "scripts" / "error_capture.py")]
    incidents = [py, "-m", "incidents"]
    print(f"demo: a fresh reports root at {root}\n")

    sh(*capture, "--step", "lint_report_builder", "--message",
       "ruff check report_builder.py: Found 2 errors (unused import, formatting)",
       "--python-file", "report_builder.py", "--workdir", str(workspace), env=env)  # fmt: skip
    sh(*capture, "--step", "type_check_totals", "--message",
       "totals.py:3: error: Incompatible return value type (got \"str\", expected \"int\")",
       "--python-file", "totals.py", "--workdir", str(workspace), env=env)  # fmt: skip
    sh(*incidents, "run", "--step", "amazon_download", "--timeout", "1",
       "--verify", f"{py} flaky_download.py", "--workdir", str(workspace),
       "--", py, "-c", "import time; time.sleep(5)", env=env, check=False)  # fmt: skip
    sh(*capture, "--step", "deploy_receipts", "--message",
       "deploy.ps1 failed; its checks need pwsh (PSScriptAnalyzer)",
       "--powershell-file", "deploy.ps1", "--workdir", str(workspace), env=env)  # fmt: skip

    if shutil.which("incidents", path=str(Path(py).parent)) and _has_watch(incidents, env):
        sh(*incidents, "watch", "--until-idle", env=env)
    print()
    sh(*incidents, "status", "--all", env=env)
    print("\nWhat happened: report_builder.py was fixed by the mechanical autofix (resolved);")
    print("totals.py's type error has no safe fix and no AI program is installed here: it")
    print("waits for an agent skill (`incidents next`), and goes to a person after [handoff]")
    print("wait_s (24 h); the download timed out once and passed on its retry with nothing")
    print("changed (resolved as recovered: no fix claimed, nobody paged); deploy.ps1 could not")
    print("be checked because pwsh is missing (escalated, infra_failure).")
    print(f"\nClosed bundles: {root}/error_archive/resolved and .../escalated; each escalated")
    print("folder is a self-contained quarantine bundle (metadata.json, error_reports/, plan/,")
    print(
        "original_scripts/ and final_scripts/). `incidents review` renders them as one page. Try:"
    )
    print(f"  INCIDENTS_ROOT={root} {py} -m incidents status <ID>")
    return 0


def _has_watch(incidents: list[str], env: dict[str, str]) -> bool:
    p = subprocess.run([*incidents, "--help"], env=env, text=True, capture_output=True)
    return " watch " in p.stdout


if __name__ == "__main__":
    sys.exit(main())
