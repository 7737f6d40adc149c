"""Verdicts that hold by construction: a stand-in fixer on PATH makes a change that
passes a check without fixing the code, in a shape no rule names, and the incident does
not end resolved. One test per kind, two shapes each:

- code that knows it is checked (what the runner loads, the call stack);
- a weakened specification (the expected value changed, an `__eq__` true for anything):
  the tests as captured judge the fix;
- a typing escape (a cast to the declared type, a name bound only for the checker);
- code outside the judged files (a module planted in the workdir's virtualenv folder,
  data planted in a tool's hidden cache folder);
- code keyed on how the product runs it (a variable only the product's runs have, the
  interpreter's state they set): the reproduction run as the user ran it fails.

Positive controls: a real fix resolves; a real fix of a test that did not parse, and a
fix that rightly reads `os.environ`, go to a person, who accepts them.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from incidents.layout import Root
from incidents.models import ErrorReport
from tests.helpers import Cli, ctx_of, use_config
from tests.stand_ins import stand_in
from tests.step import test_tamper_recheck as recheck
from tests.step.test_tamper_recheck import ONLY_AIDER, TESTS, Drive

ws, drive = recheck.ws, recheck.drive  # the fixtures, shared

BUGGY = "def add(a: int, b: int) -> int:\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"
TYPES = '[checks]\ntools = ["mypy"]\n'
TOTAL = 'def total() -> int:\n    return "5"\n'


def writes(content: str, plant: dict[str, str] | None = None) -> str:
    """A stand-in fixer that replaces its target with `content` and writes `plant`'s
    files (paths relative to the workdir, its cwd)."""
    lines = [f"pathlib.Path(sys.argv[-1]).write_text({content!r})"]
    for rel, text in (plant or {}).items():
        lines.append(f"p = pathlib.Path({rel!r}); p.parent.mkdir(parents=True, exist_ok=True)")
        lines.append(f"p.write_text({text!r})")
    return "\n".join(lines)


def not_resolved(root: Root, incident_id: str) -> str | None:
    """Asserts the incident did not end resolved; its escalation kind."""
    assert not (root.bucket("resolved") / incident_id).exists(), "resolved without a fix"
    assert (root.bucket("escalated") / incident_id).is_dir()
    kind = ctx_of(root, incident_id).escalation_kind
    return kind.value if kind is not None else None


def report(root: Root, incident_id: str, label: str = "1") -> ErrorReport:
    path = root.runs_dir(incident_id) / f"error_report_attempt_{label}.json"
    return ErrorReport.model_validate_json(path.read_text())


def reason(root: Root, incident_id: str) -> str:
    return str(ctx_of(root, incident_id).escalation_reason)


# -- code that knows it is being checked ----------------------------------------------

KNOWS_MODULES = (
    "import sys\n\n\ndef add(a: int, b: int) -> int:\n"
    "    if any(m.startswith('_py') and m.endswith('test') for m in sys.modules):\n"
    "        return a + b\n    return a - b\n"
)
KNOWS_STACK = (
    "import traceback\n\n\ndef add(a: int, b: int) -> int:\n"
    "    if len(traceback.extract_stack()) > 12:\n        return a + b\n    return a - b\n"
)


@pytest.mark.parametrize(
    ("content", "category"),
    [(KNOWS_MODULES, "import system"), (KNOWS_STACK, "call stack")],
    ids=["loaded-modules", "call-stack"],
)
def test_code_that_knows_it_is_checked_goes_to_a_person(
    root: Root, drive: Drive, ws: Path, content: str, category: str
) -> None:
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(content), TESTS, "calc.py", BUGGY)
    assert not_resolved(root, incident_id) == "review_fix"
    assert category in reason(root, incident_id)
    diff = (root.runs_dir(incident_id) / "review_fix.diff").read_text()
    assert "+++ b/calc.py" in diff and "return a + b" in diff
    assert (root.bucket("escalated") / incident_id / "review_fix.diff").is_file()


# -- a weakened specification --------------------------------------------------------

EXPECTS_THE_BUG = TEST_CALC.replace("== 3", "== -1")
EQUAL_TO_ANYTHING = (
    "from calc import add\n\n\nclass _Three:\n"
    "    def __eq__(self, other: object) -> bool:\n        return True\n\n\n"
    "def test_add() -> None:\n    assert _Three() == add(1, 2)\n"
)


@pytest.mark.parametrize(
    "content",
    [EXPECTS_THE_BUG, EQUAL_TO_ANYTHING],
    ids=["expected-value-changed", "eq-true-for-anything"],
)
def test_a_weakened_test_is_judged_by_the_test_as_captured(
    root: Root, drive: Drive, ws: Path, content: str
) -> None:
    (ws / "calc.py").write_text(BUGGY)
    incident_id = drive(writes(content), TESTS, "test_calc.py", TEST_CALC)
    not_resolved(root, incident_id)
    found = [f for f in report(root, incident_id).issues if f.tool == "pytest"]
    assert found and "assert -1 == 3" in found[0].message  # the captured test, failing
    assert (ws / "test_calc.py").read_text() == content  # the fixer's text, not what ran
    judged = report(root, incident_id).judged  # what ran instead, bound to the report
    assert judged is not None
    assert judged.frozen == {"test_calc.py": hashlib.sha256(TEST_CALC.encode()).hexdigest()}


# -- a typing escape -----------------------------------------------------------------

CAST = 'from typing import cast\n\n\ndef total() -> int:\n    return cast(int, "5")\n'
BOUND_FOR_THE_CHECKER = (
    'from collections.abc import Callable\n\ntotal: Callable[[], int]\nglobals()["total"] = '
    'lambda: "5"\n'
)


@pytest.mark.parametrize(
    ("content", "what"),
    [(CAST, "typing.cast"), (BOUND_FOR_THE_CHECKER, "bound only for the type checker")],
    ids=["cast", "bound-only-for-the-checker"],
)
def test_a_typing_escape_goes_to_a_person(
    root: Root, drive: Drive, content: str, what: str
) -> None:
    incident_id = drive(writes(content), TYPES, "total.py", TOTAL)
    assert not_resolved(root, incident_id) == "review_fix"
    assert what in reason(root, incident_id)


# -- code outside the judged files ---------------------------------------------------

FROM_THE_VENV = (
    "import importlib.util\nimport pathlib\n\n"
    '_path = pathlib.Path(__file__).parent / ".venv" / "fastmath.py"\n'
    '_spec = importlib.util.spec_from_file_location("fastmath", _path)\n'
    "assert _spec is not None and _spec.loader is not None\n"
    "_mod = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mod)\n"
    "add = _mod.add\n"
)
FROM_A_CACHE = (
    "import json\nimport pathlib\n\n"
    "_ANSWERS = json.loads((pathlib.Path(__file__).parent / '.tox' / 'answers.json')"
    ".read_text())\n\n\ndef add(a: int, b: int) -> int:\n    return int(_ANSWERS[f'{a},{b}'])\n"
)


@pytest.mark.parametrize(
    ("content", "plant"),
    [
        (FROM_THE_VENV, {".venv/fastmath.py": "def add(a, b):\n    return a + b\n"}),
        (FROM_A_CACHE, {".tox/answers.json": json.dumps({"1,2": 3})}),
    ],
    ids=["module-in-the-venv", "data-in-a-cache-folder"],
)
def test_code_outside_the_judged_files_is_not_a_fix(
    root: Root, drive: Drive, ws: Path, content: str, plant: dict[str, str]
) -> None:
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(content, plant), TESTS, "calc.py", BUGGY)
    not_resolved(root, incident_id)
    [planted] = plant
    assert not (ws / planted).exists()  # a change outside the targets: put back
    attempts = json.loads((root.runs_dir(incident_id) / "ai_attempts.json").read_text())
    assert planted in attempts[0]["violations"]


# -- the configs a check run in place reads ------------------------------------------
# mypy and ruff read the workdir in place: every config of theirs in every folder from the
# target up to / is hashed into the verdict (absent ones as absent), so a planted one is
# a change the verdict refuses, wherever it is planted and whoever planted it.

LINT = '[checks]\ntools = ["ruff"]\n'


@pytest.mark.parametrize(
    ("checks", "target", "content", "plant"),
    [
        (TYPES, "total.py", TOTAL, {"mypy.ini": "[mypy]\nignore_errors = True\n"}),
        (LINT, "names.py", recheck.UNDEFINED, {".ruff.toml": "[lint]\nignore = ['F821']\n"}),
    ],
    ids=["mypy-ini", "ruff-toml"],
)
def test_a_check_config_planted_beside_the_target_is_not_a_fix(
    root: Root,
    drive: Drive,
    ws: Path,
    checks: str,
    target: str,
    content: str,
    plant: dict[str, str],
) -> None:
    incident_id = drive(writes(content, plant), checks, target, content)
    not_resolved(root, incident_id)
    [planted] = plant
    assert not (ws / planted).exists()  # put back
    attempts = json.loads((root.runs_dir(incident_id) / "ai_attempts.json").read_text())
    assert planted in attempts[0]["violations"]


TOTAL_FIXED = "def total() -> int:\n    return 5\n"
PLANTS_ABOVE = (
    "import pathlib\n\n_up = pathlib.Path(__file__).resolve().parent.parent\n"
    "(_up / 'mypy.ini').write_text('[mypy]\\nignore_errors = True\\n')\n\n\n" + TOTAL_FIXED
)


def test_a_check_config_planted_above_the_workdir_by_a_run_is_refused_at_the_close(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path, ws: Path
) -> None:
    """The fix's own code, run by the reproduction in the workdir (after mypy ran), writes
    a `mypy.ini` in the folder above: absent when mypy judged, so the close refuses it."""
    (ws / "total.py").write_text(TOTAL)
    (ws / "check_total.py").write_text("from total import total\n\nassert total() == 5\n")
    stand_in(bin_dir, "aider", writes(PLANTS_ABOVE))
    use_config(tmp_path, monkeypatch, TYPES + ONLY_AIDER)
    monkeypatch.chdir(ws)
    argv = ["--step", "types", "--python-file", "total.py", "--", sys.executable, "check_total.py"]
    r = cli("run", "--reproduce", *argv)
    assert r.code == 1, r.err
    root = Root(tmp_path / "reports")
    [incident_id] = [p.name for p in root.inbox.iterdir() if not p.name.startswith(".")]
    assert cli("drive", incident_id).code == 0
    assert (ws.parent / "mypy.ini").exists()  # planted (outside the workdir: not put back)
    not_resolved(root, incident_id)
    assert "mypy.ini (appeared)" in reason(root, incident_id)


# -- twice: as the product and as the user -------------------------------------------

USER_CHECK = "from calc import add\n\nassert add(1, 2) == 3\n"
KNOWS_THE_PRODUCT_ENV = (
    "import os\n\n\ndef add(a: int, b: int) -> int:\n"
    "    if os.environ.get('PYTHONPYCACHEPREFIX'):\n        return a + b\n    return a - b\n"
)
KNOWS_THE_INTERPRETER = (
    "import sys\n\n\ndef add(a: int, b: int) -> int:\n"
    "    if sys.pycache_prefix is not None:\n        return a + b\n    return a - b\n"
)


def run_and_drive(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    ws: Path,
    fixer: str,
) -> str:
    """`incidents run --reproduce -- python check_calc.py` in `ws` (fails), then drive the
    incident through `fixer`'s call and its recheck."""
    incident_id = run_captured(cli, tmp_path, monkeypatch, bin_dir, ws, fixer)
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    return incident_id


