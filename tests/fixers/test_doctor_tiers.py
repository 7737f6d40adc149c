"""`incidents doctor` checks each enabled tier with the real CLIs (tests/real_clis.py): the
program found through its links, its version, that it starts under bubblewrap, its writable
paths (missing ones reported, not made), and which API settings are set — never a value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.debian import bubblewrap_or_skip
from tests.fixers.real import fresh_home, link_program
from tests.helpers import Cli


def test_doctor_checks_each_enabled_tier_with_the_real_program(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    bwrap = bubblewrap_or_skip()
    home = fresh_home(tmp_path, monkeypatch)
    for name in ("codex", "claude"):
        link_program(bin_dir, name)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    config = tmp_path / "incidents.toml"
    config.write_text('[tiers.aider]\nmode = "off"\n[tiers]\nsandbox = "bwrap"\n')
    monkeypatch.setenv("INCIDENTS_CONFIG", str(config))
    root.ensure()
    r = cli("doctor", "--json")
    found = r.json()
    by: dict[str, list[dict[str, str]]] = {}
    for f in found:
        by.setdefault(f["check"], []).append(f)
    assert "secret-value" not in json.dumps(found)
    [aider] = by["tier aider"]
    assert aider["level"] == "ok" and "mode = off" in aider["detail"]
    [codex] = by["tier codex"]
    assert codex["level"] == "ok" and "codex-cli 0.171.0" in codex["detail"]
    assert "-> " in codex["detail"]  # the link and where it resolves to
    [claude] = by["tier claude"]
    assert claude["level"] == "ok" and "(Claude Code)" in claude["detail"]
    for name in ("codex", "claude"):
        [under] = by[f"tier {name} sandbox"]
        assert under["level"] == "ok", under
        assert under["detail"].startswith(f"starts under {bwrap.label}")
    writable = {f["detail"].split(":")[0]: f for f in by["tier claude writable"]}
    assert "missing, the first run creates it" in writable[str(home / ".claude")]["detail"]
    assert "file (0600)" in writable[str(home / ".claude.json")]["detail"]
    assert not (home / ".claude").exists()  # doctor repairs nothing
    [api] = by["tier claude API"]
    assert api["level"] == "ok" and "set: ANTHROPIC_API_KEY" in api["detail"]
    [codex_api] = by["tier codex API"]
    assert codex_api["level"] == "warn" and "OPENAI_API_KEY" in codex_api["detail"]


def test_doctor_names_a_missing_tier_program(
    cli: Cli, root: Root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path
) -> None:
    fresh_home(tmp_path, monkeypatch)
    config = tmp_path / "incidents.toml"
    config.write_text('[tiers.codex]\nmode = "on"\nargv = ["no-such-codex-xyz", "exec"]\n')
    monkeypatch.setenv("INCIDENTS_CONFIG", str(config))
    root.ensure()
    r = cli("doctor", "--json")
    [codex] = [f for f in r.json() if f["check"] == "tier codex"]
    assert codex["level"] == "fail" and "program not found: no-such-codex-xyz" in codex["detail"]
    assert r.code == 1
