"""The project's errors as HTTP answers, in one table: a status and a JSON body that
carries the message the CLI would print (after its `incidents: `) and its exit code.

| error | CLI exit | HTTP |
|---|---|---|
| UsageError, InvalidId (bad input) | 2 | 400 |
| NotFound (unknown id) | 1 | 404 |
| AlreadyArchived, NotWaiting (not escalated), LockBusy, LeaseLost, Paused | 1 | 409 |
| InvalidDocument, UnsafeFile (a bundle that does not read) | 2 | 422 |
| DiskFailure, a full or read-only disk | 1 | 507 |
| MirrorError (the database cannot be used) | 2 | 503 |
| any other IncidentsError | its own | 500 |
"""

from __future__ import annotations

from typing import Any

from incidents.errors import (
    AlreadyArchived,
    DiskFailure,
    IncidentsError,
    InvalidDocument,
    LeaseLost,
    LockBusy,
    NotFound,
    NotWaiting,
    Paused,
    UnsafeFile,
    UsageError,
    disk_failure,
)
from incidents.mirror.db import MirrorError

STATUS: tuple[tuple[type[IncidentsError], int], ...] = (
    (UsageError, 400),
    (NotFound, 404),
    (AlreadyArchived, 409),
    (NotWaiting, 409),
    (LockBusy, 409),
    (LeaseLost, 409),
    (Paused, 409),
    (InvalidDocument, 422),
    (UnsafeFile, 422),
    (DiskFailure, 507),
    (MirrorError, 503),
)


class Refused(Exception):
    """A request refused before any service ran: no token (401), a foreign Origin or Host
    (403), a body over the cap (413), a body that is not JSON (415)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def status_of(exc: IncidentsError) -> int:
    if disk_failure(exc) is not None:
        return 507
    for kind, status in STATUS:
        if isinstance(exc, kind):
            return status
    return 500


def body(exc: IncidentsError) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) for a project error."""
    from incidents.redact import redact

    message = disk_failure(exc) or exc.message
    exit_code = 1 if disk_failure(exc) is not None else exc.exit_code
    doc = {"error": redact(message), "kind": type(exc).__name__, "exit_code": exit_code}
    return status_of(exc), doc
