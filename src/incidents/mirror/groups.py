"""Groups in the mirror: who is in a group, and capture's hint files kept in step with it.

The `incidents` columns `group_key` and `group_decisions` come from incident.json
(`mirror.scan`); these queries serve `incidents group` (`incidents.groups`), and the hints
(`incidents.grouping`: a group's open incident, its latest resolved one, where a merged
signature's captures go) are rewritten from them after a decision and by `reindex`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from incidents import grouping
from incidents.layout import Root
from incidents.mirror.db import translating
from incidents.mirror.dialect import here
from incidents.signature import signature_key

__all__ = [
    "group_keys",
    "group_members",
    "groups_of_signature",
    "rebuild_hints",
    "refresh_hints",
    "signature_members",
]


@translating
def group_members(conn: sqlite3.Connection, group: str) -> list[tuple[str, str, bool]]:
    """(incident id, signature, split from its signature) of every incident in `group`,
    oldest first."""
    return [
        (str(i), str(s), grouping.detached(json.loads(d)))
        for i, s, d in conn.execute(
            "SELECT incident_id, signature, group_decisions FROM incidents WHERE group_key = ? "
            f"AND {here(conn)} ORDER BY created_at, incident_id",
            (group,),
        ).fetchall()
    ]


@translating
def groups_of_signature(conn: sqlite3.Connection, signature: str) -> list[tuple[str, bool]]:
    """(group key, split from the signature) of each incident with `signature`, newest first."""
    return [
        (str(g), grouping.detached(json.loads(d)))
        for g, d in conn.execute(
            "SELECT group_key, group_decisions FROM incidents WHERE signature = ? "
            f"AND {here(conn)} ORDER BY created_at DESC, incident_id DESC",
            (signature,),
        ).fetchall()
    ]


@translating
def signature_members(conn: sqlite3.Connection, signature: str) -> list[str]:
    """The ids of every incident with `signature`, whatever group it is in, oldest first."""
    return [
        str(i)
        for (i,) in conn.execute(
            "SELECT incident_id FROM incidents WHERE signature = ? "
            f"AND {here(conn)} ORDER BY created_at, incident_id",
            (signature,),
        ).fetchall()
    ]


@translating
def group_keys(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Every distinct (group key, signature) pair."""
    return [
        (str(g), str(s))
        for g, s in conn.execute(
            f"SELECT DISTINCT group_key, signature FROM incidents WHERE {here(conn)}"
        )
    ]


def _closed_ts(updated_at: str) -> float:
    try:
        return datetime.fromisoformat(updated_at).timestamp()
    except ValueError:
        return 0.0


def _resolved_entry(incident_id: str, updated_at: str) -> dict[str, Any]:
    # a closed incident's updated_at is its close (group decisions leave it alone)
    return {"incident_id": incident_id, "closed_at": updated_at,
            "closed_ts": _closed_ts(updated_at)}  # fmt: skip


@translating
def refresh_hints(root: Root, conn: sqlite3.Connection, group: str) -> None:
    """The group's open incident and latest resolved one, as the mirror sees them now."""
    current = grouping.read_open(root, group)
    open_ids = [
        str(r[0])
        for r in conn.execute(
            # an escalated incident is its group's too: a repeat is an occurrence of it
            "SELECT incident_id FROM incidents WHERE group_key = ? AND bucket IN ('inbox', "
            f"'escalated') AND {here(conn)} ORDER BY bucket = 'inbox' DESC, created_at DESC, "
            "incident_id DESC",
            (group,),
        ).fetchall()
    ]
    if current not in open_ids:
        grouping.write_open(root, group, open_ids[0] if open_ids else None)
    latest = conn.execute(
        "SELECT incident_id, updated_at FROM incidents WHERE group_key = ? AND bucket = "
        f"'resolved' AND {here(conn)} ORDER BY updated_at DESC, incident_id DESC LIMIT 1",
        (group,),
    ).fetchone()
    grouping.write_resolved(root, group, _resolved_entry(*latest) if latest else None)


@translating
def rebuild_hints(root: Root, conn: sqlite3.Connection) -> tuple[int, int]:
    """`reindex`: where merged signatures' captures go, each group's latest resolved
    incident and its regression counted highest, from the mirror just rebuilt from the bundles. Returns (aliases, resolved).
    """
    aliases = grouping.aliases_from(
        [
            (str(signature), str(group), json.loads(decisions))
            for signature, group, decisions in conn.execute(
                "SELECT signature, group_key, group_decisions FROM incidents "
                f"WHERE (group_key != signature OR group_decisions != '[]') AND {here(conn)} "
                "ORDER BY created_at, incident_id"
            ).fetchall()
        ]
    )
    resolved: dict[str, dict[str, Any]] = {}
    for incident_id, group, updated_at in conn.execute(
        "SELECT incident_id, group_key, updated_at FROM incidents WHERE bucket = 'resolved' "
        f"AND {here(conn)} ORDER BY updated_at, incident_id"
    ).fetchall():
        resolved[str(group)] = _resolved_entry(str(incident_id), str(updated_at))
    counted: dict[str, tuple[str, int]] = {}  # each group's regression counted highest
    for incident_id, group, count in conn.execute(
        "SELECT incident_id, group_key, regression_count FROM incidents "
        f"WHERE regression_count > 0 AND {here(conn)} "
        "ORDER BY regression_count, created_at, incident_id"
    ).fetchall():
        counted[str(group)] = (str(incident_id), int(count))
    _prune(root.state / grouping.REGRESSIONS_DIR, {signature_key(g) for g in counted})
    for group, (incident_id, count) in counted.items():
        grouping.write_regressions(root, group, incident_id, count)
    _prune(root.state / grouping.ALIAS_DIR, {signature_key(s) for s in aliases})
    _prune(root.state / grouping.RESOLVED_DIR, {signature_key(g) for g in resolved})
    for signature, (group, decision) in aliases.items():
        grouping.write_alias(root, signature, group, decision)
    for group, entry in resolved.items():
        grouping.write_resolved(root, group, entry)
    _rebuild_open(root, conn)
    return len(aliases), len(resolved)


def _rebuild_open(root: Root, conn: sqlite3.Connection) -> None:
    """A group's incident that captures fold into, where its hint was lost: its newest
    in the inbox, else its newest escalated one (a repeat is an occurrence of it)."""
    opened: dict[str, str] = {}
    for incident_id, group in conn.execute(
        "SELECT incident_id, group_key FROM incidents WHERE bucket IN ('inbox', 'escalated') "
        f"AND {here(conn)} ORDER BY bucket = 'inbox', created_at, incident_id"
    ).fetchall():
        opened[str(group)] = str(incident_id)  # the last wins: the inbox's newest
    for group, incident_id in opened.items():
        if grouping.read_open(root, group) is None:
            grouping.write_open(root, group, incident_id)


def _prune(folder: Path, keep: set[str]) -> None:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        if name not in keep and not name.startswith("."):
            (folder / name).unlink(missing_ok=True)
