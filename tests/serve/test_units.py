"""The serve package's pure parts: the one table of HTTP statuses, event names and ids,
and a subscriber that falls behind."""

from __future__ import annotations

import asyncio
import errno

import pytest

from incidents import errors
from incidents.layout import Root
from incidents.mirror.db import MirrorError
from incidents.mirror.schema import EVENT_TYPES
from incidents.serve import events, problems
from incidents.serve.hub import CLOSE, QUEUE_MAX, Hub


@pytest.mark.parametrize(
    ("exc", "status", "exit_code"),
    [
        (errors.UsageError("bad"), 400, 2),
        (errors.InvalidId("a/b", "it contains a path separator"), 400, 2),
        (errors.NotFound("no incident"), 404, 1),
        (errors.AlreadyArchived("archived"), 409, 1),
        (errors.NotWaiting("not escalated"), 409, 1),
        (errors.LockBusy("busy"), 409, 1),
        (errors.LeaseLost("taken over"), 409, 1),
        (errors.Paused("paused since"), 409, 1),
        (errors.InvalidDocument("incident.json", "not JSON"), 422, 2),
        (errors.UnsafeFile("x", "a symlink"), 422, 2),
        (MirrorError("cannot open"), 503, 2),
        (errors.RootError("world-writable"), 500, 2),
    ],
)
def test_each_error_has_its_status_and_the_cli_s_exit_code(
    exc: errors.IncidentsError, status: int, exit_code: int
) -> None:
    got, body = problems.body(exc)
    assert got == status
    assert body == {"error": exc.message, "kind": type(exc).__name__, "exit_code": exit_code}


def test_a_full_disk_is_507_with_the_cli_s_words() -> None:
    full = errors.IncidentsError("write failed")
    full.__cause__ = OSError(errno.ENOSPC, "No space left on device", "/r/x")
    status, body = problems.body(full)
    assert status == 507 and body["exit_code"] == 1
    assert body["error"] == errors.disk_failure(full)


def test_event_names_and_ids() -> None:
    assert events.sse_name("waiting_for_input") == "agent.waiting_for_input"
    assert events.sse_name("retrying") == "agent.retrying"
    assert events.sse_name("build_paused") == "agent.build_paused"
    assert events.sse_name("captured") == "incident.captured"
    assert len(events.all_names()) == len(EVENT_TYPES) + 1  # and mirror.rebuilt
    assert events.parse_id(events.event_id("0a1b2c3d", 42)) == ("0a1b2c3d", 42)
    for bad in ("42", "x-", "-3", "a-b", "x" * 70 + "-1"):
        with pytest.raises(errors.UsageError):
            events.parse_id(bad)


def test_a_subscriber_that_falls_behind_is_closed(root: Root) -> None:
    async def scenario() -> tuple[bool, events.Encoded, int]:
        hub = Hub(root.ensure())
        slow, live = hub.subscribe(), hub.subscribe()
        try:
            for n in range(1, QUEUE_MAX + 2):
                hub._publish(events.Encoded(n, b"x"))
                if n <= QUEUE_MAX:
                    live.queue.get_nowait()  # this one keeps up
            last = None
            while not slow.queue.empty():
                last = slow.queue.get_nowait()
            assert last is not None
            return slow in hub.subscribers, last, len(hub.subscribers)
        finally:
            hub.reader.close()

    still, last, left = asyncio.run(scenario())
    assert not still and last is CLOSE and left == 1
