"""Read the archive's bundles into plain, render-ready records (no HTML here).

Every bundle file is read with the same caps as everywhere else (`fsutil`); a file that is
missing or does not parse leaves its part of the card empty and adds a note, so one broken
bundle never hides the others.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents import artifacts
from incidents.errors import IncidentsError
from incidents.evidence import Evidence, derive
from incidents.evidence import as_object as _obj
from incidents.evidence import first_text as _text
from incidents.fixers.spend import Spend
from incidents.fsutil import read_json, read_regular_file
from incidents.layout import Root
from incidents.redact import redact, redact_json

DIFF_MAX_BYTES = 256 * 1024  # per target file, each side
DIFF_MAX_LINES = 400  # per target file; the rest is summarised
LOG_TAIL_BYTES = 8 * 1024  # of log_tail.txt shown on a card (the end: where failures are)
LOG_FILE_MAX_BYTES = 16 * 1024 * 1024 + 4096  # [capture] log_tail_bytes' cap, and its note
LABEL_RE = re.compile(rf"{artifacts.REPORT_PREFIX}(\w+)\.json")


@dataclass(frozen=True, slots=True)
class Check:
    """One canonical check: its label (`0`, `0b`, `1`...) and counts per category."""

    label: str
    at: str
    counts: dict[str, int]
    fixed: list[str]
    introduced: list[str]
    infra: list[str]  # tools that could not give an answer: "0 issues" then means nothing

    def summary(self) -> str:
        total = sum(self.counts.values())
        if self.infra:
            return f"{total} issue(s); not checked: {'; '.join(self.infra)}"
        return f"{total} issue(s)"


@dataclass(frozen=True, slots=True)
class Step:
    """One line of the timeline."""

    at: str
    what: str
    detail: str


@dataclass(frozen=True, slots=True)
class Note:
    """One AI attempt: who, what changed, what it said."""

    number: int
    at: str
    agent: str
    changed: list[str]
    exit_code: int | None
    notes: str
    violations: list[str]
    handoff: bool
    contained: bool | None = None
    sandbox: str | None = None
    spend: str = ""  # model, tokens and cost as the fixer reported them


def spend_text(item: dict[str, Any]) -> str:
    """An attempt's spend in words ("" when it reported none)."""
    parts = [str(item["model"])] if item.get("model") else []
    tin, tout, cost = item.get("input_tokens"), item.get("output_tokens"), item.get("cost_usd")
    if isinstance(tin, int) or isinstance(tout, int):
        parts.append(f"{tin or 0} tokens in, {tout or 0} out")
    if isinstance(cost, (int, float)):
        parts.append(f"${cost:.4f}")
    return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class FileDiff:
    path: str
    text: str  # a unified diff, or a sentence saying why there is none


@dataclass
class Card:
    incident_id: str
    bucket: str
    at: str  # when it was closed (newest first)
    reason: str = ""
    final_status: str = ""
    outcome: str = ""  # fixed, not_reproduced (flaky), changed_before_check, escalated
    flaky_count: int = 0  # archived incidents of its signature closed as not reproduced
    escalation_kind: str = ""
    last_state: str = ""
    step: str = ""
    failure_class: str = ""
    error_code: str = ""
    signature: str = ""
    message: str = ""
    occurrences: int = 1
    created_at: str = ""
    group: str = ""  # its group key when a person's decision made it other than the signature
    group_decisions: list[str] = field(default_factory=list)  # merges and splits, one line each
    regression_of: str = ""  # the resolved incident of its group it regresses
    regression_count: int = 0
    checks: list[Check] = field(default_factory=list)
    timeline: list[Step] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    diffs: list[FileDiff] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    evidence: Evidence | None = None  # the headline, tests, findings, log tail, decision
    spend: Spend = field(default_factory=Spend)  # its AI attempts' sums (incidents.fixers.spend)


def _load(folder: Path, name: str, problems: list[str]) -> Any:
    path = folder / name
    if not path.exists():
        return None
    try:
        return redact_json(read_json(path))  # a bundle written by hand never met capture
    except (IncidentsError, OSError) as exc:
        problems.append(f"{name}: {exc}")
        return None


def _label_key(label: str) -> tuple[int, str]:
    digits = re.match(r"\d+", label)
    return (int(digits.group()) if digits else 1 << 30, label)


def _issue_key(issue: Any) -> str:
    if not isinstance(issue, dict):
        return str(issue)
    where = issue.get("path") or "?"
    return f"{issue.get('tool', '?')} {issue.get('code') or issue.get('category', '?')} {where}: {issue.get('message', '')}"


