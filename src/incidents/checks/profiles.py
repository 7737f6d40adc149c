"""Tool profiles as data. Adding a tool is one entry here or one `[checks.profiles.X]` table.

argv placeholders (a whole element, or embedded in one):
  {files}        the batch of target files (whole element only)
  {tests}        the test files chosen for a test runner (whole element only)
  {python}       the interpreter running incidents
  {cwd}          the working directory the tools run in
  {cache_dir}    the engine's cache folder (tools keep their own caches under it)
  {report}       a fresh temporary file the tool writes its report to
  {script:NAME}  a helper script shipped in incidents/checks/ps/
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from incidents.errors import ConfigError, UsageError
from incidents.vocab import Category

Scope = Literal["file", "batch"]
Selects = Literal["targets", "tests"]

PY_CONFIGS = ("pyproject.toml", "setup.cfg")
# our pytest plugin that tells whether the runner was patched during the run (the JUnit
# parser requires its verdict when a run loaded it)
GUARD = "incidents.checks.pytest_guard"


@dataclass(frozen=True)
class ToolProfile:
    name: str
    language: str  # "python" | "powershell"
    globs: tuple[str, ...]
    argv: tuple[str, ...]
    parser: str
    default_category: Category
    categories: tuple[tuple[str, Category], ...] = ()
    hard_codes: tuple[str, ...] = ()
    fix_argv: tuple[str, ...] = ()
    enabled: bool = True
    timeout: float | None = None
    # file: a file's findings depend on that file alone (cache and batch per file);
    # batch: on the whole set of targets and on every source file matching `globs` under
    # the working directory and the targets' own folders (what mypy imports, what tests
    # and conftest.py load), and on the packages installed for the tool's interpreter.
    scope: Scope = "file"
    selects: Selects = "targets"
    # A bare name is looked for in every folder from each target's and test's folder and
    # from the working directory up to the filesystem root (tools that find the nearest
    # one may skip it for lacking their section); a name with a folder part is one file,
    # relative to the working directory (`~` is expanded).
    config_files: tuple[str, ...] = PY_CONFIGS
    ok_exit_codes: tuple[int, ...] = (0, 1)
    version_argv: tuple[str, ...] = ()
    only_targets: bool = False  # drop findings on files that are not targets
    test_globs: tuple[str, ...] = field(default=())
    # The Python distribution providing the tool: when the program lives in our own venv,
    # its version comes from the package metadata instead of spawning `tool --version`.
    dist: str | None = None
    # Environment variables the tool reads that change its answer: their values are part
    # of the cache key (the tools inherit the whole environment).
    env_keys: tuple[str, ...] = ()

    def category_of(self, code: str | None) -> Category:
        best: tuple[int, Category] | None = None
        for prefix, category in self.categories:
            if code_matches(code, prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), category)
        return best[1] if best else self.default_category

    def is_hard_code(self, code: str | None) -> bool:
        return any(code_matches(code, p) for p in self.hard_codes)

    def fingerprint(self) -> str:
        """What changes the findings if it changes (part of every cache key)."""
        return repr(
            (self.name, self.argv, self.parser, self.scope, self.selects, self.only_targets)
        )


def code_matches(code: str | None, prefix: str) -> bool:
    """`S` matches `S602` but not `SIM118`; `E9` matches `E902`; names match exactly."""
    if code is None:
        return False
    if code == prefix:
        return True
    if not code.startswith(prefix) or not prefix:
        return False
    return prefix[-1].isdigit() or code[len(prefix)].isdigit()


_RUFF_CATEGORIES: tuple[tuple[str, Category], ...] = (
    ("invalid-syntax", Category.SYNTAX),
    ("E9", Category.SYNTAX),
    ("I", Category.IMPORT),
    ("F401", Category.IMPORT),
    ("F403", Category.IMPORT),
    ("E401", Category.IMPORT),
    ("E402", Category.IMPORT),
    ("TID", Category.IMPORT),
    ("ICN", Category.IMPORT),
    ("S", Category.SECURITY),
    ("W1", Category.FORMAT),
    ("W2", Category.FORMAT),
    ("W3", Category.FORMAT),
    ("E1", Category.FORMAT),
    ("E2", Category.FORMAT),
    ("E3", Category.FORMAT),
    ("COM", Category.FORMAT),
    ("Q", Category.FORMAT),
)

_PSSA_CATEGORIES: tuple[tuple[str, Category], ...] = (
    ("ParseError", Category.SYNTAX),
    ("PSAvoidUsingPlainTextForPassword", Category.SECURITY),
    ("PSAvoidUsingConvertToSecureStringWithPlainText", Category.SECURITY),
    ("PSAvoidUsingUsernameAndPasswordParams", Category.SECURITY),
    ("PSAvoidUsingInvokeExpression", Category.SECURITY),
    ("PSAvoidUsingComputerNameHardcoded", Category.SECURITY),
    ("PSUsePSCredentialType", Category.SECURITY),
    ("PSAvoidUsingBrokenHashAlgorithms", Category.SECURITY),
    ("PSUseConsistentIndentation", Category.FORMAT),
    ("PSUseConsistentWhitespace", Category.FORMAT),
    ("PSPlaceOpenBrace", Category.FORMAT),
    ("PSPlaceCloseBrace", Category.FORMAT),
    ("PSAlignAssignmentStatement", Category.FORMAT),
    ("PSAvoidTrailingWhitespace", Category.FORMAT),
    ("PSAvoidUsingCmdletAliases", Category.LINT),
)

_RUFF_CONFIGS = ("pyproject.toml", "ruff.toml", ".ruff.toml", "~/.config/ruff/ruff.toml",
                 "~/.config/ruff/.ruff.toml", "~/.config/ruff/pyproject.toml")  # fmt: skip

_PWSH = ("pwsh", "-NoLogo", "-NoProfile", "-NonInteractive", "-File")

BUILTIN_PROFILES: dict[str, ToolProfile] = {
    p.name: p
    for p in (
        ToolProfile(
            name="ruff",
            dist="ruff",
            language="python",
            globs=("*.py", "*.pyi"),
            argv=("ruff", "check", "--output-format=json", "--no-fix",
                  "--cache-dir={cache_dir}/ruff", "{files}"),
            fix_argv=("ruff", "check", "--fix", "--no-unsafe-fixes",
                      "--cache-dir={cache_dir}/ruff", "{files}"),
            parser="ruff-json",
            default_category=Category.LINT,
            categories=_RUFF_CATEGORIES,
            config_files=_RUFF_CONFIGS,
        ),
        ToolProfile(
            name="ruff-format",
            dist="ruff",
            language="python",
            globs=("*.py", "*.pyi"),
            argv=("ruff", "format", "--check", "--output-format=json",
                  "--cache-dir={cache_dir}/ruff", "{files}"),
            fix_argv=("ruff", "format", "--cache-dir={cache_dir}/ruff", "{files}"),
            parser="ruff-format-json",
            default_category=Category.FORMAT,
            config_files=_RUFF_CONFIGS,
            ok_exit_codes=(0, 1, 2),  # 2: a file does not parse (ruff check reports it)
        ),
        ToolProfile(
            name="black",
            dist="black",
            language="python",
            enabled=False,  # opt-in: ~100x slower than ruff format (PERFORMANCE.md)
            globs=("*.py", "*.pyi"),
            argv=("black", "--check", "{files}"),
            fix_argv=("black", "{files}"),
            parser="black-text",
            default_category=Category.FORMAT,
            config_files=("pyproject.toml",),
            ok_exit_codes=(0, 1, 123),  # 123: a file does not parse
        ),
        ToolProfile(
            name="mypy",
            dist="mypy",
            language="python",
            globs=("*.py", "*.pyi"),
            argv=("mypy", "-O", "json", "--cache-dir={cache_dir}/mypy", "{files}"),
            parser="mypy-json",
            default_category=Category.TYPE,
            categories=(("syntax", Category.SYNTAX),),
            scope="batch",
            only_targets=True,
            config_files=("pyproject.toml", "mypy.ini", ".mypy.ini", "setup.cfg",
                          "~/.config/mypy/config", "~/.mypy.ini"),
            ok_exit_codes=(0, 1, 2),  # 2: blocking errors (syntax) — or a crash, see parser
            env_keys=("MYPYPATH", "PYTHONPATH"),
        ),
        ToolProfile(
            name="pytest",
            dist="pytest",
            language="python",
            globs=("*.py",),
            test_globs=("test_*.py", "*_test.py"),
            argv=("{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", GUARD,
                  "--continue-on-collection-errors", "-o", "junit_family=xunit1",
                  "--rootdir={cwd}", "--junit-xml={report}", "{tests}"),
            parser="junit-xml",
            default_category=Category.TEST,
            scope="batch",
            selects="tests",
            config_files=("pyproject.toml", "pytest.toml", ".pytest.toml", "pytest.ini",
                          ".pytest.ini", "tox.ini", "setup.cfg"),
            ok_exit_codes=(0, 1, 2, 5),  # 2: collection errors; 5: no tests collected
            env_keys=("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH"),
            version_argv=("{python}", "-m", "pytest", "--version"),
        ),
        ToolProfile(
            name="bandit",
            dist="bandit",
            language="python",
            enabled=False,  # optional: turn on with [checks.profiles.bandit] enabled = true
            globs=("*.py",),
            argv=("bandit", "-f", "json", "-q", "{files}"),
            parser="bandit-json",
            default_category=Category.SECURITY,
            config_files=("pyproject.toml", ".bandit"),
        ),
        ToolProfile(
            name="psscriptanalyzer",
            language="powershell",
            globs=("*.ps1", "*.psm1", "*.psd1"),
            argv=(*_PWSH, "{script:pssa.ps1}", "{files}"),
            parser="pssa-json",
            default_category=Category.LINT,
            categories=_PSSA_CATEGORIES,
            hard_codes=("ParseError",),
            config_files=("PSScriptAnalyzerSettings.psd1",),
            ok_exit_codes=(0,),
            version_argv=("pwsh", "--version"),
        ),
        ToolProfile(
            name="pester",
            language="powershell",
            globs=("*.ps1",),
            test_globs=("*.Tests.ps1",),
            argv=(*_PWSH, "{script:pester.ps1}", "{report}", "{tests}"),
            parser="nunit-xml",
            default_category=Category.TEST,
            scope="batch",
            selects="tests",
            config_files=(),
            ok_exit_codes=(0, 1),
            version_argv=("pwsh", "--version"),
        ),
    )
}  # fmt: skip


def _category(value: str, where: str) -> Category:
    try:
        return Category(value)
    except ValueError:
        choices = ", ".join(c.value for c in Category)
        raise ConfigError(
            "incidents.toml", where, f"unknown category {value!r} ({choices})"
        ) from None


def resolve_profiles(
    overrides: dict[str, object] | None = None,
    *,
    hard_ruff_prefixes: Iterable[str] | None = None,
    only: Iterable[str] | None = None,
) -> list[ToolProfile]:
    """Built-ins with `[checks.profiles.*]` applied; `only` selects by name (and enables)."""
    from incidents.checks.settings import ProfileOverride

    profiles = dict(BUILTIN_PROFILES)
    if hard_ruff_prefixes is not None:
        profiles["ruff"] = replace(profiles["ruff"], hard_codes=tuple(hard_ruff_prefixes))
    for name, raw in (overrides or {}).items():
        ov = raw if isinstance(raw, ProfileOverride) else ProfileOverride.model_validate(raw)
        profiles[name] = _apply(name, profiles.get(name), ov)
    if only is None:
        return [p for p in profiles.values() if p.enabled]
    chosen: list[ToolProfile] = []
    for name in only:
        if name not in profiles:
            known = ", ".join(sorted(profiles))
            raise UsageError(f"unknown tool {name!r} (known: {known})")
        chosen.append(replace(profiles[name], enabled=True))
    return chosen


def _apply(name: str, base: ToolProfile | None, ov: object) -> ToolProfile:
    from incidents.checks.settings import ProfileOverride

    assert isinstance(ov, ProfileOverride)
    where = f"checks.profiles.{name}"
    if base is None:
        missing = [k for k in ("argv", "parser", "globs") if getattr(ov, k) is None]
        if missing:
            raise ConfigError("incidents.toml", where, f"a new profile needs {', '.join(missing)}")
        assert ov.argv is not None and ov.parser is not None and ov.globs is not None
        base = ToolProfile(
            name=name,
            language=ov.language or "python",
            globs=tuple(ov.globs),
            argv=tuple(ov.argv),
            parser=ov.parser,
            default_category=_category(ov.default_category or "lint", where),
        )
    changes: dict[str, Any] = {}  # field -> value, checked by the dataclass's fields
    for key in ("enabled", "language", "timeout", "scope", "selects", "parser"):
        value = getattr(ov, key)
        if value is not None:
            changes[key] = value
    for key in ("globs", "argv", "fix_argv", "hard_codes", "config_files", "ok_exit_codes",
                "version_argv", "env_keys"):  # fmt: skip
        value = getattr(ov, key)
        if value is not None:
            changes[key] = tuple(value)
    if ov.default_category is not None:
        changes["default_category"] = _category(ov.default_category, where)
    if ov.categories is not None:
        changes["categories"] = tuple(
            (k, _category(v, f"{where}.categories.{k}")) for k, v in ov.categories.items()
        )
    from incidents.checks.parsers import PARSERS

    parser = changes.get("parser", base.parser)
    if parser not in PARSERS:
        raise ConfigError(
            "incidents.toml", f"{where}.parser", f"unknown parser {parser!r} ({', '.join(PARSERS)})"
        )
    return replace(base, **changes)


def script_path(name: str) -> str:
    return os.path.join(os.path.dirname(__file__), "ps", name)
