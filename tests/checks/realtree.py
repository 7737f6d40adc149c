"""A real third-party package (pluggy, from the venv) with injected errors of every
category, and each tool's own count of what it finds there when run directly.

Shared by tests/checks/test_real_tree.py and bench/check.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pluggy

BIN = Path(sys.executable).parent

INJECT = {
    "pluggy/_inject_import.py": "import os\nimport sys\n\nVALUE = sys.maxsize\n",
    "pluggy/_inject_format.py": "VALUES = [1,\n    2]\nD = {'a':1}\n",
    "pluggy/_inject_type.py": (
        "from pluggy._hooks import HookimplMarker\n\n\n"
        "def marker() -> int:\n    return HookimplMarker('x')\n"
    ),
    "pluggy/_inject_security.py": (
        "import subprocess\n\n\ndef run(cmd: str) -> int:\n"
        "    return subprocess.call(cmd, shell=True)\n"
    ),
    "tests/test_inject.py": (
        "import pluggy\n\n\ndef test_marker() -> None:\n"
        "    assert pluggy.HookimplMarker('x').project_name == 'x'\n\n\n"
        "def test_fails() -> None:\n    assert pluggy.__name__ == 'plugg'\n"
    ),
}
LINT_APPEND = ("pluggy/_hooks.py", "\n\ndef _injected() -> None:\n    unused = 1\n")
SYNTAX = ("pluggy/_inject_syntax.py", "def broken(:\n    pass\n")


def make_tree(dest: Path, *, syntax_error: bool = False) -> list[str]:
    """Copy pluggy's source into dest/pluggy, inject the errors; the .py files, relative."""
    shutil.copytree(
        Path(pluggy.__file__).parent, dest / "pluggy", ignore=shutil.ignore_patterns("__pycache__")
    )
    files = dict(INJECT)
    if syntax_error:
        files[SYNTAX[0]] = SYNTAX[1]
    for rel, text in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
    with open(dest / LINT_APPEND[0], "a") as fh:
        fh.write(LINT_APPEND[1])
    return sorted(str(p.relative_to(dest)) for p in dest.rglob("*.py"))


def _run(argv: list[str], cwd: Path) -> str:
    res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    return res.stdout + res.stderr


# Each tool run directly, in its plain human format, and counted from its own summary.
def direct_commands(files: list[str], mypy_cache: str) -> dict[str, list[str]]:
    tests = [f for f in files if Path(f).name.startswith("test_")]
    return {
        "ruff": [str(BIN / "ruff"), "check", "--no-cache", *files],
        "ruff-format": [str(BIN / "ruff"), "format", "--check", "--no-cache", *files],
        "mypy": [str(BIN / "mypy"), f"--cache-dir={mypy_cache}", *files],
        "pytest": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "--continue-on-collection-errors", *tests],  # fmt: skip
        "bandit": [str(BIN / "bandit"), "-q", "-f", "txt", *files],
    }


def count(tool: str, text: str) -> int:
    if tool == "ruff":
        m = re.search(r"Found (\d+) error", text)
        return int(m.group(1)) if m else 0
    if tool == "ruff-format":
        m = re.search(r"(\d+) files? would be reformatted", text)
        return int(m.group(1)) if m else 0
    if tool == "mypy":
        return len(re.findall(r"^\S+:\d+: error: ", text, re.M))
    if tool == "pytest":
        return sum(int(n) for n in re.findall(r"(\d+) (?:failed|errors?)\b", text))
    if tool == "bandit":
        return len(re.findall(r"^>> Issue: ", text, re.M))
    raise ValueError(tool)


def direct_counts(
    tree: Path, files: list[str], mypy_cache: str, tools: list[str]
) -> dict[str, int]:
    cmds = direct_commands(files, mypy_cache)
    return {tool: count(tool, _run(cmds[tool], tree)) for tool in tools}
