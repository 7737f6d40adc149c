"""What a failure's output names (`incidents.infer`) and what a signature is made of
(`incidents.failure_basis`), on real outputs of each tool (tests/fixtures/infer, see its
README) and on the real-world corpus (tests/fixtures/corpus*): no file outside the
workdir is ever inferred."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from incidents import infer
from incidents.failure_basis import basis, incidental
from incidents.fingerprint import signature_fields

FIXTURES = Path(__file__).parent / "fixtures"
OUTPUTS = FIXTURES / "infer"
CORPUS = sorted(
    p for d in FIXTURES.glob("corpus*") for p in d.rglob("*") if p.is_file() and p.suffix != ".md"
)
PROJECT = (
    "gen.py",
    "bad.py",
    "shop/__init__.py",
    "shop/pricing.py",
    "shop/stock.py",
    "tests/test_pricing.py",
    "tests/test_stock.py",
    "tests/test_broken.py",
    "tests/test_syntax.py",
    "web/app.js",
    "web/util.js",
    "web/app.ts",
    "deploy.ps1",
    "messy.py",
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    for name in PROJECT:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text("x = 1\n")
    return path


def inferred(ws: Path, name: str) -> tuple[list[tuple[str, str]], infer.Scan]:
    text = (OUTPUTS / name).read_text().replace("{WORKDIR}", str(ws))
    found = infer.scan(text)
    return [(t["path"], t["kind"]) for t in infer.targets(found, str(ws), str(ws))], found


@pytest.mark.parametrize(
    ("name", "targets", "findings"),
    [
        ("ruff_full.txt", [("gen.py", "python")], ["F821 gen.py", "F841 gen.py"]),
        ("ruff_concise.txt", [("gen.py", "python")], ["F821 gen.py", "F841 gen.py"]),
        ("flake8.txt", [("gen.py", "python")], ["F821 gen.py", "F841 gen.py"]),
        ("black_check.txt", [("messy.py", "python")], ["reformat messy.py"]),
        ("black_cannot.txt", [("bad.py", "python")], ["reformat bad.py"]),
        (
            "mypy.txt",
            [("shop/stock.py", "python"), ("shop/pricing.py", "python"), ("gen.py", "python")],
            ["name-defined gen.py", "no-untyped-def gen.py"],
        ),
        (
            "pylint.txt",
            [("gen.py", "python"), ("shop/pricing.py", "python"), ("shop/stock.py", "python")],
            ["E0602 gen.py", "W0612 gen.py"],
        ),
        ("pyright.txt", [("gen.py", "python")], ["reportUndefinedVariable {WORKDIR}/gen.py"]),
        (
            "eslint_stylish.txt",
            [("web/app.js", "other"), ("web/util.js", "other")],
            ["no-unused-vars {WORKDIR}/web/app.js"],
        ),
        ("eslint_unix.txt", [("web/app.js", "other")], ["no-unused-vars web/app.js"]),
        ("tsc.txt", [("web/app.ts", "other")], ["TS2304 web/app.ts", "TS2322 web/app.ts"]),
        ("tsc_pretty.txt", [("web/app.ts", "other")], ["TS2322 web/app.ts"]),
        ("pssa_table.txt", [("deploy.ps1", "powershell")], ["PSAvoidUsingWriteHost deploy.ps1"]),
        ("pssa_list.txt", [("deploy.ps1", "powershell")], []),
        ("traceback.txt", [("shop/pricing.py", "python")], []),
        (
            "pytest_q.txt",
            [("shop/pricing.py", "python")],
            ["tests/test_pricing.py::test_total TypeError"],
        ),
        (
            "pytest_long.txt",
            [("shop/pricing.py", "python")],
            ["tests/test_pricing.py::test_total_no_discount TypeError"],
        ),
        (
            "pytest_import_error.txt",
            [("tests/test_broken.py", "python")],
            ["tests/test_broken.py collection error"],
        ),
        (
            "pytest_syntax_error.txt",
            [("tests/test_syntax.py", "python")],
            ["tests/test_syntax.py collection error"],
        ),
    ],
)
def test_each_tools_output_names_its_files(
    ws: Path, name: str, targets: list[tuple[str, str]], findings: list[str]
) -> None:
    got, found = inferred(ws, name)
    assert got == targets
    for finding in findings:
        assert finding.replace("{WORKDIR}", str(ws)) in found.findings, found.findings


def test_pytest_output_names_the_failed_tests_and_a_test_file_only_when_it_failed(
    ws: Path,
) -> None:
    got, found = inferred(ws, "pytest_q.txt")
    assert infer.tests_inside(found, str(ws), str(ws)) == [
        "tests/test_pricing.py::test_total",
        "tests/test_pricing.py::test_total_no_discount",
    ]
    assert ("tests/test_pricing.py", "python") not in got  # it saw the failure: not a target
    assert found.exception == "TypeError: unsupported operand type(s) for /: 'int' and 'str'"


def test_an_inferred_target_obeys_the_rules_of_a_given_one(ws: Path, tmp_path: Path) -> None:
    """Outside the workdir, through `..`, through a symlink that leaves it, a folder, a
    file that does not exist: never a target; a symlink inside it: its real path."""
    (tmp_path / "secret.py").write_text("x = 1\n")
    (ws / "link.py").symlink_to(tmp_path / "secret.py")
    (ws / "inner.py").symlink_to(ws / "gen.py")
    text = "\n".join(
        f"{p}:1:1: F401 unused"
        for p in (
            "../secret.py",
            str(tmp_path / "secret.py"),
            "link.py",
            "shop",
            "nope.py",
            "shop/../gen.py",
            "/etc/passwd",
            "inner.py",
        )
    )
    found = infer.scan(text)
    assert [t["path"] for t in infer.targets(found, str(ws), str(ws))] == ["gen.py"]
    assert infer.targets(found, "/", "/") == []  # a workdir of / contains nothing


def test_the_last_lines_are_read_and_each_only_so_far(ws: Path) -> None:
    long_line = "gen.py:1:1: F401 " + "x" * (infer.MAX_LINE * 50)
    found = infer.scan(long_line)
    assert found.findings == ["F401 gen.py"]
    assert all(len(n.evidence) <= infer.MAX_LINE for n in found.named)
    early = "gen.py:1:1: F401 unused\n" + "noise\n" * infer.MAX_LINES
    assert infer.scan(early).named == []  # beyond the lines read


@pytest.mark.timeout(60)  # a bound far above linear time (well under a second here)
def test_hostile_lines_cost_linear_time() -> None:
    """Lines shaped to make a backtracking pattern retry at every character: a path's
    characters without its colon, underscores around spaces, exception names without a
    suffix, a File line with no closing quote; 1 MB in all, read whole."""
    n = infer.MAX_LINE
    shapes = [
        "a" * n,
        "E" + " " * (n - 1),
        "___ " + "_ " * (n // 2),
        'E    File "' + "x" * n,
        "A" * n + ":",
        "x.py:" + "1" * n,
        "PSRule " + " " * n,
        "  ScriptPath : " + ".ps1 " * (n // 5),
        "FAILED " + "x" * n,
        "\x1b[" * (n // 4),
    ]
    text = "\n".join(shapes * 50)
    found = infer.scan(text)
    assert found.named == [] or all(len(n.path) <= 1024 for n in found.named)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_file_outside_the_workdir_is_ever_inferred_from_the_corpus(
    path: Path, tmp_path: Path
) -> None:
    """Every path a real-world output names is made to exist: inside the workdir as a
    file or as a symlink that leaves it, and outside it where the path leads (`..`,
    absolute paths under the test's folder). Only regular files inside it come back."""
    text = path.read_text(encoding="utf-8", errors="replace")
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    found = infer.scan(text)
    for i, named in enumerate(found.named[:200]):
        _materialize(named.path, ws, outside, link=i % 2 == 1)
    base = os.path.realpath(ws)
    for target in infer.targets(found, str(ws), str(ws)):
        rel = target["path"]
        assert ".." not in rel.split(os.sep) and not os.path.isabs(rel)
        real = os.path.realpath(ws / rel)
        assert real.startswith(base + os.sep) and os.path.isfile(real), rel
    for node in infer.tests_inside(found, str(ws), str(ws)):
        real = os.path.realpath(ws / node.partition("::")[0])
        assert real.startswith(base + os.sep), node


def _materialize(name: str, ws: Path, outside: Path, link: bool) -> None:
    if not name or len(name) > 200 or "\x00" in name or name.startswith("<"):
        return
    rel = name.lstrip("/\\").replace("\\", "/")
    rel = re.sub(r"^[A-Za-z]:/", "", rel)
    try:
        if ".." in rel.split("/") or os.path.isabs(name):
            place = outside / rel.replace("../", "")
        else:
            place = ws / rel
        place.parent.mkdir(parents=True, exist_ok=True)
        if link and place.is_relative_to(ws):
            away = outside / "away.py"
            away.write_text("x = 1\n")
            place.symlink_to(away)
        else:
            place.write_text("x = 1\n")
    except (OSError, ValueError):
        pass  # a name no file can have here


# -- what a signature is made of ---------------------------------------------------------


def test_what_failed_makes_the_signature_not_the_command(ws: Path) -> None:
    pricing = infer.scan((OUTPUTS / "pytest_q.txt").read_text())
    sig, inputs = signature_fields(
        "code", "unit_tests", "python -m pytest -q: exited with 1", pricing
    )
    assert inputs["basis"] == "failure"
    assert "tests/test_pricing.py::test_total TypeError" in sig and "exited" not in sig
    ruff = infer.scan((OUTPUTS / "ruff_concise.txt").read_text())
    assert (
        signature_fields("code", "lint", "ruff check gen.py: exited with 1", ruff)[1]["failure"]
        == "F821 gen.py; F841 gen.py"
    )
    # the positive control: output that names nothing: the message, as before
    nothing = infer.scan("Something went wrong\n")
    sig, inputs = signature_fields("code", "s", "deploy.sh: exited with 1", nothing)
    assert inputs["basis"] == "message" and sig == "code | s | deploy.sh: exited with 1"


@pytest.mark.parametrize(
    ("same", "texts"),
    [
        (
            True,
            [
                "OSError: [Errno 28] No space left on device: '/data/out/report_2024.csv'",
                "OSError: [Errno 28] No space left on device: '/data/cache/blob.bin'",
                "cp: error writing 'backup.tar': No space left on device",
            ],
        ),
        (
            True,
            [
                "fatal: unable to access 'https://github.com/acme/api.git/': Could not resolve "
                "host: github.com",
                "fatal: unable to access 'https://github.com/acme/web.git/': Could not resolve "
                "host: github.com",
            ],
        ),
        (
            False,
            [
                "fatal: unable to access 'https://github.com/acme/api.git/': Could not resolve "
                "host: github.com",
                "curl: (6) Could not resolve host: gitlab.example.org",
            ],
        ),
        (
            False,
            [
                "ERROR: No matching distribution found for requestz",
                "ERROR: No matching distribution found for numpyy",
            ],
        ),
        (
            False,
            [
                "KeyError: 'WAREHOUSE_API_TOKEN'",
                "KeyError: 'SHOP_DB_URL'",
            ],
        ),
    ],
)
def test_a_detail_that_is_not_what_failed_keeps_one_group(same: bool, texts: list[str]) -> None:
    signatures = {
        signature_fields(
            "env", "s", text, infer.scan(f"Traceback (most recent call last):\n{text}")
        )[0]
        for text in texts
    }
    assert (len(signatures) == 1) is same, signatures


def test_incidental_reads_a_bounded_head_and_compiles_nothing_for_most_failures() -> None:
    assert incidental("AssertionError: assert 1 == 2") is None
    assert incidental("x" * 5000 + " No space left on device") is None  # past the head
    assert incidental("getaddrinfo ENOTFOUND registry.npmjs.org") == (
        "could not resolve host: registry.npmjs.org"
    )
    assert basis(None, "MemoryError")[0] == "out of memory"
