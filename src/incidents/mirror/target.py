"""Which backend a root's mirror lives in: its SQLite file, or a PostgreSQL database.

`bind(root_dir, url, host)` records the choice a command made from its config (`[mirror]
url` and `host`) for the rest of the process; a root bound to nothing uses
`INCIDENTS_MIRROR_URL` when it is set (and `INCIDENTS_HOST`), else its SQLite file. The
mirror's `connect(db_path)` asks `target_of(db_path)`, so every caller that opens
`root.db_path` reaches the same backend without knowing which one it is.

Stdlib only, no I/O beyond reading the environment.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from incidents.errors import IncidentsError

__all__ = [
    "HOST_NAME",
    "ENV_HOST",
    "ENV_URL",
    "BadMirrorUrl",
    "Target",
    "bind",
    "default_host",
    "target_of",
    "unbind",
]

HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")  # what `[mirror] host` may be
ENV_URL = "INCIDENTS_MIRROR_URL"
ENV_HOST = "INCIDENTS_HOST"
SCHEMES = ("postgresql", "postgres")


class BadMirrorUrl(IncidentsError):
    """`[mirror] url` or INCIDENTS_MIRROR_URL is not a PostgreSQL URL."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"bad mirror url {_hidden(url)!r}: {reason}")
        self.reason = reason


# a password in the query (libpq takes `?password=...`, `sslpassword=...`): its value
_QUERY_SECRET = re.compile(r"([?&](?:ssl)?password=)[^&#]*", re.IGNORECASE)
# `scheme://user:password@`, for a URL urlsplit cannot read (an unclosed `[`)
_USERINFO_SECRET = re.compile(r"^([^:/?#]*://[^:/?#@]*:)[^@]*@")


def _hidden(url: str) -> str:
    """The URL without its passwords (it is shown in errors, doctor and degraded.json):
    the userinfo's and the query's. Never raises, whatever the text."""
    url = _QUERY_SECRET.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return _USERINFO_SECRET.sub(r"\1***@", url, count=1)
    if password is None:
        return url
    netloc = parts.netloc.replace(f":{password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def check_url(url: str) -> str:
    """`url` when it names a PostgreSQL database, else BadMirrorUrl."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise BadMirrorUrl(url, str(exc)) from exc
    if parts.scheme not in SCHEMES:
        raise BadMirrorUrl(url, "it must start with postgresql://")
    if any(c.isspace() for c in url):
        raise BadMirrorUrl(url, "it contains white space")
    return url


def default_host(shared: bool = True) -> str:
    """INCIDENTS_HOST, checked as `[mirror] host` is when the mirror is `shared` (a name
    every host's `status --all-hosts` prints in a column), else the hostname."""
    named = os.environ.get(ENV_HOST)
    if named and not HOST_NAME.fullmatch(named):
        if not shared:  # a root's own SQLite file: nobody else reads the name
            return os.uname().nodename or "localhost"
        raise IncidentsError(
            f"{ENV_HOST} {named!r}: use letters, digits, '.', '_' and '-' (at most 200)"
        )
    return named or os.uname().nodename or "localhost"  # gethostname, without socket


@dataclass(frozen=True)
class Target:
    """Where a root's mirror is: `url` None is its SQLite file."""

    url: str | None
    host: str
    root: str  # the root's folder, as this host names it
    timeout_s: float = 5.0  # how long to wait for the server before working without it
    leases: str = "file"  # "postgres": incident leases are rows of this mirror

    @property
    def shown(self) -> str:
        return _hidden(self.url) if self.url else "sqlite"


_BOUND: dict[str, Target] = {}


def _root_of(db_path: str | os.PathLike[str]) -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(db_path)))


def bind(
    root_dir: str | os.PathLike[str],
    url: str | None,
    host: str | None,
    timeout_s: float = 5.0,
    leases: str = "file",
) -> Target:
    """Use `url` (None: the environment's, else SQLite) for the root's mirror in this
    process, rows written as `host` (None: INCIDENTS_HOST, else the hostname); `leases`
    "postgres": the incident leases are rows of that mirror (it must be PostgreSQL)."""
    url = url or os.environ.get(ENV_URL) or None
    if leases == "postgres" and not url:
        raise BadMirrorUrl("(none)", 'watch.leases = "postgres" needs [mirror] url (PostgreSQL)')
    folder = os.path.abspath(root_dir)
    target = Target(
        check_url(url) if url else None,
        host or default_host(shared=bool(url)),
        folder,
        timeout_s,
        leases,
    )
    _BOUND[folder] = target
    return target


def unbind(root_dir: str | os.PathLike[str]) -> None:
    """Forget the root's binding (its mirror is the environment's, or SQLite, again)."""
    _BOUND.pop(os.path.abspath(root_dir), None)


def target_of(db_path: str | os.PathLike[str]) -> Target:
    """The backend of the mirror whose SQLite file would be `db_path`."""
    folder = _root_of(db_path)
    found = _BOUND.get(folder)
    if found is not None:
        return found
    url = os.environ.get(ENV_URL) or None
    return Target(check_url(url) if url else None, default_host(shared=bool(url)), folder)
