"""`incidents doctor`'s look at each enabled fixer tier: its program found (and the path it
resolves to), its version, that it starts under the sandbox fixers get here (`--version`,
with the tier's environment and writable paths, as a fix runs it), its writable paths, and
which of its API settings are set — names only, never values. Nothing is created or
changed (a missing writable folder is made by the first run, and said so)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from incidents import proc
from incidents.config import Config
from incidents.doctor_inbox import Finding
from incidents.fixers import api_rules, sandbox
from incidents.fixers.runner import _containment, _pass_env
from incidents.fixers.settings import TIER_ORDER, TierSettings, resolve_enabled

VERSION_TIMEOUT_S = 60.0


def check_tiers(cfg: Config) -> list[Finding]:
    modes = resolve_enabled(cfg.tiers)
    out: list[Finding] = []
    for name in TIER_ORDER:
        settings = cfg.tiers.tier(name)
        mode = modes[name]
        check = f"tier {name}"
        if mode == "off":
            why = "program not on PATH" if settings.mode == "auto" else "mode = off"
            out.append(Finding(check, "ok", f"off ({why}: {settings.program})"))
        elif mode == "handoff":
            out.append(Finding(check, "ok", "handoff: an outside agent does the work"))
        else:
            out.extend(_check_tier(name, settings, cfg.tiers.sandbox))
    return out


def _env(settings: TierSettings) -> dict[str, str]:
    env = proc.minimal_env(_pass_env(settings.env))
    for key, value in settings.env_defaults.items():
        env.setdefault(key, value)
    return env


def _first_line(result: proc.ProcResult) -> str:
    text = (result.stdout_text.strip() or result.stderr_text.strip()).splitlines()
    return text[0][:80] if text else ""


def _check_tier(name: str, settings: TierSettings, mode: str) -> list[Finding]:
    check = f"tier {name}"
    env = _env(settings)
    program = shutil.which(settings.program, path=env.get("PATH"))
    if program is None:
        return [
            Finding(
                check,
                "fail",
                f"program not found: {settings.program}",
                f'install it, or set [tiers.{name}] mode = "off"',
            )
        ]
    real = os.path.realpath(program)
    shown = program if real == program else f"{program} -> {real}"
    version = proc.run([program, "--version"], env=env, timeout=VERSION_TIMEOUT_S)
    if not version.ok:
        return [
            Finding(
                check,
                "fail",
                f"{shown} does not run (--version: "
                f"{version.error or _first_line(version) or version.returncode})",
                f"reinstall {settings.program}",
            )
        ]
    out = [Finding(check, "ok", f"{shown}: {_first_line(version)}")]
    out.append(_under_sandbox(name, settings, program, mode, env))
    out.extend(_writable(name, settings, env))
    out.append(_api(name, settings, env))
    return out


def _under_sandbox(
    name: str, settings: TierSettings, program: str, mode: str, env: dict[str, str]
) -> Finding:
    check = f"tier {name} sandbox"
    with tempfile.TemporaryDirectory(prefix="incidents-doctor-") as tmp:
        workdir, prompt = Path(tmp) / "work", Path(tmp) / "prompt.md"
        workdir.mkdir()
        prompt.write_text("")
        argv, bwrap, error = _containment(
            sandbox.Containment(mode), settings, [program, "--version"], workdir, prompt, env
        )
        if error:
            return Finding(check, "fail", error, "see [tiers] sandbox in the README")
        if bwrap is None:
            return Finding(check, "ok", "detection only: it runs as it did above")
        result = proc.run(argv, env=env, timeout=VERSION_TIMEOUT_S, cwd=workdir)
    if result.ok:
        return Finding(check, "ok", f"starts under {bwrap}: {_first_line(result)}")
    why = sandbox.cannot_show(result.stderr_text) or result.error or _first_line(result)
    return Finding(
        check,
        "fail",
        f"does not start under {bwrap}: {why}",
        'install the program outside /tmp, or set [tiers] sandbox = "none"',
    )


def _writable(name: str, settings: TierSettings, env: dict[str, str]) -> list[Finding]:
    out: list[Finding] = []
    for path in sandbox.expand(settings.writable, env):
        check = f"tier {name} writable"
        if not os.path.lexists(path):
            kind = "file (0600)" if os.path.splitext(path)[1] else "folder (0700)"
            out.append(
                Finding(check, "ok", f"{path}: missing, the first run creates it as a " f"{kind}")
            )
        elif os.access(path, os.W_OK):
            out.append(Finding(check, "ok", f"{path}: writable"))
        else:
            out.append(
                Finding(
                    check,
                    "fail",
                    f"{path}: not writable by this user",
                    f"give this user write access to {path}",
                )
            )
    return out


def _api(name: str, settings: TierSettings, env: dict[str, str]) -> Finding:
    found = api_rules.api_settings(settings, {**os.environ, **env})
    present = sorted(k for k, v in found.items() if v)
    absent = sorted(k for k, v in found.items() if not v)
    detail = f"set: {', '.join(present) or 'none'}; not set: {', '.join(absent) or 'none'}"
    keys = [k for k in present if "KEY" in k or "TOKEN" in k]
    if keys:
        return Finding(f"tier {name} API", "ok", detail)
    return Finding(
        f"tier {name} API",
        "warn",
        f"{detail} (no key or token: only the CLI's own " "login can work)",
        f"set the API key the {name} CLI reads",
    )
