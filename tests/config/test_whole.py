"""One config validation everywhere: capture's stdlib check of the whole file
(`incidents.config_check`, against `config_table.json` generated from the models) refuses
exactly what the pydantic models refuse, key by key, and names the same key."""

from __future__ import annotations

import math
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from incidents.config import Config, config_table, load_config, table_path
from incidents.config_check import check_whole, table
from incidents.errors import ConfigError, explain_validation
from tests.helpers import Cli

# Files every command must refuse; the dotted key each names.
BAD = [
    ("[policy]\nretry_max_s = inf\n", "policy.retry_max_s"),
    ("[policy]\nretry_base_s = nan\n", "policy.retry_base_s"),
    ("[policy]\nlease_ttl_s = -inf\n", "policy.lease_ttl_s"),
    ("[policy]\nstrict_mode = 1\n", "policy.strict_mode"),
    ("[policy]\nsignature_budget = 2.0\n", "policy.signature_budget"),
    ("[policy]\nconfirm_runs = 0\n", "policy.confirm_runs"),
    ('[policy]\nallow_suppressions = ["noqa-everything"]\n', "policy.allow_suppressions.0"),
    ("[policy]\nbogus = 1\n", "policy.bogus"),
    ('[checks]\ntools = ["rufff"]\n', "checks.tools"),
    ('[checks]\ntools = ["ruff", "mypy", "ruff"]\n', "checks.tools"),
    ("[policy]\nretry_base_s = 10\nretry_max_s = 5\n", "policy.retry_base_s"),
    ("[policy]\nretry_base_s = 500\n", "policy.retry_base_s"),  # over the default cap
    ("[policy]\nretry_max_s = 1\n", "policy.retry_base_s"),  # under the default base
    ('[checks]\ntools = "ruff"\n', "checks.tools"),
    ("[checks]\nmax_workers = 0\n", "checks.max_workers"),
    ("[checks]\ndefault_timeout = inf\n", "checks.default_timeout"),
    ('[checks.profiles.ruff]\nscope = "everything"\n', "checks.profiles.ruff.scope"),
    ("[checks.profiles.ruff]\ntimeout = nan\n", "checks.profiles.ruff.timeout"),
    ("[checks.profiles.ruff]\nargv = []\n", "checks.profiles.ruff.argv"),
    ("[checks.profiles.ruff]\nflags = 1\n", "checks.profiles.ruff.flags"),
    ('[tiers]\nsandbox = "docker"\n', "tiers.sandbox"),
    ('[tiers.aider]\nmode = "always"\n', "tiers.aider.mode"),
    ('[tiers.aider]\nargv = ["aider", "{nope}"]\n', "tiers.aider.argv"),
    ('[tiers.codex]\nargv = ["codex", "x{files}"]\n', "tiers.codex.argv"),
    ("[tiers.claude]\ntimeout_s = inf\n", "tiers.claude.timeout_s"),
    ('[tiers.gemini]\nmode = "on"\n', "tiers.gemini"),
    ('[watch]\nworkers = "2"\n', "watch.workers"),
    ("[watch]\npoll_s = 0\n", "watch.poll_s"),
    ("[watch]\nstable_s = nan\n", "watch.stable_s"),
    ("[watch]\nbogus = true\n", "watch.bogus"),
    ('[verification]\nallow = ["bin/tool"]\n', "verification.allow"),
    ('[verification]\nworkdirs = ["relative"]\n', "verification.workdirs"),
    ("[verification]\ntimeout_s = inf\n", "verification.timeout_s"),
    ('[capture]\ndedupe = "yes"\n', "capture.dedupe"),
    ("policy = 5\n", "policy"),
    ("nonsense = true\n", "nonsense"),
]
GOOD = [
    "",
    '[policy]\nretry_max_s = 600\nallow_suppressions = ["noqa"]\n',
    "[policy]\nretry_base_s = 7\nretry_max_s = 7\n",
    '[checks]\ntools = ["ruff", "mypy"]\nmax_workers = 2\n',
    '[checks.profiles.mine]\nargv = ["mine"]\nparser = "ruff"\nglobs = ["*.py"]\n'
    '[checks]\ntools = ["mine"]\n',
    '[tiers.aider]\nmode = "off"\n[tiers.claude]\nargv = ["claude", "-p", "{prompt}"]\n',
    "[watch]\nworkers = 2\npoll_s = 0.5\n",
    '[verification]\nallow = ["make", "/usr/bin/env"]\nworkdirs = ["/srv/jobs"]\n',
]


