"""One exception hierarchy for expected failures.

The CLI turns every `IncidentsError` into one clear line on stderr and its exit code;
anything else is a bug and gets a crash log instead of a traceback wall.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off the capture path (import cost)
if TYPE_CHECKING:
    from pydantic import ValidationError


class IncidentsError(Exception):
    """Base of every expected failure. `exit_code` is what the CLI exits with."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(IncidentsError):
    """Bad input on the command line: a missing option, a bad value."""


class InvalidId(UsageError):
    def __init__(self, incident_id: str, reason: str) -> None:
        super().__init__(f"invalid incident id {incident_id!r}: {reason}")
        self.incident_id = incident_id


class NotFound(IncidentsError):
    exit_code = 1


class AlreadyArchived(IncidentsError):
    exit_code = 1


class RootError(IncidentsError):
    """The reports root is unusable (a file, world-writable, wrong filesystem)."""


class ConfigError(IncidentsError):
    def __init__(self, file: str, key: str, reason: str) -> None:
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {reason}")
        self.file, self.key, self.reason = file, key, reason


class InvalidDocument(IncidentsError):
    """A JSON document that does not parse or validate; names the file and field."""

    def __init__(self, path: str, reason: str, field: str = "") -> None:
        where = f"{path}: {field}" if field else path
        super().__init__(f"{where}: {reason}")
        self.path, self.field, self.reason = path, field, reason


class UnsafeFile(IncidentsError):
    """A file that is a symlink, FIFO, device, hard link or over its size cap."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


class NotWaiting(IncidentsError):
    """The incident is not waiting for an agent (or not for this one), or not escalated."""

    exit_code = 1


class LockBusy(IncidentsError):
    exit_code = 1


class LeaseLost(IncidentsError):
    """A commit from a process whose lease was taken over (fencing)."""

    exit_code = 1


class Paused(IncidentsError):
    exit_code = 1


def disk_failure(exc: BaseException) -> str | None:
    """The one line that tells a user a write failed because the disk is full, over quota
    or read-only (naming the path and the cause), or None when `exc` is something else.
    Looks through the exceptions `exc` was raised from (a wrapped OSError) and SQLite's
    own words for the same causes."""
    import errno

    disk = {errno.ENOSPC, errno.EROFS, getattr(errno, "EDQUOT", 122)}
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in disk:
            name = errno.errorcode.get(current.errno or 0, "")
            where = current.filename if current.filename is not None else "a file"
            return f"cannot write {where}: {current.strerror} ({name})"
        if type(current).__name__ == "OperationalError":  # sqlite3, not imported here
            text = str(current)
            if "disk is full" in text or "readonly database" in text:
                return f"cannot write the mirror database: {text}"
        current = current.__cause__ or current.__context__
    return None


class DiskFailure(IncidentsError):
    """A write failed because the disk is full, over quota or read-only: one line, exit 1."""

    exit_code = 1


def disk_failure_at(exc: BaseException, path: str) -> DiskFailure | None:
    """`exc` told in `disk_failure`'s words when statvfs of `path`'s folder says that
    filesystem is read-only or full, for failures that carry no errno (SQLite says "disk
    I/O error" on ENOSPC and "unable to open database file" on EROFS); None when `exc`
    already says so itself (the CLI tells it) or the filesystem is fine."""
    import errno
    import os

    if disk_failure(exc) is not None:
        return None
    try:
        st = os.statvfs(os.path.dirname(path) or ".")
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        code = errno.EROFS
    elif st.f_bavail == 0 or (st.f_files and st.f_favail == 0):  # no block, or no inode
        code = errno.ENOSPC
    else:
        return None
    said = exc.__cause__ if exc.__cause__ is not None else exc
    cause = OSError(code, os.strerror(code), path)
    failure = DiskFailure(f"{disk_failure(cause)}, SQLite said: {said}")
    failure.__cause__ = cause
    return failure


def explain_validation(
    exc: ValidationError,
    *,
    unknown: str = "unknown field",
    show_input: bool = False,
    others: int = 0,
) -> tuple[str, str]:
    """(field, reason) of a pydantic ValidationError, for an error that names its file.

    The field is the first error's dotted location ("" for the document itself); the
    reason is pydantic's message, or `unknown` for a key the model does not have.
    `show_input` adds the rejected value (not a whole table); `others` lists up to that
    many further errors after it."""
    errors = exc.errors()
    first = errors[0]
    field = _dotted(first["loc"])
    reason = first["msg"]
    if first["type"] == "extra_forbidden":
        reason = unknown
    elif show_input and "input" in first and not isinstance(first["input"], dict):
        reason = f"{reason} (got {first['input']!r})"
    rest = [
        f"{_dotted(e['loc'])}: {e['msg']}" if e["loc"] else e["msg"] for e in errors[1 : 1 + others]
    ]
    if rest:
        more = len(errors) - 1
        reason += f" (and {more} more: {'; '.join(rest)}{'; ...' if more > others else ''})"
    return field, reason


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc)
