"""A canonical report records what its verdict rests on: the sha256 of every file it
judged (targets, tests run, check configs read) and the tool versions, served from the
cache or not (real ruff and pytest on real files)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from incidents.checks.engine import run_error_pipeline
from incidents.checks.settings import ChecksSettings
from incidents.models.pipeline import ErrorPipelineContext


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_report_records_the_hashes_of_what_it_judged_cached_or_not(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    project = tmp_path / "project"
    ws = project / "ws"
    ws.mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    (ws / "ruff.toml").write_text("line-length = 90\n")
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    reports = [
        run_error_pipeline(
            ["calc.py"], [], ctx, settings=settings, cwd=ws, tools=["ruff", "pytest"]
        )
        for _ in range(2)
    ]
    assert not any(r.cached for r in reports[0].tool_runs)
    assert all(r.cached for r in reports[1].tool_runs)  # the second is served from the cache
    for report in reports:
        judged = report.judged
        assert judged is not None
        files = judged.files
        assert files["calc.py"] == sha(ws / "calc.py")
        assert files["test_calc.py"] == sha(ws / "test_calc.py")  # the test it ran
        assert files["ruff.toml"] == sha(ws / "ruff.toml")  # configs, up the tree: absolute
        assert files[str(project / "pyproject.toml")] == sha(project / "pyproject.toml")
        assert set(judged.tools) == {"ruff", "pytest"} and all(judged.tools.values())
        assert judged.tests == ["test_calc.py"]
        # configs looked for and not found: one appearing would change the verdict
        assert "pyproject.toml" in judged.absent and str(project / "ruff.toml") in judged.absent
        assert "ruff.toml" not in judged.absent
    assert reports[0].judged == reports[1].judged
