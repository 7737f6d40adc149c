"""Time: the one source of "now" and the one textual form of a timestamp.

Stdlib only and `datetime`-free at import (capture imports it): seed 004's form is
`2026-02-17T03:00:00+00:00`, UTC.
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
    """A POSIX time in seed 004's form, whole seconds (datetime stays off this path)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts))


def iso_now() -> str:
    return iso_at(time.time())


def iso_at_precise(ts: float) -> str:
    """A POSIX time with its microseconds, for records that are ordered by it."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat()