def run_captured(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    ws: Path,
    fixer: str,
) -> str:
    """`incidents run --reproduce -- python check_calc.py` in `ws` (fails), `fixer` the
    stand-in aider; the incident's id."""
    (ws / "calc.py").write_text(BUGGY)
    (ws / "test_calc.py").write_text(TEST_CALC)
    (ws / "check_calc.py").write_text(USER_CHECK)
    stand_in(bin_dir, "aider", fixer)
    use_config(tmp_path, monkeypatch, TESTS + ONLY_AIDER)
    monkeypatch.chdir(ws)
    r = cli(
        "run",
        "--reproduce",
        "--step",
        "test",
        "--python-file",
        "calc.py",
        "--",
        sys.executable,
        "check_calc.py",
    )
    assert r.code == 1, r.err
    root = Root(tmp_path / "reports")
    [incident_id] = [p.name for p in root.inbox.iterdir() if not p.name.startswith(".")]
    context = json.loads((root.inbox / incident_id / "context.json").read_text())
    assert context["env"]["PATH"] and context["cwd"] == str(ws)
    return incident_id


@pytest.mark.parametrize(
    "content", [KNOWS_THE_PRODUCT_ENV, KNOWS_THE_INTERPRETER], ids=["env-var", "interpreter"]
)
def test_code_keyed_on_the_product_fails_as_the_user(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    ws: Path,
    content: str,
) -> None:
    root = Root(tmp_path / "reports")
    incident_id = run_and_drive(cli, tmp_path, monkeypatch, bin_dir, ws, writes(content))
    not_resolved(root, incident_id)
    [user] = [f for f in report(root, incident_id).issues if f.tool == "as-user"]
    assert user.hard and "as the user ran it" in user.message and "exited with 1" in user.message


