"""Shared set-up for the tests that drive the real aider, codex and claude (tests/real_clis.py
installs them) against the scripted model server (tests/fixers/model_server.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from incidents.fixers.settings import CODEX_ARGV
from tests.fixers.model_server import ModelServer
from tests.helpers import FAST
from tests.real_clis import program_or_skip

UNDEFINED = "def value() -> int:\n    return undefined_name\n"  # ruff F821: hard
FIXED = "def value() -> int:\n    return 1\n"
TIERS = ("aider", "codex", "claude")
# what a user's environment may hold that would point a CLI elsewhere than our server
FOREIGN = (
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "OPENAI_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "XDG_CONFIG_HOME",
    "AIDER_MODEL",
)


def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with nothing in it: no ~/.aider, ~/.codex, ~/.claude or ~/.claude.json."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in FOREIGN:
        monkeypatch.delenv(name, raising=False)
    return home


def link_program(bin_dir: Path, name: str) -> Path:
    """The real CLI on PATH as a user's install leaves it: `bin/NAME`, a symlink to the
    installed entry point (itself a link, for npm: node_modules/.bin/codex -> ...)."""
    real = program_or_skip(name)
    link = bin_dir / name
    link.symlink_to(real)
    return link


def codex_argv(url: str) -> list[str]:
    """The default codex command with a model provider for the server (`-c`, a TOML inline
    table: its braces are doubled in the template) and no retries of its own."""
    provider = (
        f'model_providers.mock={{{{ name = "mock", base_url = "{url}/v1", wire_api = '
        '"responses", env_key = "OPENAI_API_KEY", request_max_retries = 0, '
        "stream_max_retries = 0 }}"
    )
    return [
        CODEX_ARGV[0],
        CODEX_ARGV[1],
        "-c",
        'model_provider="mock"',
        "-c",
        provider,
        "-m",
        "test-model",
        *CODEX_ARGV[2:],
    ]


def configure(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    server: ModelServer,
    tier: str,
    mode: str,
    timeout_s: float = 120,
    also: tuple[str, ...] = (),
) -> str:
    """incidents.toml with only `tier` (and `also`) on, `[tiers] sandbox = mode`, and the
    CLI's settings pointing at `server` (the environment each reads, as a user sets it)."""
    fresh_home(tmp_path, monkeypatch)
    text = FAST + f'[tiers]\nsandbox = "{mode}"\n'
    for name in TIERS:
        on = name == tier or name in also
        text += f'[tiers.{name}]\nmode = "{"on" if on else "off"}"\ntimeout_s = {timeout_s}\n'
        if name == "codex" and on:
            text += f"argv = {json.dumps(codex_argv(server.url))}\n"
        if on:
            link_program(bin_dir, name)
    if tier == "aider" or "aider" in also:
        meta = tmp_path / "model-metadata.json"
        meta.write_text(
            json.dumps(
                {
                    "openai/test-model": {
                        "max_input_tokens": 128000,
                        "max_output_tokens": 4096,
                        "mode": "chat",
                        "input_cost_per_token": 3e-06,
                        "output_cost_per_token": 1.5e-05,
                        "litellm_provider": "openai",
                    }
                }
            )
        )
        monkeypatch.setenv("AIDER_MODEL", "openai/test-model")
        monkeypatch.setenv("AIDER_MODEL_METADATA_FILE", str(meta))
        monkeypatch.setenv("OPENAI_API_BASE", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-test")
    path = tmp_path / "incidents.toml"
    path.write_text(text)
    monkeypatch.setenv("INCIDENTS_CONFIG", str(path))
    return text


def mode_of(home: Path, name: str) -> int:
    return os.stat(home / name).st_mode & 0o777
