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
from incidents.fsutil import atomic_write_text, ensure_dir
from incidents.layout import REVIEW, Root
from incidents.review.gather import Card, count_flaky, read_bucket
from incidents.review.render import page, requeue_command

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
    html = page(escalated, resolved, root=str(root.path), generated_at=clock.iso_now())
    return html, escalated, resolved


def write(root: Root) -> Review:
    """Build the page and write it to `<root>/error_review/index.html`."""
    started = time.monotonic()
    html, escalated, resolved = build(root)
    folder = root.path / REVIEW
    ensure_dir(folder)
    path = folder / "index.html"
    atomic_write_text(path, html)
    return Review(path, escalated, resolved, round(time.monotonic() - started, 3))
