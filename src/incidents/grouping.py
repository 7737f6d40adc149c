"""Which group an incident belongs to, and the index files that let capture find a
group's open incident, its latest resolved one and where a merged signature went.

A **group** is named by a key: an incident's `error_signature` until a person decides
otherwise (`incidents group merge|split`, `incidents.groups`), then the key its
`incident.json` records (`group.key`). Captures fold into a group's open incident;
fixer budgets and regressions count per group.

Four kinds of hint under `.state/`, each one small file named by `signature_key`:

    signatures/<key(group)>      the group's open incident id (capture's dedupe index)
    groups/<key(signature)>      where a merged signature's captures go: {"signature",
                                 "group", "decision"} (rebuilt by `reindex` from the
                                 bundles' decisions; without it a capture of a merged
                                 signature would open a group of its own)
    resolved/<key(group)>        the group's latest resolved incident: {"group",
                                 "incident_id", "closed_at", "closed_ts"} (written by
                                 the close, rebuilt by `reindex`), so that finding a
                                 regression is two small reads, not a walk or SQLite

Every hint is verified against the bundle it names before capture believes it.
Standard library only: capture imports it.
"""

from __future__ import annotations

import json
import os
import time

from incidents import fsutil
from incidents.errors import IncidentsError
from incidents.layout import GROUPS, STATE, Root

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from typing import Any

OPEN_DIR, ALIAS_DIR, RESOLVED_DIR = "signatures", GROUPS, "resolved"
REGRESSIONS_DIR = "regressions"
SPLIT_PREFIX = "split:"
_HINT_MAX = 64 * 1024


def _key(text: str) -> str:
    from incidents.signature import signature_key

    return signature_key(text)


def who() -> str:
    """The user making a decision by hand (a group merge or split, an archive)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get("USER") or f"uid {os.getuid()}"


def group_of(doc: dict[str, Any]) -> str:
    """The group key of an incident document: its `group.key`, else its signature."""
    group = doc.get("group")
    if isinstance(group, dict):
        key = group.get("key")
        if isinstance(key, str) and key:
            return key
    return str(doc.get("error_signature") or "")


def decisions_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The group decisions an incident document records, oldest first."""
    group = doc.get("group")
    found = group.get("decisions") if isinstance(group, dict) else None
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def detached(decisions: list[dict[str, Any]]) -> bool:
    """Split from its signature at some point: captures of its signature never follow it."""
    return any(d.get("kind") == "split" for d in decisions)


