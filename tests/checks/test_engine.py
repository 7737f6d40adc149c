"""run_error_pipeline with the real tools on real files in tmp_path."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from incidents.checks import cache
from incidents.checks.engine import is_blocking, run_error_pipeline
from incidents.checks.settings import ChecksSettings
from incidents.errors import UsageError
from incidents.models.pipeline import ErrorPipelineContext
from incidents.models.report import ErrorReport

SCHEMAS = Path(__file__).parents[2] / "schemas"

TREE = {
    "pkg/__init__.py": "",
    "pkg/core.py": "import os\n\n\ndef double(x: int) -> int:\n    return x * 2\n",
    "pkg/typed.py": "from pkg.core import double\n\n\ndef half(x: int) -> str:\n    return double(x) // 4\n",
    "pkg/ugly.py": "values = [1,\n    2]\n",
    "pkg/broken.py": "def f(:\n    pass\n",
    "tests/test_core.py": (
        "from pkg.core import double\n\n\ndef test_ok() -> None:\n    assert double(2) == 4\n\n\n"
        "def test_bad() -> None:\n    assert double(2) == 5\n"
    ),
}


def write_tree(root: Path, files: dict[str, str]) -> list[str]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return sorted(files)


def validate(report: ErrorReport) -> None:
    doc = report.model_dump(mode="json")
    jsonschema.validate(doc, ErrorReport.model_json_schema(mode="serialization"))
    for schema in SCHEMAS.glob("*report*.json"):
        jsonschema.validate(doc, json.loads(schema.read_text()))


def test_every_category_is_found_and_summarised(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    files = write_tree(tmp_path, {k: v for k, v in TREE.items() if k != "pkg/broken.py"})
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path)
    validate(report)
    assert report.infra_failures == []
    got = {(f.tool, f.path, f.code, f.category.value, f.hard) for f in report.issues}
    assert got == {
        ("ruff", "pkg/core.py", "F401", "import", False),
        ("ruff-format", "pkg/ugly.py", "unformatted", "format", False),
        ("mypy", "pkg/typed.py", "return-value", "type", True),
        ("pytest", "tests/test_core.py", "test-failure", "test", True),
    }
    s = report.summary
    assert (s.total_issues, s.hard_error_count, s.style_error_count) == (4, 2, 2)
    assert s.issues_by_tool == {"mypy": 1, "pytest": 1, "ruff": 1, "ruff-format": 1}
    assert s.error_categories_present == ["format", "import", "test", "type"]
    assert s.has_hard_fail and not s.style_only
    assert (report.run_id, report.workstream_id, report.attempt_number) == ("run-1", "ws-1", 0)
    runs = {r.tool: r for r in report.tool_runs}
    assert set(runs) == {"ruff", "ruff-format", "mypy", "pytest"}
    assert runs["pytest"].argv[-1] == "tests/test_core.py" and runs["pytest"].files == 1
    assert runs["ruff"].argv[0].endswith("ruff") and runs["ruff"].version
    assert not any(r.cached for r in report.tool_runs)


def test_syntax_error_is_hard_from_ruff_and_mypy(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    files = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/broken.py": TREE["pkg/broken.py"]})
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path)
    assert report.infra_failures == []
    assert {(f.tool, f.category.value) for f in report.issues} == {
        ("ruff", "syntax"),
        ("mypy", "syntax"),
    }
    assert all(f.hard for f in report.issues)


def test_warm_run_runs_nothing_and_a_change_is_never_stale(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    files = write_tree(tmp_path, {k: v for k, v in TREE.items() if k != "pkg/broken.py"})
    cold = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path)
    warm = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path)
    assert all(r.cached and r.exit_code is None for r in warm.tool_runs)
    assert warm.issues == cold.issues
    # core.double now returns str: mypy's verdict on typed.py changes although typed.py did
    # not, and the test run changes too; ruff re-runs only the changed file.
    (tmp_path / "pkg/core.py").write_text("def double(x: int) -> str:\n    return str(x * 2)\n")
    after = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path)
    runs = {(r.tool, r.cached): r.files for r in after.tool_runs}
    assert runs[("ruff", False)] == 1 and runs[("ruff", True)] == len(files) - 1
    assert ("mypy", False) in runs and ("pytest", False) in runs
    codes = {(f.tool, f.path, f.code) for f in after.issues}
    assert ("ruff", "pkg/core.py", "F401") not in codes
    assert ("mypy", "pkg/typed.py", "operator") in codes


def test_damaged_cache_entries_are_misses(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    files = write_tree(tmp_path / "w", {"a.py": "import os\n"})
    first = run_error_pipeline(
        files, [], ctx, settings=settings, cwd=tmp_path / "w", tools=["ruff"]
    )
    for entry in Path(settings.cache_dir or "").glob(f"v{cache.FORMAT}/*/*.json"):
        entry.write_text("{torn")
    again = run_error_pipeline(
        files, [], ctx, settings=settings, cwd=tmp_path / "w", tools=["ruff"]
    )
    assert [f.code for f in again.issues] == [f.code for f in first.issues] == ["F401"]
    assert not any(r.cached for r in again.tool_runs)


def test_style_only_blocks_only_in_strict_mode(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    files = write_tree(tmp_path, {"ugly.py": TREE["pkg/ugly.py"]})
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path)
    assert report.summary.style_only and not report.summary.has_hard_fail
    assert not is_blocking(report, strict=False)
    assert is_blocking(report, strict=True)


def test_hard_ruff_prefixes_are_configurable(
    tmp_path: Path, ctx: ErrorPipelineContext, shared_cache: Path
) -> None:
    files = write_tree(tmp_path, {"a.py": "import os\n"})
    settings = ChecksSettings(cache_dir=str(shared_cache), hard_ruff_prefixes=["F4"])
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path, tools=["ruff"])
    [finding] = report.issues
    assert finding.hard and report.summary.has_hard_fail


def test_missing_tool_is_an_infra_failure_not_zero_issues(
    tmp_path: Path, ctx: ErrorPipelineContext, shared_cache: Path
) -> None:
    files = write_tree(tmp_path, {"a.py": "x = 1\n"})
    settings = ChecksSettings.model_validate(
        {
            "cache_dir": str(shared_cache),
            "profiles": {"ruff": {"argv": ["no-such-ruff-xyz", "check", "{files}"]}},
        }
    )
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path, tools=["ruff"])
    [infra] = report.infra_failures
    assert (infra.tool, infra.reason) == ("ruff", "program not found: no-such-ruff-xyz")
    assert infra.argv == ["no-such-ruff-xyz", "check", "a.py"]


CRASH = "import sys; sys.stderr.write('Traceback: boom\\n'); sys.exit(70)"
GARBAGE = "print('<html>not json</html>')"
SLEEP = "import time; time.sleep(30)"


@pytest.mark.parametrize(
    ("code", "timeout", "reason"),
    [
        (CRASH, None, "exited 70"),
        (GARBAGE, None, "unreadable output: ruff output is not JSON"),
        (SLEEP, 0.5, "timed out after 0.5s"),
    ],
)
def test_crash_garbage_and_timeout_are_infra_failures(
    tmp_path: Path, ctx: ErrorPipelineContext, shared_cache: Path, code: str,
    timeout: float | None, reason: str,
) -> None:  # fmt: skip
    files = write_tree(tmp_path, {"a.py": "x = 1\n"})
    profile: dict[str, object] = {
        "argv": ["{python}", "-c", code, "{files}"],
        "parser": "ruff-json",
        "globs": ["*.py"],
    }
    if timeout:
        profile["timeout"] = timeout
    settings = ChecksSettings.model_validate(
        {"cache_dir": str(shared_cache), "profiles": {"fake": profile}}
    )
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path, tools=["fake"])
    [infra] = report.infra_failures
    assert infra.reason.startswith(reason)
    assert report.summary.total_issues == 0
    if code == CRASH:
        assert "Traceback: boom" in infra.stderr_tail


def test_a_new_tool_is_one_profile(
    tmp_path: Path, ctx: ErrorPipelineContext, shared_cache: Path
) -> None:
    """A tool we never heard of, emitting ruff-style JSON, mapped to `security`."""
    files = write_tree(tmp_path, {"a.py": "x = 1\n"})
    emit = (
        "import json, sys; print(json.dumps([{'filename': f, 'code': 'XS1', 'message': 'no',"
        " 'location': {'row': 1, 'column': 1}} for f in sys.argv[1:]]))"
    )
    profile = {"argv": ["{python}", "-c", emit, "{files}"], "parser": "ruff-json",
               "globs": ["*.py"], "categories": {"XS": "security"}}  # fmt: skip
    settings = ChecksSettings.model_validate(
        {"cache_dir": str(shared_cache), "profiles": {"mytool": profile}}
    )
    report = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path, tools=["mytool"])
    [f] = report.issues
    assert (f.tool, f.path, f.category.value, f.hard) == ("mytool", "a.py", "security", True)
    assert report.summary.security_issue_count == 1


def test_powershell_without_pwsh(
    tmp_path: Path, ctx: ErrorPipelineContext, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no pwsh here, for certain
    write_tree(tmp_path, {"s.ps1": "Write-Host hi\n", "s.Tests.ps1": "Describe 'x' {}\n"})
    settings = ChecksSettings(cache_dir=str(shared_cache))
    report = run_error_pipeline([], ["s.ps1", "s.Tests.ps1"], ctx, settings=settings, cwd=tmp_path)
    assert {i.tool for i in report.infra_failures} == {"psscriptanalyzer", "pester"}
    assert all("pwsh is not on PATH" in i.reason for i in report.infra_failures)
    skip = settings.model_copy(update={"skip_powershell_without_pwsh": True})
    report = run_error_pipeline([], ["s.ps1"], ctx, settings=skip, cwd=tmp_path)
    assert report.infra_failures == [] and report.tool_runs == []


def test_unknown_tool_and_bad_profile_config(ctx: ErrorPipelineContext) -> None:
    with pytest.raises(UsageError, match="unknown tool 'nope'"):
        run_error_pipeline([], [], ctx, tools=["nope"])
    from incidents.errors import ConfigError

    with pytest.raises(ConfigError, match="needs argv, parser"):
        bad = ChecksSettings.model_validate({"profiles": {"x": {"globs": ["*"]}}})
        run_error_pipeline([], [], ctx, settings=bad)


def test_paths_outside_cwd_stay_absolute_and_label_follows_context(
    tmp_path: Path, shared_cache: Path
) -> None:
    write_tree(tmp_path / "elsewhere", {"a.py": "import os\n"})
    (tmp_path / "cwd").mkdir()
    ctx = ErrorPipelineContext(run_id="r", workstream_id="w", mechanical_fix_applied=True)
    target = str(tmp_path / "elsewhere" / "a.py")
    settings = ChecksSettings(cache_dir=str(shared_cache))
    report = run_error_pipeline(
        [target], [], ctx, settings=settings, cwd=tmp_path / "cwd", tools=["ruff"]
    )
    assert [f.path for f in report.issues] == [target]
    assert report.label == "0b" and report.mechanical_fix_applied


def test_a_change_outside_the_targets_reruns_mypy_and_pytest(
    tmp_path: Path, ctx: ErrorPipelineContext, settings: ChecksSettings
) -> None:
    """Only `user.py` and the test are targets; what they import and the conftest.py above
    the test are not, yet a change there changes mypy's and pytest's verdict."""
    write_tree(tmp_path, {
        "lib.py": "def add(a: int, b: int) -> int:\n    return a + b\n",
        "user.py": "from lib import add\n\ny: int = add(1, 2)\n",
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef n() -> int:\n    return 3\n",
        "tests/unit/test_user.py": "from lib import add\n\n\ndef test_add(n: int) -> None:\n    assert add(1, 2) == n\n",
    })  # fmt: skip
    targets = ["user.py", "tests/unit/test_user.py"]
    clean = run_error_pipeline(
        targets, [], ctx, settings=settings, cwd=tmp_path, tools=["mypy", "pytest"]
    )
    assert clean.issues == [] and clean.infra_failures == []

    (tmp_path / "lib.py").write_text("def add(a: int, b: int) -> str:\n    return str(a + b)\n")
    after_lib = run_error_pipeline(
        targets, [], ctx, settings=settings, cwd=tmp_path, tools=["mypy", "pytest"]
    )
    assert not any(r.cached for r in after_lib.tool_runs)
    assert {(f.tool, f.path) for f in after_lib.issues} >= {
        ("mypy", "user.py"), ("pytest", "tests/unit/test_user.py"),
    }  # fmt: skip

    (tmp_path / "lib.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    assert run_error_pipeline(targets, [], ctx, settings=settings, cwd=tmp_path).issues == []
    (tmp_path / "tests/conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef n() -> int:\n    return 4\n"
    )
    after_conftest = run_error_pipeline(
        targets, [], ctx, settings=settings, cwd=tmp_path, tools=["pytest"]
    )
    assert [r.cached for r in after_conftest.tool_runs] == [False]
    assert [(f.tool, f.path) for f in after_conftest.issues] == [
        ("pytest", "tests/unit/test_user.py")
    ]


def test_env_keys_of_a_profile_come_from_incidents_toml(
    tmp_path: Path, ctx: ErrorPipelineContext, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variable named in `[checks.profiles.ruff] env_keys` is part of ruff's cache key."""
    settings = ChecksSettings.model_validate(
        {"cache_dir": str(shared_cache), "profiles": {"ruff": {"env_keys": ["MY_RUFF_FLAG"]}}}
    )
    files = write_tree(tmp_path, {"a.py": "x = 1\n"})
    monkeypatch.setenv("MY_RUFF_FLAG", "one")
    run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path, tools=["ruff"])
    warm = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path, tools=["ruff"])
    assert [r.cached for r in warm.tool_runs] == [True]
    monkeypatch.setenv("MY_RUFF_FLAG", "two")
    changed = run_error_pipeline(files, [], ctx, settings=settings, cwd=tmp_path, tools=["ruff"])
    assert [r.cached for r in changed.tool_runs] == [False]