def _checks(
    folder: Path, state: dict[str, Any], problems: list[str]
) -> tuple[list[Check], dict[str, Any]]:
    """The checks in order, and the last canonical report (what the end was decided on)."""
    reports = folder / "error_reports"
    found = {}
    if reports.is_dir():
        for entry in os.scandir(reports):
            m = LABEL_RE.fullmatch(entry.name)
            if m:
                found[m.group(1)] = entry.name
    order = [str(x) for x in state.get("report_labels") or [] if str(x) in found]
    order += sorted((x for x in found if x not in order), key=_label_key)
    checks: list[Check] = []
    before: Counter[str] = Counter()
    doc: dict[str, Any] = {}
    for label in order:
        doc = _obj(_load(reports, found[label], problems))
        summary = _obj(doc.get("summary"))
        counts = {
            str(k): int(v)
            for k, v in _obj(summary.get("issues_by_category")).items()
            if isinstance(v, int)
        }
        issues = doc.get("issues")
        now = Counter(_issue_key(i) for i in (issues if isinstance(issues, list) else []))
        checks.append(
            Check(
                label=label,
                at=_text(doc, "generated_at"),
                counts=counts,
                fixed=sorted((before - now).elements()) if checks else [],
                introduced=sorted((now - before).elements()) if checks else [],
                infra=_infra(doc.get("infra_failures")),
            )
        )
        before = now
    return checks, doc


def _infra(items: Any) -> list[str]:
    return [
        f"{item.get('tool') or '?'}: {item.get('reason') or 'failed'}"
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict)
    ]


def _notes(doc: Any) -> list[Note]:
    notes: list[Note] = []
    for item in doc if isinstance(doc, list) else []:
        if not isinstance(item, dict):
            continue
        code = item.get("exit_code")
        notes.append(
            Note(
                number=int(item.get("attempt_number") or len(notes) + 1),
                at=str(item.get("started_at") or ""),
                agent=str(item.get("agent") or "?"),
                changed=[str(x) for x in item.get("changed_files") or []],
                exit_code=code if isinstance(code, int) else None,
                notes=str(item.get("notes") or ""),
                violations=[str(x) for x in item.get("violations") or []],
                handoff=bool(item.get("handoff")),
                contained=(
                    item.get("contained") if isinstance(item.get("contained"), bool) else None
                ),
                sandbox=str(item["sandbox"]) if item.get("sandbox") else None,
                spend=spend_text(item),
            )
        )
    return notes


def _spent(into: Spend, *lists: Any) -> None:
    """Every attempt's spend, the calls the API refused included (as `status ID` sums)."""
    for items in lists:
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                with contextlib.suppress(TypeError, ValueError):  # a bundle edited by hand
                    into.add(item)


def _read_text(path: Path) -> str | None:
    try:
        return read_regular_file(path, DIFF_MAX_BYTES).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    except (IncidentsError, OSError) as exc:
        return f"\0{exc}"


def _linked_on_the_way(base: Path, target: str) -> bool:
    """Whether `base` or a folder between it and `target` is a symbolic link (one that
    leaves the bundle would be followed: read_regular_file refuses a link only as the
    file itself)."""
    here = base
    for part in ("", *Path(target).parts[:-1]):
        here = here / part if part else here
        if here.is_symlink():
            return True
    return False


def _side(folder: Path, side: str, target: str) -> str | None:
    if _linked_on_the_way(folder / side, target):
        return f"\0{side}/{target}: a folder on its path is a symbolic link"
    return _read_text(folder / side / target)


def _diff_one(folder: Path, target: str) -> FileDiff:
    if target.startswith("/") or ".." in Path(target).parts:
        return FileDiff(target, "not shown: the path leaves the bundle")
    original = _side(folder, "original_scripts", target)
    final = _side(folder, "final_scripts", target)
    for side in (original, final):
        if side is not None and side.startswith("\0"):
            return FileDiff(target, f"not shown: {side[1:]}")
    if original is None:
        return FileDiff(target, "original not kept")
    if final is None:
        return FileDiff(target, "final version not kept")
    if original == final:
        return FileDiff(target, "unchanged: the final file is the original")
    lines = list(
        difflib.unified_diff(
            original.splitlines(),
            final.splitlines(),
            f"original/{target}",
            f"final/{target}",
            lineterm="",
        )
    )
    if len(lines) > DIFF_MAX_LINES:
        rest = len(lines) - DIFF_MAX_LINES
        lines = lines[:DIFF_MAX_LINES] + [f"... {rest} more diff lines (see the bundle)"]
    return FileDiff(target, redact("\n".join(lines)))


def _targets(folder: Path, meta: dict[str, Any], incident: dict[str, Any]) -> list[str]:
    named = meta.get("target_files") or [
        *(incident.get("python_files") or []),
        *(incident.get("powershell_files") or []),
    ]
    targets = [str(x) for x in named if isinstance(x, str)]
    for side in ("original_scripts", "final_scripts"):
        base = folder / side
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                rel = path.relative_to(base).as_posix()
                if path.is_file() and rel not in targets:
                    targets.append(rel)
    return targets


