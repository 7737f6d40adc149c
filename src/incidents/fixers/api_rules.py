"""What the escalation machine does with a fixer call the API refused (seed 002's rules,
`fixers.cooldown`): a decision before the call (the tier is cooling down, or disabled)
and after it (by the error code the fixer reported)."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from incidents.fixers import cooldown
from incidents.fixers.readout import AUTH
from incidents.fixers.settings import TierSettings

# the settings that carry a CLI's credentials and endpoint (names only, never values)
_SECRET_WORDS = ("KEY", "TOKEN", "BASE", "URL", "HOME", "CONFIG")


@dataclass(frozen=True)
class Decision:
    """`budgeted`: the call counts as a try (seed 003); `wait`/`until`: the incident waits
    for the same tier; `infra`: an infrastructure escalation's reason."""

    budgeted: bool = True
    wait: str | None = None
    until: datetime | None = None
    infra: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "budgeted": self.budgeted,
            "wait": self.wait,
            "infra": self.infra,
            "until": self.until.isoformat() if self.until else None,
        }

    @classmethod
    def from_json(cls, doc: object) -> Decision | None:
        if not isinstance(doc, dict):
            return None
        until = doc.get("until")
        return cls(
            bool(doc.get("budgeted", True)),
            doc.get("wait"),
            datetime.fromisoformat(until) if isinstance(until, str) else None,
            doc.get("infra"),
        )


def api_settings(settings: TierSettings, env: dict[str, str] | None = None) -> dict[str, bool]:
    """The tier's credential and endpoint variables (its `env` names that say KEY, TOKEN,
    BASE, URL, HOME or CONFIG; a prefix pattern by the variables set), each with whether
    it is set. Names only: a value never leaves this function."""
    values = os.environ if env is None else env
    out: dict[str, bool] = {}
    for name in settings.env:
        if name.endswith("*"):
            for key in sorted(values):
                if fnmatch.fnmatchcase(key, name) and any(w in key for w in _SECRET_WORDS):
                    out[key] = True
        elif any(w in name for w in _SECRET_WORDS):
            out[name] = bool(values.get(name))
    return out


def fingerprint(settings: TierSettings) -> str:
    passed = {k: v for k, v in os.environ.items() if k in api_settings(settings)}
    return cooldown.fingerprint(settings.model_dump_json(), passed)


def _fix_hint(tier: str, settings: TierSettings) -> str:
    found = api_settings(settings)
    present = ", ".join(k for k, v in found.items() if v) or "none set"
    return (
        f"the {tier} tier is disabled until its configuration changes: fix its API key or "
        f"endpoint ([tiers.{tier}] or the variables it passes: {present})"
    )


def before(state: Path, tier: str, settings: TierSettings, now: datetime) -> Decision | None:
    """Why `tier` must not be called now (a decision without a call), or None."""
    found = cooldown.standing(state, tier, now, fingerprint(settings))
    if found is None:
        return None
    if found.code == AUTH:
        return Decision(False, infra=f"{found.reason}; {_fix_hint(tier, settings)}")
    return Decision(False, wait=_waiting(tier, found), until=found.until)


def after(
    state: Path,
    tier: str,
    settings: TierSettings,
    code: str | None,
    message: str,
    retry_after_s: float | None,
    now: datetime,
) -> Decision:
    """The decision on a call that reported `code` (None: judged by its edits as usual)."""
    reason = f"{code}: {message}" if message else str(code)
    found = cooldown.record(state, tier, code, reason, now, retry_after_s, fingerprint(settings))
    if found is None:
        return Decision()
    if found.code == AUTH:
        return Decision(False, infra=f"{reason}; {_fix_hint(tier, settings)}")
    return Decision(False, wait=_waiting(tier, found), until=found.until)


def _waiting(tier: str, found: cooldown.Standing) -> str:
    until = found.until.isoformat(timespec="seconds") if found.until else "?"
    return (
        f"{tier} cools down until {until} ({found.reason}); no other tier runs in its place "
        "and no budget is spent"
    )
