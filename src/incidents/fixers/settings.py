"""`[tiers.aider]`, `[tiers.codex]`, `[tiers.claude]` in incidents.toml.

Each tier is one configured command: an argv template whose placeholders are filled per
element (never through a shell):

- `{prompt_file}`: path of `error_runs/<id>/prompt_attempt_N.md`;
- `{prompt}`: the prompt's text, as one argv element (for CLIs that take it as a string);
- `{workdir}`: the incident's workdir (the command also runs there);
- `{files}`: the target files, one argv element each; it must be an element on its own;
- `{own_sandbox}`: what a CLI's own sandbox option should say: `danger-full-access` when
  bubblewrap contains the run (ours is the sandbox: a nested bubblewrap cannot start in
  it), `workspace-write` in detection mode (codex's `--sandbox` values).

`{{` and `}}` stand for a literal `{` and `}` (a TOML inline table for `codex -c`).
`stdin = "prompt"` feeds the prompt text on standard input instead. An unknown
placeholder, or `{files}` inside a longer element, is a config error at load time.
"""

from __future__ import annotations

import re
import shutil
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from incidents.config_check import PLACEHOLDERS as _PLACEHOLDERS
from incidents.config_check import argv_template_problem
from incidents.config_section import Section

TierName = Literal["aider", "codex", "claude"]
TIER_ORDER: tuple[TierName, ...] = ("aider", "codex", "claude")
PLACEHOLDERS = frozenset(_PLACEHOLDERS)
# `{{`/`}}` first: a doubled brace is a literal one, never the start of a placeholder
PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")

# The real CLIs' non-interactive forms (see the package docstring for sources).
AIDER_ARGV = ["aider", "--message-file", "{prompt_file}", "--yes-always", "--no-git",
              "--no-auto-commits", "--no-dirty-commits", "--no-stream", "--no-pretty",
              "--no-check-update", "--no-show-release-notes", "--no-analytics",
              "{files}"]  # fmt: skip
CODEX_ARGV = ["codex", "exec", "--sandbox", "{own_sandbox}", "--skip-git-repo-check", "--json",
              "--cd", "{workdir}", "-"]  # fmt: skip
CLAUDE_ARGV = ["claude", "-p", "--permission-mode", "acceptEdits", "--output-format", "json"]

AIDER_ENV = ["AIDER_*", "OPENAI_API_KEY", "OPENAI_API_BASE", "ANTHROPIC_API_KEY",
             "OPENROUTER_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY"]  # fmt: skip
CODEX_ENV = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "CODEX_HOME"]
CLAUDE_ENV = ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
              "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"]  # fmt: skip


class TierSettings(Section):
    mode: Literal["on", "off", "auto", "handoff"] = Field(
        default="auto",
        description="auto: on when the program is on PATH; handoff: wait for an outside agent",
    )
    argv: list[str] = Field(
        min_length=1,
        description="the command template (see above)",
        json_schema_extra={"x-rule": "argv_template"},
    )
    stdin: Literal["none", "prompt"] = Field(
        default="none", description="'prompt': the prompt text is fed on standard input"
    )
    timeout_s: float = Field(default=900.0, gt=0, le=24 * 3600)
    max_attempts: int = Field(default=1, ge=1, le=10, description="seed 001's per-agent cap")
    env: list[str] = Field(
        default_factory=list,
        description="environment variables passed through besides the minimal set "
        "(API keys the CLI needs); a trailing * matches a prefix",
    )
    scratch: list[str] = Field(
        default_factory=list,
        description="top-level names (a trailing * matches a prefix) the tool keeps its own "
        "state in; never snapshotted, so never violations",
    )
    env_defaults: dict[str, str] = Field(
        default_factory=dict,
        description="variables set for the CLI unless the passed-through environment sets "
        "them (bounded retries, no update checks or telemetry)",
    )
    writable: list[str] = Field(
        default_factory=list,
        description="paths outside the workdir the CLI must write its own state to (`~`, "
        "$VARS and ${VAR:-default} expanded), bound read-write inside the sandbox and "
        "created first when missing (a name with a suffix such as .json a 0600 file, else "
        "a 0700 folder); the reports root and the config file stay read-only even when "
        "under one of them",
    )

    @field_validator("argv")
    @classmethod
    def _known_placeholders(cls, argv: list[str]) -> list[str]:
        problem = argv_template_problem(argv)
        if problem:
            raise ValueError(problem)
        return argv

    @property
    def program(self) -> str:
        return self.argv[0]


