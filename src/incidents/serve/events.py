"""An event of the mirror as a Server-Sent Event: its name, its id, its bytes.

Names: seed 003's for the events it names (`agent.waiting_for_input`, `agent.retrying`,
`agent.build_paused`), `incident.<type>` for the rest (`incident.captured`,
`incident.state_transition`, `incident.escalation`, ...), and `mirror.rebuilt` when the
mirror was rebuilt (its ids numbered again: reload what you show).

Ids are `GEN-N`: N the event's row id (commit order), GEN a short mark of the mirror's
last rebuild, so an id from before a rebuild is recognised as such.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from incidents.errors import UsageError
from incidents.mirror.feed import FeedEvent
from incidents.mirror.schema import EVENT_TYPES
from incidents.redact import redact_json

SEED_NAMES = {
    "waiting_for_input": "agent.waiting_for_input",
    "retrying": "agent.retrying",
    "build_paused": "agent.build_paused",
}
REBUILT = "mirror.rebuilt"


def sse_name(event_type: str) -> str:
    return SEED_NAMES.get(event_type, f"incident.{event_type}")


def all_names() -> list[str]:
    """Every name the stream can send (the dashboard listens to each)."""
    return sorted({sse_name(t) for t in EVENT_TYPES} | {REBUILT})


def generation_mark(generation: str) -> str:
    return hashlib.sha256(generation.encode()).hexdigest()[:8]


def event_id(mark: str, n: int) -> str:
    return f"{mark}-{n}"


def parse_id(text: str) -> tuple[str, int]:
    """(generation mark, row id) of a `Last-Event-ID`; UsageError when it is not one."""
    mark, _, n = text.strip().rpartition("-")
    if not mark or not (n.isascii() and n.isdigit()) or len(text) > 64:
        raise UsageError(f"Last-Event-ID {text[:64]!r}: not an id this server sent (GEN-N)")
    return mark, int(n)


@dataclass(frozen=True, slots=True)
class Encoded:
    """One event ready for every subscriber: its row id and its SSE bytes (encoded once)."""

    n: int
    data: bytes
    reset: bool = False  # a `mirror.rebuilt`: delivered whatever the subscriber's last id


def to_json(event: FeedEvent, mark: str) -> dict[str, Any]:
    return {
        "id": event_id(mark, event.id),
        "event": sse_name(event.event_type),
        "type": event.event_type,
        "ts": event.ts,
        "incident_id": event.incident_id,
        "payload": redact_json(event.payload),
    }


def _frame(name: str, ident: str, doc: dict[str, Any]) -> bytes:
    data = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return f"id: {ident}\nevent: {name}\ndata: {data}\n\n".encode()


def encode(event: FeedEvent, mark: str) -> Encoded:
    doc = to_json(event, mark)
    return Encoded(event.id, _frame(doc["event"], doc["id"], doc))


def rebuilt(mark: str, tail: int) -> Encoded:
    ident = event_id(mark, tail)
    doc = {"id": ident, "event": REBUILT, "type": REBUILT, "ts": None, "incident_id": None,
           "payload": {"reason": "the mirror was rebuilt: reload the state"}}  # fmt: skip
    return Encoded(tail, _frame(REBUILT, ident, doc), reset=True)
