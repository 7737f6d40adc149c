"""The generated word index of the rules (`incidents.rules_index`) and what it saves the
capture path: only the rule modules a text needs are imported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import incidents
from incidents import classify_index

SRC = Path(incidents.__file__).parent


def test_the_index_is_what_the_tables_render() -> None:
    with open(classify_index.PATH, encoding="utf-8") as fh:
        on_disk = fh.read()
    assert (
        on_disk == classify_index.render()
    ), "src/incidents/rules_index.py is stale: run `python -m incidents.classify_index`"


def test_write_leaves_a_current_index_alone_and_rewrites_a_stale_one(tmp_path: Path) -> None:
    path = str(tmp_path / "rules_index.py")
    assert classify_index.write(path) is True
    assert classify_index.write(path) is False
    assert Path(path).read_text(encoding="utf-8") == classify_index.render()


PROBE = """
import sys
from incidents.classify import classify
c = classify(sys.argv[1], sys.argv[2])
rules = sorted(m for m in sys.modules if m.startswith("incidents.rules."))
print(c.error_code.value, c.failure_class.value, c.rule, ",".join(rules), sep="|")
"""


def probe(src: Path, message: str, log: str = "") -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(src.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.run(
        [sys.executable, "-c", PROBE, message, log],
        capture_output=True,
        text=True,
        env=env,
        cwd=src.parent,  # not the test's cwd: `-c` imports from there first
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.rstrip("\n").split("|")


def test_a_message_imports_only_the_rule_modules_its_words_gate() -> None:
    code, cls, *rest = probe(SRC, "psycopg2.OperationalError: could not connect: timed out")
    assert (code, cls) == ("TIMEOUT", "transient")
    modules = rest[-1].split(",")
    assert "incidents.rules.network" in modules
    assert "incidents.rules.microsoft" not in modules
    assert probe(SRC, "benchmark repeat")[-1] == ""  # nothing gated: no module at all


def test_a_stale_index_is_noticed_and_every_table_read(tmp_path: Path) -> None:
    """An index that no longer describes a table it sends classify to (rows edited, the
    index not regenerated) costs time, never a wrong verdict."""
    copy = tmp_path / "incidents"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    index = copy / "rules_index.py"
    text = index.read_text(encoding="utf-8")
    assert '"timed timedout",' in text
    index.write_text(text.replace('"timed timedout",', '"timed",', 1), encoding="utf-8")
    message = "the upload timed out after 30 s"
    fresh, stale = probe(SRC, message), probe(copy, message)
    assert stale[:2] == fresh[:2] == ["TIMEOUT", "transient"]
    assert len(stale[-1].split(",")) > len(fresh[-1].split(","))  # it read every table


def test_a_plain_capture_compiles_none_of_redacts_large_patterns(tmp_path: Path) -> None:
    """A short message and context keys like `cwd` are checked by substring tests: the
    ~50-trigger alternation and the secret-key pattern (~1 ms to compile) are not built."""
    code = (
        "import re, sys; sys.argv[0] = 'x'; from incidents.cli import main;"
        "main(['capture', '--step', 's', '--message', 'benchmark failure', '--no-dedupe']);"
        "print('\\n'.join(ascii(k[1]) for k in re._cache))"
    )
    env = {**os.environ, "INCIDENTS_ROOT": str(tmp_path / "reports")}
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert p.returncode == 0, p.stderr
    patterns = p.stdout.splitlines()[1:]
    assert not [s for s in patterns if "github_pat_" in s or "passphrase" in s]
