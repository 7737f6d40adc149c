#!/usr/bin/env python3
"""Score the classifier on a blind set in the corpus format (issue 16).

    .venv/bin/python scripts/blind_score.py tests/fixtures/corpus_blind3

Prints code-and-class accuracy overall, by expected class and by ecosystem, then the misses
of the files not held out (HOLDOUT.txt beside the files, one relative path a line, names
those that are scored but not shown while rules are being fixed; --show-holdout shows them).
The files are the folder's `<tool>/<name>.txt`, and those its README.md's table lists that
were folded into the corpus since (looked up in `../corpus/`), so the score stays
reproducible after the fold.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src"))

from incidents.classify import classify

# the ecosystems issue 16 names, by the tool folder a blind file sits in
ECOSYSTEMS = {
    "Kubernetes": ("kubectl", "kube-scheduler"),
    "Redis clients": ("redis-py", "redis-rb", "stackexchange-redis", "ioredis"),
    "PostgreSQL": ("psql", "postgresql", "pgjdbc", "node-postgres"),
    "MySQL": ("mysql",),
    "SQLite": ("sqlite", "sqlalchemy"),
    "Node": ("node", "npm", "jest"),
    "TypeScript": ("tsc", "webpack"),
    "Go": ("go",),
    "Rust": ("cargo",),
    "JVM": ("java", "maven", "gradle"),
    "GPUs": ("pytorch", "nvidia-smi", "torch-lua"),
    ".NET": ("dotnet", "mstest"),
    "PowerShell": ("powershell",),
    "shells": ("bash",),
    "Docker": ("docker",),
    "Terraform": ("terraform",),
    "git/ssh": ("git",),
    "AWS": ("boto3", "cloud-custodian", "miasma"),
    "GCP": ("pulumi",),
    "Azure": ("azure-identity", "az", "farmer"),
    "GitHub API/CI": ("github-actions", "codeql-action", "curl"),
    "LLM APIs": ("litellm", "qanything", "claude-code", "gemini-cli", "google-generative-ai"),
}
ECOSYSTEM_OF = {tool: name for name, tools in ECOSYSTEMS.items() for tool in tools}


def load(path: Path) -> tuple[dict[str, str], str]:
    header, sep, body = path.read_text(encoding="utf-8").partition("\n---\n")
    if not sep:
        raise SystemExit(f"{path}: no --- line")
    meta = {}
    for line in header.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            raise SystemExit(f"{path}: header line without a colon: {line!r}")
        meta[key.strip()] = value.strip()
    return meta, body


def ratio(hits: int, total: int) -> str:
    return f"{hits}/{total} = {100 * hits / total:.1f}%" if total else "0/0"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--show-holdout", action="store_true")
    args = parser.parse_args(argv)
    holdout_file = args.folder / "HOLDOUT.txt"
    holdout = set(holdout_file.read_text().split()) if holdout_file.exists() else set()
    by_class: dict[str, list[bool]] = defaultdict(list)
    by_eco: dict[str, list[bool]] = defaultdict(list)
    split: dict[str, list[bool]] = defaultdict(list)
    misses: list[str] = []
    names = {str(p.relative_to(args.folder)) for p in args.folder.glob("*/*.txt")}
    readme = args.folder / "README.md"
    if readme.exists():
        names |= set(re.findall(r"(?m)^\| `([\w.+-]+/[\w.+-]+\.txt)` \|", readme.read_text()))
    for name in sorted(names):
        path = args.folder / name
        if not path.exists():
            path = args.folder.parent / "corpus" / name
        meta, body = load(path)
        code, _, failure_class = meta["expected"].partition(" ")
        exit_code = int(meta["exit_code"]) if "exit_code" in meta else None
        result = classify(meta.get("message", ""), body, exit_code)
        got = (str(result.error_code), str(result.failure_class))
        ok = got == (code, failure_class)
        held = name in holdout
        by_class[failure_class].append(ok)
        by_eco[ECOSYSTEM_OF.get(meta["tool"], "other")].append(ok)
        split["holdout" if held else "dev"].append(ok)
        if not ok and (args.show_holdout or not held):
            misses.append(f"{name}: expected {code} {failure_class}, got {got[0]} {got[1]}")
    every = [ok for oks in by_class.values() for ok in oks]
    print(f"all      {ratio(sum(every), len(every))}")
    for label, oks in sorted(split.items()):
        print(f"{label:<8} {ratio(sum(oks), len(oks))}")
    for failure_class, oks in sorted(by_class.items()):
        print(f"  {failure_class:<12} {ratio(sum(oks), len(oks))}")
    print("by ecosystem:")
    for eco, oks in sorted(by_eco.items()):
        print(f"  {eco:<14} {ratio(sum(oks), len(oks))}")
    print(f"misses ({'all' if args.show_holdout else 'not held out'}):")
    for miss in misses:
        print(f"  {miss}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
