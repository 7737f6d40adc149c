"""The pytest profile's guard plugin (`checks.pytest_guard`): a run in which the code under
test patched the runner yields a hard `runner-patched` finding, however the patch was
spelled; an ordinary project (conftest hooks, fixtures, monkeypatch) yields none. Real
pytest on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from incidents.checks.engine import run_error_pipeline
from incidents.checks.settings import ChecksSettings
from incidents.models.pipeline import ErrorPipelineContext

TEST = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
BUG = "def add(a, b):\n    return a - b\n"


def check(ws: Path, ctx: ErrorPipelineContext, settings: ChecksSettings) -> list[tuple[str, str]]:
    report = run_error_pipeline(["calc.py"], [], ctx, settings=settings, cwd=ws, tools=["pytest"])
    assert not report.infra_failures, report.infra_failures
    return [(f.code or "", f.category.value) for f in report.issues if f.hard]


@pytest.mark.parametrize(
    "patch",
    [
        'import _pytest.python\nsetattr(_pytest.python.Function, "runtest", lambda self: None)\n',
        # spelled so that no reading of the code can tell
        'import codecs\nm = __import__(codecs.decode("_clgrfg.clguba", "rot13"), fromlist=["x"])\n'
        'f = getattr(m, "Fun" + "ction")\nf.runtest.__code__ = (lambda self: None).__code__\n',
        'import codecs\nr = __import__(codecs.decode("_clgrfg.ercbegf", "rot13"), fromlist=["x"])\n'
        "setattr(r.TestReport, 'failed', property(lambda self: False))\n"
        "setattr(r.BaseReport, 'failed', property(lambda self: False))\n",
    ],
)
def test_a_patched_runner_is_a_hard_finding(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings, patch: str
) -> None:
    (tmp_path / "calc.py").write_text(patch + "\n\n" + BUG)
    (tmp_path / "test_calc.py").write_text(TEST)
    found = check(tmp_path, ctx, settings)
    assert ("runner-patched", "tamper") in found, found


def test_an_ordinary_project_is_intact(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    items.sort(key=str)\n\n\n"
        "@pytest.fixture\ndef three():\n    return 3\n"
    )
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text(
        "import builtins\nimport unittest\n\nfrom calc import add\n\n\n"
        "def test_add(three, monkeypatch):\n"
        "    monkeypatch.setattr(builtins, 'input', lambda *a: 'x')\n"
        "    monkeypatch.setattr(unittest.TestCase, 'run', lambda *a: None)\n"
        "    assert add(1, 2) == three\n\n\n"
        "class TestCase(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(add(1, 1), 2)\n"
    )
    assert check(tmp_path, ctx, settings) == []


def test_a_pytest_where_the_guard_cannot_work_is_an_infrastructure_failure_not_tamper(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    """A pytest that keeps its JUnit writer where the guard does not look (an older one:
    no `config.stash`), stood in for by a conftest that gives junitxml a key of its own:
    the guard cannot attach a verdict and says so. That is a check that could not be
    made, not a faked fix: an infrastructure failure, and no `runner-patched` finding."""
    (tmp_path / "conftest.py").write_text(
        "import _pytest.junitxml\nfrom _pytest.stash import StashKey\n\n\n"
        "def pytest_sessionstart(session):\n    _pytest.junitxml.xml_key = StashKey()\n"
    )
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text(TEST)
    report = run_error_pipeline(
        ["calc.py"], [], ctx, settings=settings, cwd=tmp_path, tools=["pytest"]
    )
    assert [f.code for f in report.issues] == []
    [infra] = report.infra_failures
    assert infra.tool == "pytest" and "guard could not run" in infra.reason, infra
    assert "keeps no JUnit writer" in infra.reason