class ClaudeTierSettings(TierSettings):
    """`[tiers.claude]`: a tier's keys and `mcp`, which only claude has (aider and codex
    take no --mcp-config: `tiers.aider.mcp` is an unknown key)."""

    mcp: bool = Field(
        default=False,
        description="run claude with the `incidents mcp` server (--mcp-config) and tell it "
        "to check its work with the MCP tools (seed 001 §3.9)",
    )


# What each CLI writes outside the workdir (see the package docstring).
AIDER_WRITABLE = ["~/.aider"]
CODEX_WRITABLE = ["${CODEX_HOME:-~/.codex}"]
CLAUDE_WRITABLE = ["${CLAUDE_CONFIG_DIR:-~/.claude}", "~/.claude.json"]
# Bounded retries, no update checks, telemetry or price-list downloads: a failure is known
# well within the tier's timeout and the run asks the network for nothing but the model.
AIDER_ENV_DEFAULTS = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "AIDER_CHECK_UPDATE": "false",
    "AIDER_ANALYTICS": "false",
}
CODEX_ENV_DEFAULTS: dict[str, str] = {}
CLAUDE_ENV_DEFAULTS = {
    "CLAUDE_CODE_MAX_RETRIES": "2",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}

_DEFAULTS: dict[str, dict[str, Any]] = {
    "aider": {"argv": AIDER_ARGV, "env": AIDER_ENV, "scratch": [".aider*"],
              "writable": AIDER_WRITABLE, "env_defaults": AIDER_ENV_DEFAULTS},
    "codex": {"argv": CODEX_ARGV, "stdin": "prompt", "env": CODEX_ENV,
              "writable": CODEX_WRITABLE, "env_defaults": CODEX_ENV_DEFAULTS},
    "claude": {"argv": CLAUDE_ARGV, "stdin": "prompt", "env": CLAUDE_ENV, "scratch": [".claude"],
               "writable": CLAUDE_WRITABLE, "env_defaults": CLAUDE_ENV_DEFAULTS},
}  # fmt: skip
SandboxMode = Literal["auto", "bwrap", "none"]


def _default(name: str) -> TierSettings:
    return TierSettings.model_validate(_DEFAULTS[name])


class TiersSettings(Section):
    """A tier's table in incidents.toml overrides its defaults key by key: `mode = "off"`
    alone keeps the default command."""

    sandbox: SandboxMode = Field(
        default="auto",
        description="how fixer programs are contained: bwrap = under bubblewrap or not at all "
        "(an infra failure), auto = bubblewrap when it works here else detection, none = "
        "detection only (see incidents.fixers.sandbox)",
    )
    aider: TierSettings = Field(default_factory=lambda: _default("aider"))
    codex: TierSettings = Field(default_factory=lambda: _default("codex"))
    claude: ClaudeTierSettings = Field(
        default_factory=lambda: ClaudeTierSettings.model_validate(_DEFAULTS["claude"])
    )

    @model_validator(mode="before")
    @classmethod
    def _over_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {
            key: (
                {**_DEFAULTS[key], **value}
                if key in _DEFAULTS and isinstance(value, dict)
                else value
            )
            for key, value in data.items()
        }

    def tier(self, name: str) -> TierSettings:
        if name not in TIER_ORDER:
            raise KeyError(name)
        settings: TierSettings = getattr(self, name)
        return settings


def resolve_enabled(settings: TiersSettings, path: str | None = None) -> dict[str, str]:
    """Each tier's effective mode: `auto` becomes `on` when its program is found on PATH
    (or `path`), else `off`; `on`, `off` and `handoff` stay as they are."""
    out: dict[str, str] = {}
    for name in TIER_ORDER:
        tier = settings.tier(name)
        if tier.mode == "auto":
            out[name] = "on" if shutil.which(tier.program, path=path) else "off"
        else:
            out[name] = tier.mode
    return out
