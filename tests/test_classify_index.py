"""The generated word index of the rules (`incidents.rules_index`) and what it saves the
capture path: only the rule modules a text needs are imported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("edit", ["words", "pattern"])
def test_a_stale_index_is_noticed_and_every_table_read(tmp_path: Path, edit: str) -> None:
    """An index that no longer describes a table it sends classify to (rows edited, the
    index not regenerated) costs time, never a wrong verdict: a row's prefilter words or
    the length of its pattern (whose clauses the index holds) differ."""
    copy = tmp_path / "incidents"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    index = copy / "rules_index.py"
    text = index.read_text(encoding="utf-8")
    if edit == "words":
        assert '"timed timedout|' in text
        text = text.replace('"timed timedout|', '"timed|', 1)
    else:
        head, sep, rest = text.partition('"time limits", "network", 0, ')
        line, newline, tail = rest.partition("\n")
        sizes = line[line.rindex("(") + 1 :]
        first = sizes.split(",")[0]
        text = head + sep + line.replace(f"({first},", f"({int(first) + 1},") + newline + tail
    assert text != index.read_text(encoding="utf-8")
    index.write_text(text, encoding="utf-8")
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


def test_what_a_pattern_needs_is_in_every_line_it_matches() -> None:
    """The clauses read from each pattern's parse are sound: wherever a rule's pattern
    matches a line of the fixtures, the corpora or the rule examples, one of its clauses
    has all its runs in that line (else classify would skip a rule that matches)."""
    import re

    from incidents import classify, rules

    fixtures = SRC.parents[1] / "tests" / "fixtures"
    texts = [row[6] for table in rules.tables().values() for row in table]
    for folder in ("classify", "corpus", "corpus_blind"):
        texts += [p.read_text("utf-8") for p in (fixtures / folder).rglob("*.txt")]
    lines = sorted({line for text in texts for line in text.splitlines()})
    assert len(lines) > 5000
    rows = [row for table in rules.tables().values() for row in table]
    checked = 0
    for position, row in enumerate(rows):
        pattern = re.compile(row[5])
        for line in lines:
            if pattern.search(line):
                checked += 1
                low = line.encode("utf-8", "replace").lower()
                assert classify._may_match(position, low), (row[0], line)
    assert checked > 1000


def test_needs_are_read_from_the_parse() -> None:
    clauses = classify_index.clauses
    # lowercased; the parser factors out a common prefix (`re` of reset and refused)
    assert clauses(r"(?i)\bConnection (?:reset|refused)\b") == [
        frozenset({b"connection re", b"fused"}),
        frozenset({b"connection re", b"set"}),
    ]
    assert clauses(r"\bHTTP/\d\.\d 50[0-4]") == [frozenset({b"http/", b" 50"})]
    # what may be absent, or is not a plain run, needs nothing
    assert clauses(r"(?:optional )?x[a-z]+|y") == [frozenset()]
    assert clauses(r"a\wb(?=cd)") == [frozenset()]
    # too many alternatives: merged into what both need, never dropped
    many = "|".join(f"error {n:03d}" for n in range(40))
    merged = clauses(many)
    assert len(merged) <= classify_index.MAX_CLAUSES
    for n in range(40):
        text = f"error {n:03d}".encode()
        assert any(all(run in text for run in clause) for clause in merged), n
    assert not any(all(run in b"warning 007" for run in clause) for clause in merged)


def test_a_message_whose_words_gate_rules_that_cannot_match_compiles_none() -> None:
    """ "benchmark failure" holds `failure`, a prefilter word of two rules (network and
    python); neither can match without "connection" or "test" beside it: no rule module
    is imported, no pattern compiled (~1.6 ms of the capture benchmark)."""
    code, cls, *rest = probe(SRC, "benchmark failure")
    assert (code, cls) == ("UNKNOWN", "unknown")
    assert rest[-1] == ""
    code, cls, *rest = probe(SRC, "connection failure: connection reset by peer")
    assert cls == "transient"
    assert "incidents.rules.network" in rest[-1]


def test_a_text_with_a_letter_ignorecase_folds_to_ascii_skips_the_clauses() -> None:
    """(?i)reset matches "reſet" (ſ folds to s): the text lacks the run "reset", so the
    clauses are not consulted for it and the rule is searched as before."""
    from incidents.classify import classify

    assert classify("connection reſet by peer").rule == classify("connection reset by peer").rule


def test_the_word_table_keeps_exactly_the_prefilter_word_bytes() -> None:
    from incidents.classify import _WORDS

    kept = {c for c in range(256) if _WORDS[c] != 32}
    assert len(_WORDS) == 256
    assert kept == {*range(48, 58), *range(97, 123), 95}
    assert all(_WORDS[c] == c for c in kept)
