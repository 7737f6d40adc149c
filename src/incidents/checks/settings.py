"""The `[checks]` section of incidents.toml: profile overrides and engine knobs."""

from __future__ import annotations

from pydantic import Field

from incidents.config_section import Section


class ProfileOverride(Section):
    """`[checks.profiles.<name>]`: any field left out keeps the built-in value.

    A name that is not built in defines a new profile; it then needs at least
    `argv`, `parser` and `globs`.
    """

    enabled: bool | None = None
    language: str | None = Field(default=None, pattern=r"^(python|powershell)$")
    globs: list[str] | None = None
    argv: list[str] | None = Field(default=None, min_length=1)
    fix_argv: list[str] | None = None
    parser: str | None = None
    timeout: float | None = Field(default=None, gt=0, le=24 * 3600)
    scope: str | None = Field(default=None, pattern=r"^(file|batch)$")
    selects: str | None = Field(default=None, pattern=r"^(targets|tests)$")
    default_category: str | None = None
    categories: dict[str, str] | None = Field(
        default=None, description="code prefix -> category; the longest matching prefix wins"
    )
    hard_codes: list[str] | None = None
    config_files: list[str] | None = None
    ok_exit_codes: list[int] | None = None
    version_argv: list[str] | None = None
    env_keys: list[str] | None = Field(
        default=None,
        description="environment variables whose values change the tool's answer (cache key)",
    )


class ChecksSettings(Section):
    profiles: dict[str, ProfileOverride] = Field(default_factory=dict)
    tools: list[str] | None = Field(
        default=None, description="run only these profiles (default: every enabled one)"
    )
    hard_ruff_prefixes: list[str] = Field(
        default_factory=lambda: ["invalid-syntax", "E9", "F63", "F7", "F82"],
        description="ruff codes that block success whatever strict_mode says",
    )
    skip_powershell_without_pwsh: bool = Field(
        default=False, description="skip PowerShell targets when pwsh is missing (else infra)"
    )
    test_paths: list[str] = Field(
        default_factory=list, description="test files or folders always given to pytest/Pester"
    )
    cache: bool = Field(default=True, description="reuse findings for unchanged inputs")
    cache_dir: str | None = Field(
        default=None, description="default: $XDG_CACHE_HOME/incidents/checks"
    )
    max_workers: int | None = Field(default=None, ge=1, le=64, description="default: cores")
    default_timeout: float = Field(default=600.0, gt=0, le=24 * 3600)
    max_batch_chars: int = Field(
        default=100_000, ge=1000, description="split per-file tools' argv beyond this"
    )