def _pydantic_key(raw: dict[str, Any]) -> str | None:
    """The key the models alone name (no stdlib check first), None when they accept."""
    try:
        Config.model_validate(raw)
    except ValidationError as exc:
        key, reason = explain_validation(exc)
        return key or reason.split(":")[0].removeprefix("Value error, ")
    return None


def _stdlib_key(path: Path, raw: dict[str, Any]) -> str | None:
    try:
        check_whole(path, raw)
    except ConfigError as exc:
        return exc.key
    return None


def test_the_committed_table_is_what_the_models_generate() -> None:
    assert (
        table_path().read_text(encoding="utf-8") == config_table()
    ), "config_table.json is stale: run `incidents schemas --write`"


@pytest.mark.parametrize(("text", "key"), BAD)
def test_both_checks_refuse_and_name_the_same_key(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "incidents.toml"
    path.write_text(text)
    raw = tomllib.loads(text)
    assert _stdlib_key(path, raw) == key
    assert _pydantic_key(raw) == key
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert info.value.key == key


@pytest.mark.parametrize("text", GOOD)
def test_both_checks_accept(tmp_path: Path, text: str) -> None:
    path = tmp_path / "incidents.toml"
    path.write_text(text)
    raw = tomllib.loads(text)
    assert (_stdlib_key(path, raw), _pydantic_key(raw)) == (None, None)
    load_config(str(path))


def _leaves(node: dict[str, Any], defs: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    """(dotted key, schema) of every key a file can set, one profile and tier each."""
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    if node.get("type") != "object" or "properties" not in node:
        return [(key, node)]
    out = []
    for name, sub in node["properties"].items():
        out += _leaves(sub, defs, f"{key}.{name}" if key else name)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out += _leaves(extra, defs, f"{key}.ruff")
    return out


def _nest(key: str, value: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    here = doc
    parts = key.split(".")
    for part in parts[:-1]:
        here = here.setdefault(part, {})
    here[parts[-1]] = value
    return doc


def _wrong_values(node: dict[str, Any]) -> list[Any]:
    kinds = {o.get("type") for o in node.get("anyOf", [node])}
    values: list[Any] = []
    if kinds & {"number", "integer"}:
        values += ["5", True, math.inf, math.nan]
    if "integer" in kinds and "number" not in kinds:
        values.append(2.5)
    if "string" in kinds:
        values += [5, ["x"]]
    if "boolean" in kinds:
        values += [1, "true"]
    if "array" in kinds:
        values += ["x", {"a": 1}]
    return values


def test_every_key_is_refused_alike_with_a_wrong_type_or_a_non_finite_number(
    tmp_path: Path,
) -> None:
    schema = table()
    leaves = _leaves(schema, schema["$defs"], "")
    assert len(leaves) > 60  # every table's keys, not a sample
    disagreements = []
    for key, node in leaves:
        for value in _wrong_values(node):
            raw = _nest(key, value)
            got = (_stdlib_key(tmp_path / "x.toml", raw), _pydantic_key(raw))
            if got != (key, key):
                disagreements.append((key, value, got))
    assert disagreements == []


def test_capture_names_a_bad_table_it_does_not_use_and_still_captures(
    cli: Cli, tmp_path: Path
) -> None:
    for text, key in BAD:
        (tmp_path / "incidents.toml").write_text(text)
        r = cli("capture", "--step", "s", "--message", "m")
        assert r.code == 0 and f"{key}:" in r.err, (text, r.err)
        assert (tmp_path / "reports" / "error_inbox" / r.out.strip()).is_dir()


def test_capture_checks_the_whole_file_without_importing_pydantic(tmp_path: Path) -> None:
    (tmp_path / "incidents.toml").write_text("[policy]\nretry_max_s = 600\n[watch]\nworkers = 2\n")
    code = (
        "import sys; from incidents.capture import read_settings; read_settings(None); "
        "print(sorted(m for m in ('pydantic', 'typer', 'jsonschema') if m in sys.modules))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert (p.returncode, p.stdout.strip()) == (0, "[]"), p.stderr