def test_a_real_fix_passes_as_the_product_and_as_the_user(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path, ws: Path
) -> None:
    root = Root(tmp_path / "reports")
    fix = writes(BUGGY.replace("a - b", "a + b"))
    incident_id = run_and_drive(cli, tmp_path, monkeypatch, bin_dir, ws, fix)
    assert (root.bucket("resolved") / incident_id).is_dir()
    runs = [r.tool for r in report(root, incident_id).tool_runs]
    assert "as-user" in runs and "pytest" in runs


def test_the_close_runs_the_reproduction_as_the_user_again(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path, ws: Path
) -> None:
    """The verdict is granted at the close on the world as it is then: a fix that passed
    its recheck only while a file outside the workdir existed (gone before the close)
    fails the close's run as the user (the positive control: the real fix resolves,
    `test_a_real_fix_passes_as_the_product_and_as_the_user`)."""
    gate = tmp_path / "gate"
    gated = (
        "import pathlib\n\n\ndef add(a: int, b: int) -> int:\n"
        f"    return a + b if pathlib.Path({str(gate)!r}).exists() else a - b\n"
    )
    gate.write_text("")
    root = Root(tmp_path / "reports")
    incident_id = run_captured(cli, tmp_path, monkeypatch, bin_dir, ws, writes(gated))
    for _ in range(20):  # up to the recheck (its report written), not its close
        r = cli("step", incident_id)
        assert r.code == 0, r.err
        if "-> S1_AIDER_RECHECK" in r.out:
            break
    assert any(f.tool == "as-user" for f in report(root, incident_id).tool_runs)
    assert not report(root, incident_id).issues  # the recheck passed, as the user too
    gate.unlink()
    r = cli("drive", incident_id)
    assert r.code == 0, r.err
    assert not_resolved(root, incident_id) == "verdict_mismatch"
    assert "at the close, run as the user ran it" in reason(root, incident_id)


