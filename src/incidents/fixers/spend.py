"""What the AI fixers spent, and the limits on it (`[policy] max_cost_usd_per_day`,
`max_cost_usd_per_incident`, `max_tokens_per_incident`).

Each AI attempt records its model, tokens and cost as the CLI reported them
(`fixers.readout`). The attempts live in each incident's state.json; for sums across
incidents (per group, per day) every attempt is also one line of the root's spend ledger,
`.state/spend/<UTC day>.jsonl` — appended once per attempt, keyed by incident and step, so
a step redone after a crash is counted once however often its line was written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only a type here: status --json reads the ledger without the models
    from incidents.models import AIAttempt

LEDGER = "spend"


@dataclass
class Spend:
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    models: list[str] = field(default_factory=list)

    def add(self, doc: dict[str, Any]) -> None:
        self.attempts += 1
        self.input_tokens += int(doc.get("input_tokens") or 0)
        self.output_tokens += int(doc.get("output_tokens") or 0)
        self.cost_usd = round(self.cost_usd + float(doc.get("cost_usd") or 0.0), 6)
        model = doc.get("model")
        if model and model not in self.models:
            self.models.append(str(model))

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def of_attempts(attempts: Iterable[AIAttempt]) -> Spend:
    out = Spend()
    for attempt in attempts:
        out.add(attempt.model_dump(mode="json"))
    return out


def _day_file(state: Path, when: datetime) -> Path:
    return state / LEDGER / f"{when.date().isoformat()}.jsonl"


def record(state: Path, incident_id: str, group: str, attempt: AIAttempt, now: datetime) -> None:
    """One ledger line for `attempt` (a single O_APPEND write: whole lines, never torn)."""
    doc = {
        "incident": incident_id,
        "group": group,
        "step": attempt.step,
        "tier": attempt.agent,
        "model": attempt.model,
        "input_tokens": attempt.input_tokens,
        "output_tokens": attempt.output_tokens,
        "cost_usd": attempt.cost_usd,
        "at": now.isoformat(),
    }
    path = _day_file(state, now)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(doc, sort_keys=True) + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    seen: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue  # a line cut by a full disk: the rest still counts
        if isinstance(doc, dict):
            seen[(doc.get("incident"), doc.get("step"), doc.get("tier"))] = doc
    return list(seen.values())


def _sums(docs: Iterable[dict[str, Any]], groups: dict[str, Spend]) -> dict[str, Spend]:
    """The ledger lines' total (key ""), and per incident; each line also added to its
    group in `groups`."""
    out: dict[str, Spend] = {"": Spend()}
    for doc in docs:
        out[""].add(doc)
        groups.setdefault(str(doc.get("group")), Spend()).add(doc)
        out.setdefault(str(doc.get("incident")), Spend()).add(doc)
    return out


def _by(sums: dict[str, Spend]) -> dict[str, Any]:
    return {k: v.to_json() for k, v in sorted(sums.items()) if k}


def day(state: Path, when: datetime) -> dict[str, Any]:
    """The day's spend (UTC): in all, per group and per incident."""
    groups: dict[str, Spend] = {}
    sums = _sums(_lines(_day_file(state, when)), groups)
    return {
        "day": when.date().isoformat(),
        **sums[""].to_json(),
        "by_group": _by(groups),
        "by_incident": _by(sums),
    }


def recent(state: Path, last: int = 14) -> dict[str, Any]:
    """The last `last` UTC days that had spend, newest first, each in all, and what each
    group spent in those days."""
    folder = state / LEDGER
    try:
        names = sorted((n for n in os.listdir(folder) if n.endswith(".jsonl")), reverse=True)
    except OSError:
        names = []
    groups: dict[str, Spend] = {}
    days = [
        {"day": name.removesuffix(".jsonl"), **_sums(_lines(folder / name), groups)[""].to_json()}
        for name in names[:last]
    ]
    return {"days": days, "by_group": _by(groups)}


@dataclass(frozen=True)
class Limit:
    """A spend limit reached: why, when it may lift (the next UTC day for the daily one,
    else an hour from now, for a person to raise it), and the setting as it stands
    (`max_cost_usd_per_day = 5`: an alert is due again once it changes)."""

    why: str
    until: datetime
    setting: str
    day: str  # the UTC day it was reached on

    @property
    def daily(self) -> bool:
        return self.setting.startswith("max_cost_usd_per_day")


def limit_reached(policy: Any, state: Path, own: Spend, now: datetime) -> Limit | None:
    """The spend limit already reached, or None."""
    per_incident = policy.max_cost_usd_per_incident
    if per_incident is not None and own.cost_usd >= per_incident:
        setting = f"max_cost_usd_per_incident = {per_incident:g}"
        why = f"spend limit: this incident spent ${own.cost_usd:.4f} of [policy] {setting}"
        return Limit(why, now + timedelta(hours=1), setting, now.date().isoformat())
    tokens = policy.max_tokens_per_incident
    if tokens is not None and own.tokens >= tokens:
        setting = f"max_tokens_per_incident = {tokens}"
        why = f"spend limit: this incident used {own.tokens} tokens of [policy] {setting}"
        return Limit(why, now + timedelta(hours=1), setting, now.date().isoformat())
    per_day = policy.max_cost_usd_per_day
    if per_day is not None:
        spent = float(day(state, now)["cost_usd"])
        if spent >= per_day:
            tomorrow = datetime.combine(
                now.date() + timedelta(days=1), datetime.min.time(), tzinfo=now.tzinfo
            )
            setting = f"max_cost_usd_per_day = {per_day:g}"
            why = f"spend limit: ${spent:.4f} spent today (UTC) of [policy] {setting}"
            return Limit(why, tomorrow, setting, now.date().isoformat())
    return None
