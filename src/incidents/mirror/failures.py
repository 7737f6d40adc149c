"""The mirror's errors, shared by both backends (`db` for SQLite, `pg` for PostgreSQL)."""

from __future__ import annotations

from incidents.errors import IncidentsError

__all__ = ["DatabaseFailure", "MirrorError", "MirrorUnavailable"]


class MirrorError(IncidentsError):
    """The mirror database cannot be used (newer schema, not a local file, ...)."""


class DatabaseFailure(MirrorError):
    """A statement failed on PostgreSQL (what `sqlite3.Error` is for the SQLite backend):
    the driver's error, translated so that nothing outside `mirror.pg` imports psycopg."""


class MirrorUnavailable(DatabaseFailure):
    """The PostgreSQL server cannot be reached (down, restarting, refused, timed out)."""