def _timeline(card: Card, folder: Path, state: dict[str, Any], meta: dict[str, Any]) -> None:
    steps = [Step(card.created_at, "captured", f"{card.occurrences} occurrence(s)")]
    for check in card.checks:
        steps.append(Step(check.at, f"check {check.label}", check.summary()))
    attempts = folder / "attempts"
    if attempts.is_dir():
        for name in sorted(
            n for n in os.listdir(attempts) if re.fullmatch(r"attempt_\d+\.json", n)
        ):
            doc = _obj(_load(attempts, name, card.problems))
            actions = ", ".join(str(a) for a in doc.get("actions_applied") or []) or "-"
            detail = f"{actions} -> {doc.get('result', '?')}"
            if isinstance(doc.get("total_issues"), int):
                detail += f" ({doc['total_issues']} issue(s) left)"
            steps.append(Step(_text(doc, "started_at"), _text(doc, "state") or name, detail))
    for note in card.notes:
        changed = ", ".join(note.changed) or "no files changed"
        steps.append(Step(note.at, f"AI attempt {note.number}", f"{note.agent}: {changed}"))
    steps.sort(key=lambda s: s.at or "~")  # stable; steps without a time go last
    end = _text(meta, "finished_at") or card.at
    final = card.last_state or _text(state, "current_state") or card.bucket
    steps.append(Step(end, final, card.final_status or card.bucket))
    card.timeline = steps


def read_card(folder: Path, bucket: str) -> Card:
    """One bundle as a card; never raises for a bad file inside it."""
    problems: list[str] = []
    incident = _obj(_load(folder, artifacts.INCIDENT, problems))
    state = _obj(_load(folder, artifacts.STATE, problems))
    meta = _obj(_load(folder, artifacts.METADATA, problems))
    occurrences = incident.get("occurrences")
    card = Card(
        incident_id=folder.name,
        bucket=bucket,
        at=_text(meta, "finished_at") or _text(incident, "updated_at", "created_at"),
        reason=_text(meta, "reason")
        or _text(state, "escalation_reason")
        or _text(incident, "resolution"),
        final_status=_text(meta, "final_status") or _text(state, "final_status") or bucket,
        outcome=_text(state, "outcome"),
        escalation_kind=_text(meta, "escalation_kind") or _text(state, "escalation_kind"),
        last_state=_text(meta, "last_state") or _text(state, "current_state"),
        step=_text(incident, "step") or "?",
        failure_class=_text(incident, "failure_class") or "?",
        error_code=_text(incident, "error_code"),
        signature=_text(incident, "error_signature") or _text(meta, "error_signature"),
        message=_text(incident, "message"),
        occurrences=occurrences if isinstance(occurrences, int) else 1,
        created_at=_text(incident, "created_at"),
        problems=problems,
    )
    _group(card, incident)
    card.checks, report = _checks(folder, state, problems)
    attempts = _load(folder, artifacts.AI_ATTEMPTS, problems) or state.get("ai_attempts")
    card.notes = _notes(attempts)
    _spent(card.spend, state.get("ai_attempts") or attempts, state.get("unbudgeted_attempts"))
    card.diffs = [_diff_one(folder, t) for t in _targets(folder, meta, incident)]
    _timeline(card, folder, state, meta)
    card.evidence = derive(
        card.incident_id,
        bucket=bucket,
        incident=incident,
        state=state,
        metadata=meta,
        report=report,
        log_tail=_log_tail(folder, problems),
    )
    return card


def _log_tail(folder: Path, problems: list[str]) -> str:
    """The end of log_tail.txt, redacted (a bundle written by hand never met capture)."""
    path = folder / artifacts.LOG_TAIL
    try:
        raw = read_regular_file(path, LOG_FILE_MAX_BYTES)
    except FileNotFoundError:
        return ""
    except (IncidentsError, OSError) as exc:
        problems.append(f"{artifacts.LOG_TAIL}: {exc}")
        return ""
    text = raw[-LOG_TAIL_BYTES:].decode("utf-8", "replace")
    if len(raw) > LOG_TAIL_BYTES:
        text = text.partition("\n")[2]  # no half line at the top
    return redact(text)


def _group(card: Card, incident: dict[str, Any]) -> None:
    """Its group decisions and regression (incidents.grouping), as the card shows them."""
    from incidents.grouping import decisions_of, group_of

    decisions = decisions_of(incident)
    if decisions or group_of(incident) != card.signature:
        card.group = group_of(incident)
    card.group_decisions = [
        f"{d.get('kind')} {d.get('at')} by {d.get('by')}: {d.get('from')} -> {d.get('to')}: "
        f"{d.get('reason')}"
        for d in decisions
    ]
    count = incident.get("regression_count")
    card.regression_of = _text(incident, "regression_of")
    card.regression_count = count if isinstance(count, int) and card.regression_of else 0


def read_bucket(root: Root, bucket: str) -> list[Card]:
    """Every bundle of an archive bucket, newest first."""
    base = root.bucket(bucket)
    if not base.is_dir():
        return []
    cards = [
        read_card(Path(entry.path), bucket)
        for entry in os.scandir(base)
        if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
    ]
    cards.sort(key=lambda c: (c.at, c.incident_id), reverse=True)
    return cards


def count_flaky(cards: list[Card]) -> None:
    """Set each card's `flaky_count`: how many of `cards` with its signature closed as not
    reproduced (read from the folders, like everything the review shows)."""
    counts = Counter(c.signature for c in cards if c.outcome == "not_reproduced")
    for card in cards:
        card.flaky_count = counts.get(card.signature, 0)