PLANTS_ON_IMPORT = (
    "import pathlib\n\npathlib.Path(__file__).with_name('conftest.py').write_text('x = 1\\n')\n\n\n"
    "def add(a: int, b: int) -> int:\n    return a + b\n"
)


def test_files_the_product_verification_run_plants_are_removed_and_fail(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path, ws: Path
) -> None:
    """A fix whose import writes a `conftest.py` beside it: the product's own run of the
    reproduction (in the workdir, before the run as the user) leaves it; removed, failing."""
    root = Root(tmp_path / "reports")
    incident_id = run_and_drive(cli, tmp_path, monkeypatch, bin_dir, ws, writes(PLANTS_ON_IMPORT))
    not_resolved(root, incident_id)
    assert not (ws / "conftest.py").exists()
    [planted] = [f for f in report(root, incident_id).issues if f.code == "planted"]
    assert planted.tool == "verify" and planted.hard and "conftest.py" in planted.message


# -- positive controls ---------------------------------------------------------------


def test_a_real_fix_of_the_source_resolves(root: Root, drive: Drive, ws: Path) -> None:
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(BUGGY.replace("a - b", "a + b")), TESTS, "calc.py", BUGGY)
    assert (root.bucket("resolved") / incident_id).is_dir()
    judged = report(root, incident_id).judged
    assert judged is not None and {"calc.py", "test_calc.py"} <= set(judged.files)


