"""A tier's standing with its API, shared by every incident of a root (`.state/tiers/`).

Seed 002's rules, applied to the fixer call by the error code the fixer itself reported
(`fixers.readout`):

- RATE_LIMIT and OVERLOADED: the tier cools down — until the reset the output gave
  (`Retry-After`), else for a backoff that doubles with each strike in a row (from
  `BASE_S` up to `MAX_S`). No tier runs for an incident in its place (the next tier would
  hit the same limit, as like as not, and spend a budget unit on it); the incident waits
  in the tier's FIX state, saying why, and no budget unit is spent.
- AUTH: the tier is disabled until its configuration changes — its settings or the
  values of the environment variables it passes through (a new key), compared by a
  digest, never stored. An incident reaching a disabled tier fails fast as an
  infrastructure escalation naming the tier and the settings to fix, without a call.

A run that reports no API failure clears the tier's record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from incidents import fsutil
from incidents.errors import IncidentsError
from incidents.fixers.readout import AUTH, OVERLOADED, RATE_LIMIT

BASE_S = 30.0
MAX_S = 1800.0
WAITING = frozenset({RATE_LIMIT, OVERLOADED})


@dataclass(frozen=True)
class Standing:
    """Why the tier must not run now: `until` (a cool-down) or a disabled configuration."""

    code: str
    reason: str
    until: datetime | None = None


def _path(state: Path, tier: str) -> Path:
    return state / "tiers" / f"{tier}.json"


def _read(state: Path, tier: str) -> dict[str, object]:
    try:
        return fsutil.read_json_object(_path(state, tier))
    except (FileNotFoundError, IncidentsError, OSError, ValueError):
        return {}


def fingerprint(settings_json: str, env: dict[str, str]) -> str:
    """A digest of the tier's settings and the values it passes through (keys, tokens)."""
    doc = json.dumps([settings_json, sorted(env.items())])
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


def standing(state: Path, tier: str, now: datetime, config: str) -> Standing | None:
    """Why `tier` must not run now, or None. `config`: its `fingerprint` now."""
    doc = _read(state, tier)
    code, reason = str(doc.get("code") or ""), str(doc.get("reason") or "")
    if code == AUTH:
        return Standing(code, reason) if doc.get("config") == config else None
    until = doc.get("until")
    if code in WAITING and isinstance(until, str):
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(until)
            if now < when:
                return Standing(code, reason, when)
    return None


def record(
    state: Path,
    tier: str,
    code: str | None,
    reason: str,
    now: datetime,
    retry_after_s: float | None,
    config: str,
) -> Standing | None:
    """What a run's error `code` means for the tier from now on (see the module docstring);
    None when it may run again at once."""
    path = _path(state, tier)
    if code is None or code not in (*WAITING, AUTH):
        if code is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        return None
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if code == AUTH:
        fsutil.atomic_write_json(
            path, {"code": code, "reason": reason, "config": config, "at": now.isoformat()}
        )
        return Standing(code, reason)
    doc = _read(state, tier)
    strikes = int(doc.get("strikes") or 0) + 1 if doc.get("code") in WAITING else 1  # type: ignore[call-overload]
    delay = retry_after_s if retry_after_s and retry_after_s > 0 else None
    delay = min(MAX_S, delay or BASE_S * 2 ** (strikes - 1))
    until = now + timedelta(seconds=delay)
    fsutil.atomic_write_json(
        path,
        {
            "code": code,
            "reason": reason,
            "until": until.isoformat(),
            "strikes": strikes,
            "at": now.isoformat(),
        },
    )
    return Standing(code, reason, until)
