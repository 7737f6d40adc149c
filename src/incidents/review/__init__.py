"""`incidents review`: one self-contained HTML page of the escalated (and resolved) archive.

`build(root)` reads the bundles (`gather`) and renders the page (`render`); `write(root)`
puts it at `reports/error_review/index.html` atomically. No server, no network, no
external assets: the page is one file with inline CSS, JS and SVG.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from incidents import clock
from incidents.fixers.spend import recent
from incidents.fsutil import atomic_write_text, ensure_dir
from incidents.layout import REVIEW, Root
from incidents.review.gather import Card, count_flaky, read_bucket
from incidents.review.render import Elsewhere, page, requeue_command

__all__ = ["Review", "build", "requeue_command", "write"]


@dataclass(frozen=True)
class Review:
    path: Path
    escalated: list[Card]
    resolved: list[Card]
    seconds: float


def build(root: Root) -> tuple[str, list[Card], list[Card]]:
    escalated = read_bucket(root, "escalated")
    resolved = read_bucket(root, "resolved")
    count_flaky(escalated + resolved)
    html = page(
        escalated,
        resolved,
        root=str(root.path),
        generated_at=clock.iso_now(),
        elsewhere=elsewhere(root),
        spend=recent(root.state),
    )
    return html, escalated, resolved


def elsewhere(root: Root) -> list[Elsewhere] | None:
    """On a fleet's shared mirror: the open and escalated incidents other hosts hold,
    escalated first (None: the mirror is this root's own; [] too when it cannot be read,
    the page says nothing of other hosts then)."""
    from incidents import mirror
    from incidents.mirror.target import target_of

    mine = target_of(root.db_path)
    if mine.url is None:
        return None
    hosts: dict[str, str] = {}
    try:
        conn = mirror.connect(root.db_path)
        try:
            rows = mirror.list_incidents(
                conn, buckets=("escalated", "inbox"), all_hosts=True, hosts=hosts
            )
        finally:
            conn.close()
    except mirror.MirrorError:
        return []
    found = [(hosts[r.incident_id], r) for r in rows if hosts[r.incident_id] != mine.host]
    return sorted(found, key=lambda e: (e[1].bucket != "escalated", e[0], e[1].created_at))


def write(root: Root) -> Review:
    """Build the page and write it to `<root>/error_review/index.html`."""
    started = time.monotonic()
    html, escalated, resolved = build(root)
    folder = root.path / REVIEW
    ensure_dir(folder)
    path = folder / "index.html"
    atomic_write_text(path, html)
    return Review(path, escalated, resolved, round(time.monotonic() - started, 3))
