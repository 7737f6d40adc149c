"""Time: the one source of "now" and the one textual form of a timestamp.

Stdlib only and `datetime`-free at import (capture imports it): seed 004's form is
`2026-02-17T03:00:00+00:00`, UTC; records that are ordered by their time carry
microseconds (`2026-02-17T03:00:00.123456+00:00`, which sorts after the same second
written without them).
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from datetime import datetime


def utc_now() -> datetime:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def iso(when: datetime) -> str:
    return when.isoformat()


def iso_at(ts: float) -> str:
    """A POSIX time in seed 004's form, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts))


def iso_now() -> str:
    return iso_at(time.time())


def iso_precise(ts: float | None = None) -> str:
    """A POSIX time (now by default) with its microseconds, for records ordered by it."""
    t = time.time() if ts is None else ts
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t))}.{int(t % 1 * 1e6):06d}+00:00"


def normalized(value: object) -> str | None:
    """A stored ISO timestamp in UTC (`+00:00`, comparable as text); None for anything
    that is not an aware timestamp."""
    from datetime import UTC, datetime

    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when.astimezone(UTC).isoformat() if when.tzinfo else None
