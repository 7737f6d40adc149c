"""The replay fast path of `incidents check` (incidents.checks.replay), with real tools
and real `incidents` processes: the fast path is only worth having without pydantic and
typer, and only safe if every input the engine used sends it back to the full path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from incidents.checks import replay
from incidents.cli import main
from incidents.errors import UsageError
from incidents.models.report import ErrorReport

HEAVY = ("typer", "pydantic", "jsonschema", "click")
# `incidents check ARGS` in a fresh interpreter that says, last on stderr, which heavy
# modules it loaded: none means the report was replayed (the full path loads pydantic).
CHECK = f"""
import sys
from incidents.cli import main
code = main(["check", *sys.argv[1:]])
sys.stderr.write("heavy: " + ",".join(m for m in {HEAVY!r} if m in sys.modules) + "\\n")
sys.exit(code)
"""


class Run(NamedTuple):
    code: int
    out: str
    err: str
    replayed: bool


def check(
    cwd: Path, *args: str, full: bool = False, env: dict[str, str | None] | None = None,
    python: str = sys.executable,
) -> Run:  # fmt: skip
    """`incidents check ARGS` in a fresh `python` in `cwd`, `env` set on top (None: unset)."""
    changes = {replay.OFF_ENV: "1" if full else None, **(env or {})}
    environ = {k: v for k, v in os.environ.items() if k not in changes}
    environ.update({k: v for k, v in changes.items() if v is not None})
    res = subprocess.run(
        [python, "-P", "-c", CHECK, *args],
        cwd=cwd, env=environ, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    err, _, heavy = res.stderr.rpartition("heavy: ")
    return Run(res.returncode, res.stdout, err, heavy.strip() == "")


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.fixture
def tree(tmp_path: Path, shared_cache: Path) -> Path:
    root = tmp_path / "tree"
    write(root, {"incidents.toml": f'[checks]\ncache_dir = "{shared_cache}"\n'})
    return root


FINDINGS = {
    "pkg/__init__.py": "",
    "pkg/core.py": "import os\n\n\ndef double(x: int) -> str:\n    return x * 2\n",
    "pkg/ugly.py": "values = [1,\n    2]\n",
    "tests/test_core.py": (
        "from pkg.core import double\n\n\ndef test_bad() -> None:\n    assert double(2) == 5\n"
    ),
}


def without_time(doc: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in doc.items() if k != "generated_at"}


def test_replay_prints_what_the_full_warm_path_prints(tree: Path) -> None:
    write(tree, FINDINGS)
    cold = check(tree)
    assert (cold.code, cold.replayed) == (1, False)
    full, fast = check(tree, full=True), check(tree)
    assert (full.replayed, fast.replayed) == (False, True)
    assert fast == full._replace(replayed=True)
    assert "4 issue(s): 2 hard, 2 style [mypy cached, pytest cached" in fast.out

    full, fast = check(tree, "--json", full=True), check(tree, "--json")
    assert (fast.replayed, fast.code, fast.err) == (True, full.code, full.err)
    doc = json.loads(fast.out)
    assert without_time(doc) == without_time(json.loads(full.out))
    assert fast.out.replace(doc["generated_at"], "") == full.out.replace(
        json.loads(full.out)["generated_at"], ""
    )
    report = ErrorReport.model_validate(doc)  # a real report, generated now
    assert all(r.cached and r.exit_code is None and r.duration_s == 0 for r in report.tool_runs)
    assert {r.tool for r in report.tool_runs} == {"ruff", "ruff-format", "mypy", "pytest"}


STEPS = [
    # (what changes, files written, expected exit code, text in the output or absent)
    ("a target", {"pkg/use.py": "import os\n" + "from lib.core import double\n\n\n"
                                "def quad(x: int) -> int:\n    return double(double(x))\n"},
     0, "F401"),
    ("a new file in a checked folder", {"pkg/extra.py": "def f() -> None:\n    unused = 1\n"},
     0, "F841"),
    ("incidents.toml: strict_mode", {"incidents.toml": "[policy]\nstrict_mode = true\n"}, 1, "F841"),
    ("the ruff config", {"pyproject.toml": '[tool.ruff.lint]\nselect = ["E4", "E7", "E9"]\n'},
     0, "-F841"),
    ("a conftest.py", {"tests/conftest.py": "import pytest\n\n\n@pytest.fixture(autouse=True)\n"
                                            "def _boom() -> None:\n    raise RuntimeError('boom')\n"},
     1, "pytest"),
    ("a module the targets import (not a target)",
     {"lib/core.py": "def double(x: int) -> str:\n    return str(x)\n"}, 1, "mypy"),
]  # fmt: skip


def test_every_input_the_engine_used_sends_it_back_to_the_tools(tree: Path) -> None:
    write(tree, {
        "lib/__init__.py": "",
        "lib/core.py": "def double(x: int) -> int:\n    return x * 2\n",
        "pkg/__init__.py": "",
        "pkg/use.py": "from lib.core import double\n\n\n"
                      "def quad(x: int) -> int:\n    return double(double(x))\n",
        "tests/conftest.py": "",
        "tests/test_use.py": "from pkg.use import quad\n\n\n"
                             "def test_quad() -> None:\n    assert quad(1) == 4\n",
        "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
    })  # fmt: skip
    args = ("pkg", "tests/test_use.py")
    first = check(tree, *args)
    assert (first.code, first.replayed) == (0, False), first
    assert check(tree, *args) == first._replace(
        out=first.out.split(" [")[0] + " [mypy cached, pytest cached, ruff cached, "
        "ruff-format cached]\n",
        replayed=True,
    )
    for what, files, code, text in STEPS:
        if what.startswith("incidents.toml"):
            files = {
                "incidents.toml": (tree / "incidents.toml").read_text() + files["incidents.toml"]
            }
        write(tree, files)
        rerun = check(tree, *args)
        assert (rerun.code, rerun.replayed) == (code, False), (what, rerun)
        assert (text[1:] not in rerun.out) if text.startswith("-") else (text in rerun.out), what
        again = check(tree, *args)
        assert (again.code, again.replayed) == (code, True), (what, again)
        assert again.out.splitlines()[:-1] == rerun.out.splitlines()[:-1], what


def test_the_fast_path_imports_no_heavy_module(tree: Path) -> None:
    write(tree, {"a.py": "import os\n"})
    assert check(tree, "a.py", "--tools", "ruff").replayed is False
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "incidents", "check", "a.py", "--tools", "ruff"],
        cwd=tree, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 0 and "ruff cached" in res.stdout
    imported = {
        line.split("|")[-1].strip()
        for line in res.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "incidents.checks.replay" in imported
    heavy = {m for m in imported if m.split(".")[0] in HEAVY or m == "incidents.checks.engine"}
    assert heavy == set()


def test_an_infra_failure_is_never_replayed(tree: Path, tmp_path: Path) -> None:
    """A tool that fails for a reason outside the recorded inputs must run again."""
    flag = tmp_path / "tool-is-back"
    tool = tmp_path / "flaky.py"
    tool.write_text(
        f"import os, sys\nif not os.path.exists({str(flag)!r}):\n"
        "    sys.stderr.write('service unavailable\\n')\n    sys.exit(3)\nprint('[]')\n"
    )
    with open(tree / "incidents.toml", "a") as fh:
        fh.write(
            f'[checks.profiles.flaky]\nargv = ["{{python}}", "{tool}", "{{files}}"]\n'
            'parser = "ruff-json"\nglobs = ["*.py"]\n'
        )
    write(tree, {"a.py": "x = 1\n"})
    for _ in range(2):
        down = check(tree, "--tools", "flaky")
        assert (down.code, down.replayed) == (2, False)
        assert (
            down.err
            == "infra failure: flaky: exited 3 (expected one of [0, 1]): service unavailable\n"
        )
    flag.touch()
    up = check(tree, "--tools", "flaky")
    assert (up.code, up.replayed, up.err) == (0, False, "")
    assert check(tree, "--tools", "flaky").replayed


def test_a_damaged_manifest_means_the_full_path(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tree, {"a.py": "import os\n"})
    monkeypatch.chdir(tree)
    assert main(["check", "--tools", "ruff"]) == 0
    first = capsys.readouterr().out.splitlines()
    where = replay.locate(replay.Request((), ("ruff",), False, None))
    assert where is not None and replay.try_replay(["--tools", "ruff"]) == 0
    replayed = capsys.readouterr().out.splitlines()
    assert replayed[:-1] == first[:-1] and replayed[-1].endswith(" [ruff cached]")
    where.cache.put_doc(where.key, {"format": replay.FORMAT, "facts": 7, "report": {}})
    assert replay.try_replay(["--tools", "ruff"]) is None
    assert capsys.readouterr() == ("", "")
    assert main(["check", "--tools", "ruff"]) == 0  # the full path, which mends the manifest
    assert "F401" in capsys.readouterr().out
    assert replay.try_replay(["--tools", "ruff"]) == 0


def test_arguments_it_does_not_know_go_to_the_full_path() -> None:
    assert replay.parse_args(["a.py", "--json", "--tools", "ruff, mypy", "--strict",
                              "--config=x.toml", "b"]) == replay.Request(
        ("a.py", "b"), ("ruff", "mypy"), True, "x.toml", True
    )  # fmt: skip
    assert replay.parse_args(["--", "--json"]) == replay.Request(("--json",), None, False, None)
    for args in (["--help"], ["--tools"], ["--json", "--json"], ["--json=1"], ["-"],
                 ["--tools", "--json"], ["--fix"], ["-j"]):  # fmt: skip
        assert replay.parse_args(args) is None, args
    with pytest.raises(UsageError):
        replay.parse_args(["--tools", " , "])
    assert replay.try_replay(["--tools", ","]) is None
    assert replay.try_replay(["--config", "/nonexistent/incidents.toml"]) is None


def test_a_targets_tests_are_run_and_editing_one_is_never_replayed(tree: Path) -> None:
    """`incidents check calc.py` runs the tests that import calc; the report is replayed
    only while those test files (and which files they are) stay as they were."""
    test_add = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"
    write(tree, {"calc.py": "def add(a: int, b: int) -> int:\n    return a + b\n",
                 "tests/test_sums.py": test_add})  # fmt: skip
    args = ("calc.py", "--tools", "pytest", "--json")
    first = check(tree, *args)
    assert (first.code, first.replayed) == (0, False), first
    [run] = ErrorReport.model_validate_json(first.out).tool_runs
    assert run.tests == ["tests/test_sums.py"]
    assert check(tree, *args).replayed
    write(tree, {"tests/test_sums.py": test_add.replace("== 3", "== 4")})
    edited = check(tree, *args)
    assert (edited.code, edited.replayed) == (1, False)
    assert "tests/test_sums.py" in edited.out and "test-failure" in edited.out
    write(tree, {"tests/test_sums.py": test_add, "tests/test_more.py": "import calc\n"})
    added = check(tree, *args)
    assert (added.code, added.replayed) == (1, False)
    [run] = ErrorReport.model_validate_json(added.out).tool_runs
    assert run.tests == ["tests/test_more.py", "tests/test_sums.py"]
    assert "no-tests" in added.out
    assert check(tree, *args).replayed
