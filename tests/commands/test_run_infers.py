"""`incidents run -- CMD` with no flags: what failed is read from the command's output.

Real ruff, pytest and Python processes on small real projects: the command is kept as
the incident's reproduction; the targets and the failed tests come from the output,
each with where it came from; the signature is made of what failed, so two failures of
one command are two incidents and the same failure again one more occurrence; a repeat
of an escalated incident is an occurrence of it, where it lies.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from incidents.layout import Root
from tests.helpers import TIERS_OFF, Cli, use_config

GEN = "import os\n\n\ndef build(rows):\n    unused = len(rows)\n    return os.sep\n"
PRICING = "def total(prices, discount):\n    return sum(prices) * (1 - discount / {div})\n"
STOCK = (
    "def reserve(stock, item, n):\n"
    "    if stock[item] < n:\n"
    "        raise ValueError(f'not enough {{item}}')\n"
    "    stock[item] -= n\n"
    "    return stock[item]{bug}\n"
)
TEST_PRICING = (
    "from shop.pricing import total\n\n\ndef test_total():\n    assert total([10, 20], 10) == 27\n"
)
TEST_STOCK = (
    "from shop.stock import reserve\n\n\ndef test_reserve():\n"
    "    assert reserve({'a': 3}, 'a', 2) == 1\n"
)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a shop package and its tests; the tools of this interpreter's
    environment (ruff, pytest) on PATH, as a user's shell has them."""
    path = tmp_path / "ws"
    (path / "shop").mkdir(parents=True)
    (path / "tests").mkdir()
    (path / "shop" / "__init__.py").write_text("")
    (path / "shop" / "pricing.py").write_text(PRICING.format(div=100))
    (path / "shop" / "stock.py").write_text(STOCK.format(bug=""))
    (path / "tests" / "test_pricing.py").write_text(TEST_PRICING)
    (path / "tests" / "test_stock.py").write_text(TEST_STOCK)
    (path / "gen.py").write_text(GEN)
    monkeypatch.chdir(path)
    bindir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", bindir + os.pathsep + os.environ.get("PATH", ""))
    use_config(tmp_path, monkeypatch, TIERS_OFF)
    return path


def bundles(root: Root) -> list[dict[str, Any]]:
    found = []
    for bucket in ("inbox", "escalated", "resolved"):
        folder = root.bucket(bucket)
        if folder.is_dir():
            for p in sorted(folder.iterdir()):
                if not p.name.startswith("."):
                    found.append(json.loads((p / "incident.json").read_text()))
    return found


def run(cli: Cli, *args: str) -> str:
    """`incidents run ARGS` in-process: the command must fail; returns the incident id."""
    r = cli("run", *args)
    assert r.code != 0, r.err
    return r.err.rsplit("; incident ", 1)[1].split()[0]


def test_a_lint_failure_names_its_file_and_is_its_own_reproduction(
    cli: Cli, root: Root, ws: Path
) -> None:
    """`run --step lint_gen -- ruff check gen.py`, no flags: gen.py (named by ruff) is the
    target, inferred from ruff's output, and the command is the reproduction."""
    incident_id = run(cli, "--step", "lint_gen", "--", "ruff", "check", "gen.py")
    [doc] = bundles(root)
    assert doc["incident_id"] == incident_id
    assert doc["python_files"] == ["gen.py"]
    assert doc["verify"] == ["ruff check gen.py"]
    assert doc["reproduction"] == {"command": "ruff check gen.py", "kept": True, "why": None}
    [target] = doc["inferred"]["targets"]
    assert (target["path"], target["kind"], target["from"]) == ("gen.py", "python", "ruff")
    assert "gen.py:5:5" in target["evidence"]
    assert doc["target_digests"].keys() == {"gen.py"}
    assert "F841 gen.py" in doc["error_signature"] and "exited with" not in doc["error_signature"]
    shown = cli("explain", incident_id).out
    assert "gen.py inferred from ruff output, log line" in shown
    assert "reproduction:  ruff check gen.py (every check runs it again)" in shown
    # a given target is used as given: nothing inferred (the positive control)
    given = run(
        cli,
        "--step",
        "lint_gen",
        "--python-file",
        "shop/stock.py",
        "--no-dedupe",
        "--",
        "ruff",
        "check",
        "gen.py",
    )
    doc = next(d for d in bundles(root) if d["incident_id"] == given)
    assert doc["python_files"] == ["shop/stock.py"] and "inferred" not in doc
    assert "shop/stock.py (given)" in cli("explain", given).out