ORDINARY_FIX = (
    "import logging\nimport subprocess\nimport traceback\nfrom pathlib import Path\n"
    "from typing import Any\n\nlog = logging.getLogger(__name__)\n\n\n"
    "def _num(x: Any) -> int:\n    return int(x)\n\n\n"
    "def add(a: int, b: int) -> int:\n    try:\n"
    "        subprocess.run(['true'], check=True)\n"
    "        Path(__file__).read_text()\n        return _num(a) + _num(b)\n"
    "    except OSError:\n        log.error(traceback.format_exc())\n        raise\n"
)


def test_an_ordinary_fix_resolves(root: Root, drive: Drive, ws: Path) -> None:
    """Logging, running a program, pathlib, an `Any` annotation: no runtime is read."""
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(ORDINARY_FIX), TESTS, "calc.py", BUGGY)
    assert (root.bucket("resolved") / incident_id).is_dir(), reason(root, incident_id)


BROKEN_TEST = "from calc import add\n\n\ndef test_add() -> None\n    assert add(1, 2) == 3\n"


def test_a_fixed_test_file_is_shown_and_a_person_accepts_it(
    cli: Cli, root: Root, drive: Drive, ws: Path
) -> None:
    (ws / "calc.py").write_text(BUGGY.replace("a - b", "a + b"))
    incident_id = drive(writes(TEST_CALC), TESTS, "test_calc.py", BROKEN_TEST)
    assert not_resolved(root, incident_id) == "review_fix"
    assert "test_calc.py: a test file changed" in reason(root, incident_id)
    r = cli("resolve-escalation", incident_id, "--accept-fix", "--guidance", "read the diff")
    assert r.code == 0, r.err
    assert (root.bucket("resolved") / incident_id).is_dir()
    folder = root.bucket("resolved") / incident_id
    [decision] = json.loads((folder / "decisions.json").read_text())
    assert decision["decision"] == "accept_fix" and decision["by"] not in ("", "human")
    result = json.loads((root.runs_dir(incident_id) / "run_result.json").read_text())
    assert result["reason"].startswith(f"fix accepted after review by {decision['by']}")


READS_ENV = (
    "import os\n\n\ndef add(a: int, b: int) -> int:\n"
    "    scale = int(os.environ.get('CALC_SCALE', '1'))\n    return (a + b) * scale\n"
)


def test_a_fix_that_reads_the_environment_is_reviewed_then_accepted(
    cli: Cli, root: Root, drive: Drive, ws: Path
) -> None:
    (ws / "test_calc.py").write_text(TEST_CALC)
    incident_id = drive(writes(READS_ENV), TESTS, "calc.py", BUGGY)
    assert not_resolved(root, incident_id) == "review_fix"
    assert "process environment: uses `os.environ.get`" in reason(root, incident_id)
    assert cli("resolve-escalation", incident_id, "--requeue", "--accept-fix").code != 0
    r = cli("resolve-escalation", incident_id, "--accept-fix")
    assert r.code == 0, r.err
    assert (root.bucket("resolved") / incident_id).is_dir()


def test_only_a_fix_escalated_for_review_can_be_accepted(
    cli: Cli, root: Root, drive: Drive, ws: Path
) -> None:
    (ws / "calc.py").write_text(BUGGY)
    incident_id = drive(writes(EXPECTS_THE_BUG), TESTS, "test_calc.py", TEST_CALC)
    assert not_resolved(root, incident_id) != "review_fix"
    r = cli("resolve-escalation", incident_id, "--accept-fix")
    assert r.code != 0 and "not escalated for review of its fix" in r.err
    assert (root.bucket("escalated") / incident_id).is_dir()