def aliases_from(
    history: list[tuple[str, str, list[dict[str, Any]]]],
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Where merged signatures' captures go, replayed from every bundle's decisions:
    `history` holds (signature, group key, decisions oldest first) of each incident. A
    merge sends its `from` (a signature's own group) and the signature of each bundle it
    moved that was not split before it to its `to`; a later split of that bundle takes the
    bundle out of the group but leaves the signature's captures where the merge sent them,
    as a live `incidents group split` does. Merges apply oldest first (their `at`, then
    their place in a bundle); a bundle moved without a decision (written by hand) sends
    its signature to its group, before any decision."""
    events: list[tuple[str, int, set[str], str, dict[str, Any]]] = []
    for signature, group, decisions in history:
        split_yet = False
        for place, decision in enumerate(decisions):
            split_yet = split_yet or decision.get("kind") == "split"
            target, source = decision.get("to"), decision.get("from")
            if decision.get("kind") != "merge" or not isinstance(target, str) or not target:
                continue
            sent = set() if split_yet else {signature}
            if isinstance(source, str) and source and not source.startswith(SPLIT_PREFIX):
                sent.add(source)
            events.append((str(decision.get("at") or ""), place, sent, target, decision))
        if group != signature and not decisions:
            events.append(("", -1, {signature}, group, {}))
    aliases: dict[str, tuple[str, dict[str, Any]]] = {}
    for _, _, sent, target, decision in sorted(events, key=lambda e: (e[0], e[1])):
        for signature in sent:
            aliases[signature] = (target, decision)
    return {s: a for s, a in aliases.items() if s and a[0] != s}


def split_key(incident_id: str) -> str:
    """The key of the group an incident starts when it is split from its own."""
    return f"{SPLIT_PREFIX}{incident_id}"


def hint_path(root: Root, kind: str, text: str) -> str:
    return root.sub(STATE, kind, _key(text))  # a str: no pathlib on the capture path


def _read_hint(path: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(fsutil.read_regular_file(path, _HINT_MAX))
    except (FileNotFoundError, IncidentsError, OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _write_hint(path: str, doc: dict[str, Any] | None) -> None:
    """Replace (or with None remove) a hint. Not fsynced: `reindex` rebuilds them."""
    if doc is None:
        fsutil.discard(path)
        return
    fsutil.ensure_dir(os.path.dirname(path))
    data = json.dumps(doc, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"
    fsutil.atomic_write_bytes(path, data, durable=False)


# --- merged signatures -------------------------------------------------------------------


def read_alias(root: Root, signature: str) -> tuple[str, dict[str, Any]] | None:
    """(the group a merged signature's captures join, the merge decision), or None."""
    if not os.path.isdir(root.sub(STATE, ALIAS_DIR)):
        return None  # no merge ever: one stat, no key to hash (capture's path)
    doc = _read_hint(hint_path(root, ALIAS_DIR, signature))
    if doc is None or doc.get("signature") != signature:
        return None
    group, decision = doc.get("group"), doc.get("decision")
    if not isinstance(group, str) or not group or group == signature:
        return None
    return group, decision if isinstance(decision, dict) else {}


def write_alias(root: Root, signature: str, group: str | None, decision: dict[str, Any]) -> None:
    """`signature`'s captures join `group` from now on (None: their own again)."""
    path = hint_path(root, ALIAS_DIR, signature)
    if group is None or group == signature:
        _write_hint(path, None)
    else:
        _write_hint(path, {"signature": signature, "group": group, "decision": decision})


# --- a group's open incident (capture's dedupe index) -------------------------------------


def read_open(root: Root, group: str) -> str | None:
    try:
        data = fsutil.read_regular_file(hint_path(root, OPEN_DIR, group), 256)
        return data.decode().strip() or None
    except (FileNotFoundError, IncidentsError, OSError, UnicodeDecodeError):
        return None


def write_open(root: Root, group: str, incident_id: str | None) -> None:
    """A hint (a lost one costs a duplicate incident, never data): no fsync."""
    path = hint_path(root, OPEN_DIR, group)
    if incident_id is None:
        _write_hint(path, None)
        return
    fsutil.ensure_dir(os.path.dirname(path))
    fsutil.atomic_write_bytes(path, (incident_id + "\n").encode(), durable=False)


# --- a group's latest resolved incident (regressions) -------------------------------------


def read_resolved(root: Root, group: str) -> dict[str, Any] | None:
    doc = _read_hint(hint_path(root, RESOLVED_DIR, group))
    if doc is None or doc.get("group") != group:
        return None
    if not isinstance(doc.get("incident_id"), str) or not isinstance(
        doc.get("closed_ts"), int | float
    ):
        return None
    return doc


def write_resolved(root: Root, group: str, entry: dict[str, Any] | None) -> None:
    """The group's latest resolved incident: `entry` has `incident_id`, `closed_at` (ISO)
    and `closed_ts` (POSIX seconds); None removes it."""
    _write_hint(hint_path(root, RESOLVED_DIR, group), None if entry is None else {
        "group": group, **entry})  # fmt: skip


def note_resolved(root: Root, doc: dict[str, Any], closed_ts: float | None = None) -> None:
    """An incident closed into `resolved`: it is its group's latest (unless a later one
    is already noted). Called by every close into `resolved`."""
    group = group_of(doc)
    if not group:
        return
    ts = time.time() if closed_ts is None else closed_ts
    known = read_resolved(root, group)
    if known is not None and known["closed_ts"] > ts:
        return
    from incidents.clock import iso_at

    write_resolved(root, group, {"incident_id": doc["incident_id"], "closed_at": iso_at(ts),
                                 "closed_ts": ts})  # fmt: skip


def find_regression(root: Root, group: str, window_days: int, now: float) -> dict[str, Any] | None:
    """The incident a new capture of `group` regresses: the group's latest resolved one,
    closed within `window_days` (0: regressions are off). Returns the new incident's
    `regression_of` and `regression_count` (one more than the group's regressions so far:
    the highest of the earlier one's count and the hint's, `.state/regressions/`), or None.
    When that close verified no fix (not reproduced, recovered, resolved by a person,
    archived by hand), the new incident is its `recurrence_of` instead, not counted."""
    if window_days <= 0:
        return None
    entry = read_resolved(root, group)
    if entry is None or now - entry["closed_ts"] > window_days * 86400:
        return None
    incident_id = entry["incident_id"]
    try:  # believed only when the bundle says the same
        from incidents.layout import RESOLVED, validate_id

        folder = root.sub(RESOLVED, validate_id(incident_id))
        earlier = fsutil.read_json_object(os.path.join(folder, "incident.json"))
    except (IncidentsError, OSError):
        return None
    if earlier.get("incident_id") != incident_id or group_of(earlier) != group:
        return None
    outcome = _outcome(root, incident_id)
    if outcome not in FIX_OUTCOMES:
        # no fix was verified, so none failed to hold: the failure came back
        return {"recurrence_of": incident_id, "recurrence_after": outcome or "closed by hand"}
    count = max(_count(earlier), _regressions_so_far(root, group))
    return {"regression_of": incident_id, "regression_count": count + 1}


# the closes whose check verified a change made the failure pass: a return is a regression
FIX_OUTCOMES = frozenset({"fixed", "changed_before_check"})


def _outcome(root: Root, incident_id: str) -> str:
    """The earlier incident's close (run_result.json `outcome`; "" when it records none:
    archived by hand)."""
    from incidents.layout import RUNS

    try:
        result = fsutil.read_json_object(
            os.path.join(root.sub(RUNS, incident_id), "run_result.json")
        )
    except (IncidentsError, OSError):
        return ""
    outcome = result.get("outcome")
    return outcome if isinstance(outcome, str) else ""


def _count(doc: dict[str, Any]) -> int:
    count = doc.get("regression_count", 0)
    return max(count, 0) if isinstance(count, int) and not isinstance(count, bool) else 0


def read_regressions(root: Root, group: str) -> dict[str, Any] | None:
    doc = _read_hint(hint_path(root, REGRESSIONS_DIR, group))
    if doc is None or doc.get("group") != group or not isinstance(doc.get("incident_id"), str):
        return None
    return doc if isinstance(doc.get("regression_count"), int) else None


def write_regressions(root: Root, group: str, incident_id: str | None, count: int = 0) -> None:
    """The group's regression counted highest so far (None removes the hint)."""
    _write_hint(hint_path(root, REGRESSIONS_DIR, group), None if incident_id is None else {
        "group": group, "incident_id": incident_id, "regression_count": count})  # fmt: skip


def note_regression(root: Root, group: str, incident: dict[str, Any]) -> None:
    """A capture opened `incident`, a regression of `group`: the count it took is the
    group's so far (a hint: its bundle is read before it is believed)."""
    count = _count(incident)
    if count and isinstance(incident.get("incident_id"), str):
        write_regressions(root, group, incident["incident_id"], count)


def _regressions_so_far(root: Root, group: str) -> int:
    """The count of the group's regression counted highest, escalated or open ones too
    (the latest resolved incident does not know them); 0 when unknown."""
    entry = read_regressions(root, group)
    if entry is None:
        return 0
    from incidents.layout import BUCKETS, validate_id

    try:
        incident_id = validate_id(entry["incident_id"])
    except IncidentsError:
        return 0
    for bucket in BUCKETS.values():  # believed only when the bundle says the same
        try:
            doc = fsutil.read_json_object(
                os.path.join(root.sub(bucket, incident_id), "incident.json")
            )
        except (IncidentsError, OSError):
            continue
        if doc.get("incident_id") == incident_id and group_of(doc) == group:
            return min(_count(doc), int(entry["regression_count"]))
        return 0
    return 0