def test_a_test_failure_names_the_code_and_the_failed_tests(cli: Cli, root: Root, ws: Path) -> None:
    (ws / "shop" / "pricing.py").write_text(PRICING.format(div='"100"'))  # a TypeError
    incident_id = run(cli, "--step", "unit_tests", "--", "python", "-m", "pytest", "-q")
    [doc] = bundles(root)
    assert doc["incident_id"] == incident_id
    # the code the test called, not the test that saw it fail
    assert doc["python_files"] == ["shop/pricing.py"]
    assert doc["inferred"]["tests"] == ["tests/test_pricing.py::test_total"]
    assert doc["verify"] == ["python -m pytest -q"]
    sig = doc["error_signature"]
    assert "tests/test_pricing.py::test_total TypeError" in sig, sig


def test_a_wrong_result_seen_by_the_test_names_the_code_the_test_imports(
    cli: Cli, root: Root, ws: Path
) -> None:
    """The assertion fails in the test, so no frame names the code; the failing test's
    own imports from the workdir do (the code it calls), never the test itself."""
    nested = ws / "shop" / "tax"
    nested.mkdir()
    (nested / "__init__.py").write_text("")
    (nested / "rates.py").write_text("def vat(net):\n    return net * 0.02\n")  # 0.2
    (ws / "tests" / "test_rates.py").write_text(
        "import os\n\nfrom shop.tax import rates\n\n\nclass TestVat:\n"
        "    def test_vat(self):\n        assert rates.vat(100) == 20\n"
    )
    incident_id = run(
        cli, "--step", "unit_tests", "--", "python", "-m", "pytest", "-q", "tests/test_rates.py"
    )
    [doc] = bundles(root)
    assert doc["python_files"] == ["shop/tax/rates.py"]
    [entry] = doc["inferred"]["targets"]
    assert entry["from"] == "imports of tests/test_rates.py" and "shop.tax" in entry["evidence"]
    assert doc["inferred"]["tests"] == ["tests/test_rates.py::TestVat::test_vat"]
    said = cli("explain", incident_id).out
    assert "shop/tax/rates.py inferred from imports of tests/test_rates.py: " in said, said


def test_a_test_file_is_a_target_only_when_the_failure_is_in_it(
    cli: Cli, root: Root, ws: Path
) -> None:
    (ws / "tests" / "test_stock.py").write_text("from shop.stok import reserve\n")
    run(cli, "--step", "unit_tests", "--", "python", "-m", "pytest", "-q", "tests/test_stock.py")
    [doc] = bundles(root)
    assert doc["python_files"] == ["tests/test_stock.py"]


def test_two_failures_of_one_command_are_two_incidents_the_same_again_one_more_occurrence(
    cli: Cli, root: Root, ws: Path
) -> None:
    command = ("--step", "unit_tests", "--", "python", "-m", "pytest", "-q")
    (ws / "shop" / "pricing.py").write_text(PRICING.format(div='"100"'))
    pricing = run(cli, *command)
    assert run(cli, *command) == pricing  # the same failure again
    (ws / "shop" / "pricing.py").write_text(PRICING.format(div=100))  # pricing fixed
    (ws / "shop" / "stock.py").write_text(STOCK.format(bug=" + 1"))  # a stock bug
    stock = run(cli, *command)
    assert stock != pricing
    docs = {d["incident_id"]: d for d in bundles(root)}
    assert docs.keys() == {pricing, stock}
    assert docs[pricing]["occurrences"] == 2 and docs[stock]["occurrences"] == 1
    assert docs[stock]["inferred"]["tests"] == ["tests/test_stock.py::test_reserve"]


def test_a_repeat_of_an_escalated_failure_is_an_occurrence_of_it(
    cli: Cli, root: Root, ws: Path
) -> None:
    """The first failure escalates (no fixer tier); the same failure twice more adds two
    occurrences to it where it lies in the escalated archive: one incident, no other
    escalation, and the mirror counts one escalated group."""
    (ws / "shop" / "pricing.py").write_text(PRICING.format(div='"100"'))
    command = ("--step", "unit_tests", "--", "python", "-m", "pytest", "-q")
    first = run(cli, *command)
    assert cli("drive", first).code == 0
    assert root.locate(first)[0] == "escalated"
    before = (root.bucket("escalated") / first / "log_tail.txt").read_bytes()
    assert run(cli, *command) == first
    assert run(cli, *command) == first
    [doc] = bundles(root)
    assert (doc["incident_id"], doc["status"], doc["occurrences"]) == (first, "escalated", 3)
    folder = root.bucket("escalated") / first
    log = (folder / "log_tail.txt").read_bytes()
    assert log.startswith(before) and b"--- occurrence 3 at " in log
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    repeats = [e for e in events if e.get("event") == "occurrence"]
    assert [e["payload"] for e in repeats] == [
        {"occurrences": 2, "escalated": True},
        {"occurrences": 3, "escalated": True},
    ]
    assert cli("status").code == 0  # the mirror catches up
    import sqlite3

    with sqlite3.connect(root.db_path) as conn:
        escalated = conn.execute("SELECT count(DISTINCT signature) FROM escalations").fetchone()
        row = conn.execute(
            "SELECT bucket, occurrences FROM incidents WHERE incident_id = ?", (first,)
        ).fetchone()
    assert escalated == (1,) and row == ("escalated", 3)
    assert not (root.state / "paused.json").exists()


