"""`incidents check` / `incidents fix`, called in-process through `main`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from incidents.cli import main
from incidents.models.report import ErrorReport


@pytest.fixture
def workdir(tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "incidents.toml").write_text(f'[checks]\ncache_dir = "{shared_cache}"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INCIDENTS_CONFIG", raising=False)
    return tmp_path


def test_clean_file_exits_0(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "ok.py").write_text("def f() -> int:\n    return 1\n")
    assert main(["check", "ok.py"]) == 0
    assert capsys.readouterr().out.startswith("0 issue(s): 0 hard, 0 style [")


def test_hard_finding_exits_1_and_json_is_the_report(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "bad.py").write_text("def f() -> int:\n    return 'x'\n")
    assert main(["check", "bad.py", "--json", "--tools", "mypy"]) == 1
    report = ErrorReport.model_validate(json.loads(capsys.readouterr().out))
    assert [(f.tool, f.code, f.line) for f in report.issues] == [("mypy", "return-value", 2)]


def test_table_output(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "imp.py").write_text("import os\n")
    assert main(["check", "imp.py", "--tools", "ruff"]) == 0  # style only, not strict
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["where", "tool", "code", "category", "kind", "message"]
    assert out[1].split()[:5] == ["imp.py:1:8", "ruff", "F401", "import", "style"]
    assert out[2].startswith("1 issue(s): 0 hard, 1 style [ruff")
    assert main(["check", "imp.py", "--tools", "ruff", "--strict"]) == 1


def test_folder_is_walked(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "src").mkdir()
    (workdir / "src" / "a.py").write_text("import os\n")
    (workdir / ".hidden").mkdir()
    (workdir / ".hidden" / "b.py").write_text("import os\n")
    assert main(["check", "--json", "--tools", "ruff"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [i["path"] for i in report["issues"]] == ["src/a.py"]


def test_bad_input_exits_2_with_one_line(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "missing.py"]) == 2
    assert capsys.readouterr().err == "incidents: missing.py: no such file or folder\n"
    (workdir / "notes.txt").write_text("hi")
    assert main(["check", "notes.txt"]) == 2
    assert "not a Python or PowerShell file" in capsys.readouterr().err
    (workdir / "ok.py").write_text("x = 1\n")
    assert main(["check", "ok.py", "--tools", "nope"]) == 2
    assert "unknown tool 'nope'" in capsys.readouterr().err


def test_infra_failure_exits_2(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    (workdir / "s.ps1").write_text("Write-Host hi\n")
    assert main(["check", "s.ps1"]) == 2
    assert "infra failure: psscriptanalyzer: pwsh is not on PATH" in capsys.readouterr().err


def test_fix_changes_only_the_targets(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "a.py").write_text("import os\nx = [1,\n  2]\n")
    (workdir / "b.py").write_text("import os\nx = [1,\n  2]\n")
    assert main(["fix", "a.py"]) == 0
    out = capsys.readouterr().out
    assert "changed a.py" in out and "b.py" not in out
    assert (workdir / "a.py").read_text() == "x = [1, 2]\n"
    assert (workdir / "b.py").read_text() == "import os\nx = [1,\n  2]\n"
    assert main(["fix", "a.py"]) == 0
    assert "no file changed" in capsys.readouterr().out


def test_commands_have_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("check", "fix"):
        assert main([command, "--help"]) == 0
        assert "Usage: incidents " + command in capsys.readouterr().out


def test_processes_sharing_one_cache_agree(workdir: Path, shared_cache: Path) -> None:
    for i in range(20):
        (workdir / f"m{i}.py").write_text(f"import os\nv{i} = [1,\n  2]\n")
    argv = [sys.executable, "-m", "incidents", "check", "--json", "--tools", "ruff,ruff-format"]
    env = {**os.environ, "INCIDENTS_CONFIG": str(workdir / "incidents.toml")}
    procs = [subprocess.Popen(argv, cwd=workdir, stdout=subprocess.PIPE, env=env) for _ in range(4)]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    issues = [o["issues"] for o in outs]
    assert all(i == issues[0] for i in issues)
    assert sum(1 for i in issues[0] if i["tool"] == "ruff-format") == 20
    assert {i["path"] for i in issues[0] if i["code"] == "F401"} == {f"m{i}.py" for i in range(20)}
    warm = subprocess.run(argv, cwd=workdir, capture_output=True, env=env, check=True)
    doc = json.loads(warm.stdout)
    assert doc["issues"] == issues[0] and all(r["cached"] for r in doc["tool_runs"])


def test_config_strict_mode_counts(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "imp.py").write_text("import os\n")
    assert main(["check", "imp.py", "--tools", "ruff"]) == 0  # style only
    with open(workdir / "incidents.toml", "a") as fh:
        fh.write("[policy]\nstrict_mode = true\n")
    assert main(["check", "imp.py", "--tools", "ruff"]) == 1
    assert "F401" in capsys.readouterr().out
