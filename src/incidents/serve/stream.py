"""`GET /api/events`: every event of the mirror as it is committed, as Server-Sent Events.

A client that sends `Last-Event-ID` (a browser's EventSource does on every reconnect; a
first connection may give `?last_event_id=`) gets first every event after that id still
in the mirror, then the live ones: it subscribes before it reads the backlog, and skips
what it has sent, so nothing falls between the two and nothing comes twice. Without an
id it starts at the present. An id from before a rebuild of the mirror (or past its last
event: the last events were deleted with an incident set aside) gets `mirror.rebuilt`
(reload what you show), then the live events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from incidents.mirror import feed
from incidents.serve import events
from incidents.serve.hub import CLOSE, Hub, Subscriber

KEEPALIVE_S = 15.0
BACKLOG_BATCH = 1000


def _last_id(request: Request) -> tuple[str, int] | None:
    text = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
    return events.parse_id(text) if text else None


async def stream(request: Request) -> StreamingResponse:
    hub: Hub = request.app.state.hub
    last = _last_id(request)  # a malformed id is refused (400) before the stream starts
    sub = hub.subscribe()
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(
        _frames(hub, sub, last), media_type="text/event-stream", headers=headers
    )


async def _frames(hub: Hub, sub: Subscriber, last: tuple[str, int] | None) -> AsyncIterator[bytes]:
    try:
        yield b"retry: 2000\n\n"
        if last is None:
            sent = sub.start
        elif last[0] != sub.mark or last[1] > sub.start:  # numbered again, or withdrawn
            item = events.rebuilt(sub.mark, sub.start)
            yield item.data
            sent = sub.start
        else:
            sent = last[1]
            async for item in _backlog(hub, sent):
                yield item.data
                sent = item.n
        while True:
            try:
                item = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_S)
            except TimeoutError:
                yield b": keep-alive\n\n"
                continue
            if item is CLOSE:
                return
            if item.reset or item.n > sent:
                yield item.data
                sent = item.n
    finally:
        hub.unsubscribe(sub)


async def _backlog(hub: Hub, after: int) -> AsyncIterator[events.Encoded]:
    mark = hub.mark
    while True:
        batch: list[Any] = await hub.reader.run(feed.events_after, after, BACKLOG_BATCH)
        for event in batch:
            yield events.encode(event, mark)
        if len(batch) < BACKLOG_BATCH:
            return
        after = batch[-1].id