def test_the_reproduction_is_the_default_and_says_why_when_it_is_not_kept(
    cli: Cli, root: Root, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "fail.py").write_text("raise SystemExit(3)\n")
    kept = run(cli, "--step", "s", "--", "python", "fail.py")
    refused = run(cli, "--step", "s2", "--", "sh", "-c", "exit 4")
    opted_out = run(cli, "--step", "s3", "--no-reproduce", "--", "python", "fail.py")
    use_config(tmp_path, monkeypatch, TIERS_OFF + "[capture]\nreproduce = false\n")
    by_config = run(cli, "--step", "s4", "--", "python", "fail.py")
    docs = {d["incident_id"]: d for d in bundles(root)}
    assert docs[kept]["verify"] == ["python fail.py"] and docs[kept]["reproduction"]["kept"]
    assert docs[refused]["verify"] == [] and docs[refused]["reproduction"] == {
        "command": "sh -c 'exit 4'",
        "kept": False,
        "why": "[verification] allowlist: program 'sh' is not on the allowlist",
    }
    assert docs[opted_out]["reproduction"]["why"] == "--no-reproduce"
    assert docs[by_config]["reproduction"]["why"] == "[capture] reproduce = false"
    assert docs[opted_out]["verify"] == docs[by_config]["verify"] == []
    shown = cli("explain", refused).out
    assert "reproduction:  none: sh -c 'exit 4' not kept: [verification] allowlist" in shown


def test_a_capture_with_a_log_reads_it_the_same_way(cli: Cli, root: Root, ws: Path) -> None:
    """`capture --log-file` of ruff's real output, no target given: gen.py is inferred and
    the signature is ruff's finding; a second log with another finding is another group."""
    import subprocess

    log = ws.parent / "lint.log"
    out = subprocess.run(["ruff", "check", "gen.py"], capture_output=True, text=True)
    log.write_text(out.stdout + out.stderr)
    args = ("capture", "--step", "lint", "--message", "lint failed", "--log-file", str(log))
    first = cli(*args).out.strip()
    (ws / "gen.py").write_text(GEN.replace("unused = len(rows)\n", "") + "import sys\n")
    out = subprocess.run(["ruff", "check", "gen.py"], capture_output=True, text=True)
    log.write_text(out.stdout + out.stderr)
    second = cli(*args).out.strip()
    docs = {d["incident_id"]: d for d in bundles(root)}
    assert docs.keys() == {first, second}
    assert docs[first]["python_files"] == docs[second]["python_files"] == ["gen.py"]
    assert docs[first]["signature_inputs"]["failure"] == "F841 gen.py"
    assert "F401 gen.py" in docs[second]["signature_inputs"]["failure"]


def test_an_exception_named_in_lower_case_is_what_failed_whatever_the_command_line(
    cli: Cli, root: Root, ws: Path
) -> None:
    """`socket.gaierror` ends its traceback like any exception: the host the command was
    given is not what failed, so two hosts that did not resolve are one group; another
    exception of the same command is another group."""
    (ws / "mirror.py").write_text(
        "import socket, sys\n\n\ndef lookup(host):\n    if host == 'refused':\n"
        "        raise ConnectionRefusedError(111, 'Connection refused')\n"
        "    socket.getaddrinfo(host, 443)\n\n\nlookup(sys.argv[1])\n"
    )
    step = ("--step", "mirror", "--", "python", "mirror.py")
    first = run(cli, *step, "pkgs.nowhere.invalid")
    assert run(cli, *step, "git.nowhere.invalid") == first
    refused = run(cli, *step, "refused")  # the control: another failure, another group
    docs = {d["incident_id"]: d for d in bundles(root)}
    assert docs.keys() == {first, refused}
    assert docs[first]["occurrences"] == 2
    failure = docs[first]["signature_inputs"]["failure"]  # what failed, not the command
    assert "exited with" not in failure and "mirror.py" not in failure, failure
    assert "nowhere" not in docs[first]["error_signature"]
    assert docs[first]["python_files"] == docs[refused]["python_files"] == ["mirror.py"]
